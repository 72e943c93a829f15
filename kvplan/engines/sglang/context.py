"""SGLang's longest --context-length: the length it derives from config.json, and whether its override variable lets
a longer one start. Pure.

SGLang refuses a --context-length above the derived length ("User-specified context_length (N) is greater than the
derived context_length (M) ... set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", configs/model_config.py
ModelConfig, 0.3.5+) unless the variable allows it; how each release reads the variable is rule R10 of
kvplan/engines/sglang/releases.py. The derived length (utils/hf_transformers/common.py get_context_length, 0.5.23;
hf_transformers_utils.py before, the same keys in the same order from 0.3.6) is the first of CONTEXT_KEYS the text
config has, times rope_scaling's factor unless rope_scaling names original_max_position_embeddings or is Llama 3's;
2048 when none is given.
"""

from __future__ import annotations

from typing import Mapping

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.model.config_keys import text_config
from kvplan.engines.sglang import releases

ALLOW_ENV = releases.ALLOW_ENV
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def derived_length(raw: Mapping, *, where: str) -> int:
    """The context length SGLang derives from a config.json mapping."""
    cfg = text_config(raw)
    rope = cfg.get("rope_scaling")
    factor = 1
    if isinstance(rope, Mapping):
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
        if not _number(factor):
            raise InputError(f"rope_scaling.factor {factor!r} is not a number", where=f"{where}: rope_scaling")
    for key in CONTEXT_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if not _number(value):
            raise InputError(f"{key} {value!r} is not a number", where=f"{where}: {key}")
        return int(factor * value)
    return 2048


def allows_longer(rule: str, value: str | None, *, outside: bool, where: str) -> bool | None:
    """Whether SGLang starts with a --context-length above the derived length, under release rule `rule` (R10) and
    the variable's `value` (None: not set). None when `outside` (the file takes the value from its environment)
    and the rule turns on it."""
    if rule == "no_check":
        return True
    if outside:
        return None
    if value is None:
        return rule == "true_1_default_on"
    text = value.lower()
    if rule == "set":
        return value != ""
    if rule in ("true_1", "true_1_default_on"):
        return text in ("true", "1")
    if rule == "env_bool":  # an invalid value warns and falls back to the default, False (environ.py EnvField.get)
        return text in ("true", "1", "yes", "y")
    if text in ("true", "1"):  # not_read: every reading on either side allows these
        return True
    raise UnsupportedError(f"{ALLOW_ENV}={value!r}: how this SGLang release reads it was not read", where=where,
                           hint="set it to 1, or judge the file as another release")


def check_length(seq: int, spec, raw_config: Mapping | None, *, version: str | None, env: Mapping[str, str | None],
                 where: str) -> str | None:
    """SGLang's check of a --context-length `seq` against the length it derives (from `raw_config`, the model's
    config.json, else the spec's maximum context): InputError where it refuses to start, UnsupportedError where that
    turns on the variable set outside the file (`env` maps it to None), else a note when the variable lets it start
    (None when the length is within the model's)."""
    limit = derived_length(raw_config, where=where) if raw_config is not None else spec.max_context
    if limit is None or seq <= limit:
        return None
    rules = releases.release(version)
    value = env.get(ALLOW_ENV)
    allowed = allows_longer(rules.longer_context, value, outside=ALLOW_ENV in env and value is None, where=where)
    said = f"--context-length {seq:,} is above the model's derived context length of {limit:,} tokens"
    if allowed is None:
        raise UnsupportedError(f"{said}: SGLang {rules.version} starts only if {ALLOW_ENV}, set outside the file, "
                               "allows it", where=where, hint=f"set {ALLOW_ENV} in the file to say which")
    if not allowed:
        raise InputError(f"{said}: SGLang {rules.version} refuses to start (\"To allow overriding this maximum, set the "
                         f"env var {ALLOW_ENV}=1\")", where=where,
                         hint="lower it, or extend the model's context with RoPE scaling as its card gives it")
    return f"{said}: {ALLOW_ENV} lets SGLang {rules.version} start with it (it warns of wrong outputs past it)"
