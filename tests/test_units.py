import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.errors import InputError
from kvplan.core.units import format_bytes, format_tokens, parse_fraction, parse_size, parse_tokens


# vLLM 0.33.0 vllm/utils/argparse_utils.py human_readable_int: `(\d+(?:\.\d+)?)([kKmMgGtT])`; lowercase decimal
# (int(float(number) * 10**3k), decimals allowed), uppercase binary (int(number) * 2**10k, decimals refused);
# otherwise int(value)
@pytest.mark.parametrize("text,tokens", [
    ("8192", 8192), ("8k", 8000), ("8K", 8192), ("128K", 131072), ("1M", 1048576), ("1m", 1000000),
    ("1.5k", 1500), ("25.6k", 25600), ("1.0001k", 1000), ("1t", 10**12), ("1T", 2**40), ("32_768", 32768),
    (" 4096 ", 4096), (4096, 4096),
])
def test_tokens_read_as_vllm_reads_max_model_len(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["-5", "0", "abc", "8KB", "1.3k2", "", "0.5", True, "1.0001K", "8192.0", "1e4",
                                  "0.0001k"])
def test_bad_token_counts_are_refused(text):
    with pytest.raises(InputError):
        parse_tokens(text)


def test_decimals_with_a_binary_suffix_are_refused_as_vllm_refuses_them():
    # vLLM: "Decimals are not allowed with binary suffixes like K. Did you mean to use 1.5k instead?"
    with pytest.raises(InputError, match="binary suffix K") as err:
        parse_tokens("1.5K", what="--seq")
    assert "1.5k" in err.value.one_line()


@pytest.mark.parametrize("text,fragment", [
    ("4096,8192", "comma"),  # was read as 40,968,192 tokens
    ("8,192", "comma"),
    ("８１９２", "ASCII"),  # full-width digits: int() reads them, kvplan does not
    ("٨١٩٢", "ASCII"),  # Arabic-Indic digits
    ("1" * 5000, "too long"),  # past Python's 4,300-digit int() limit
    ("1__0", "not a token count"),
])
def test_numbers_that_int_would_misread_are_refused(text, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_tokens(text, what="--seq")
    with pytest.raises(InputError):
        parse_size(text, what="--gpu-mem")


@pytest.mark.parametrize("text,size", [
    ("80GiB", 80 * 2**30), ("80GB", 80 * 10**9), ("81559MiB", 81559 * 2**20), ("85899345920", 80 * 2**30),
    ("1.5KiB", 1536), ("0.5 GiB", 2**29), ("2TB", 2 * 10**12),
])
def test_sizes_keep_binary_and_decimal_apart(text, size):
    # a bare number is bytes only from 1 MiB up: below, it is a unit left out (`--gpu-mem 80`), refused
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["80G", "-1GiB", "0", "lots", "1e9", "80gigs", "0.9", 0.9, "8,0GiB", "80 GiB GiB", "８0GiB", 80.5])
def test_bad_sizes_are_refused(text):
    with pytest.raises(InputError):
        parse_size(text)


def test_ambiguous_g_suffix_explains_itself():
    with pytest.raises(InputError) as err:
        parse_size("80G")
    assert "GiB" in err.value.one_line() and "GB" in err.value.one_line()


def test_fractions_are_exact():
    from fractions import Fraction

    assert parse_fraction("0.9", what="x") == Fraction(9, 10)
    assert parse_fraction("92%", what="x") == Fraction(23, 25)
    assert parse_fraction(0.9, what="x") == Fraction(9, 10)  # a YAML float, read as written
    assert parse_fraction("9e-1", what="x") == Fraction(9, 10)
    for bad in ("0", "1.5", "-0.1", "x", "inf", "-inf", "nan", "1e999", "0,9", "０.9", float("nan"), True):
        with pytest.raises(InputError):
            parse_fraction(bad, what="x")


def test_huge_exponents_are_refused_without_expanding_them():
    # Fraction(Decimal('1e999999999')) would build a billion-digit integer: minutes of CPU. Refused from the text.
    # Hand arithmetic: a 3-digit exponent is the most a number kvplan reads may carry.
    from fractions import Fraction

    for text in ("1e999999999", "1e-999999999", "0.9e1000", "90e9999%"):
        with pytest.raises(InputError, match="not a number"):
            parse_fraction(text, what="--gpu-util")
    assert parse_fraction("9e-999", what="x", low=Fraction(0)) == Fraction(9, 10**999)


def test_an_integer_too_long_to_print_is_shown_by_its_digit_count():
    from kvplan.core.units import parse_int, shown

    huge = 10**5000  # str() of it raises ValueError (Python's 4,300-digit limit)
    assert shown(huge) == "an integer of more than 4,000 digits"
    assert shown(10**50) == "an integer of 51 digits"
    with pytest.raises(InputError, match="digits is implausibly large"):
        parse_int(huge, what="tensor_parallel_size", maximum=4096)


@given(st.integers(min_value=1, max_value=2**40))
def test_token_round_trip(n):
    assert parse_tokens(str(n)) == n
    if n % 1024 == 0:
        assert parse_tokens(f"{n // 1024}K") == n


def test_formatting_names_units():
    assert format_bytes(2 * 2**30) == "2.00 GiB"
    assert format_bytes(2 * 10**9, binary=False) == "2.00 GB"
    assert format_bytes(512) == "512 B"
    assert format_tokens(131072) == "131,072 (128K)"
    assert format_tokens(1000) == "1,000"
