import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.errors import InputError
from kvplan.core.units import format_bytes, format_tokens, parse_fraction, parse_size, parse_tokens


@pytest.mark.parametrize("text,tokens", [
    ("8192", 8192), ("8k", 8000), ("8K", 8192), ("128K", 131072), ("1M", 1048576), ("1m", 1000000),
    ("1.5K", 1536), ("32_768", 32768), (4096, 4096),
])
def test_tokens_read_as_vllm_reads_max_model_len(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["-5", "0", "abc", "8KB", "1.3k2", "", "0.5", True, "1.0001K"])
def test_bad_token_counts_are_refused(text):
    with pytest.raises(InputError):
        parse_tokens(text)


@pytest.mark.parametrize("text,size", [
    ("80GiB", 80 * 2**30), ("80GB", 80 * 10**9), ("81559MiB", 81559 * 2**20), ("1024", 1024),
    ("1.5KiB", 1536), ("0.5 GiB", 2**29), ("2TB", 2 * 10**12),
])
def test_sizes_keep_binary_and_decimal_apart(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["80G", "-1GiB", "0", "lots", "1e9", "80gigs", "0.9", 0.9])
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
    for bad in ("0", "1.5", "-0.1", "x", "inf", "-inf", "nan", "1e999"):
        with pytest.raises(InputError):
            parse_fraction(bad, what="x")


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
