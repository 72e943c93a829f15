"""--quantization on a checkpoint that is already quantized: which values vLLM takes for each checkpoint method, by
release and GPU. Pure.

vLLM checks the value against the checkpoint's quant_method after letting each method's
override_quantization_method claim it (vllm/config/model.py ModelConfig._verify_quantization: "Quantization method
specified in the model config (X) does not match the quantization method specified in the `quantization` argument
(Y)"). Read from the wheels of 0.10.2 ... 0.33.0 (model_executor/layers/quantization/):

- AWQ: "awq" always. "awq_marlin" / "marlin": until 0.23 AWQMarlinConfig claims them only for a Marlin-compatible
  checkpoint (is_awq_marlin_compatible: 4 bits, zero_point given, group size -1/32/64/128) on a GPU Marlin runs on
  (utils/marlin_utils.py query_marlin_supported_quant_types: SM 8.0+ until 0.13, SM 7.5+ from 0.14); from 0.24
  AutoAWQConfig (auto_awq.py) takes awq, awq_marlin, auto_awq and marlin on any GPU.
- GPTQ: "gptq" always. "gptq_marlin" / "marlin": until 0.21 GPTQMarlinConfig (is_gptq_marlin_compatible: 4 or 8
  bits, sym, desc_act given, the same group sizes and GPUs); from 0.22 AutoGPTQConfig (auto_gptq.py) takes gptq,
  gptq_marlin, auto_gptq and marlin on any GPU.
- Any other method: its own name only.

The Marlin kernels repack the checkpoint's tensors in place (awq_marlin_repack / gptq_marlin_repack keep the int32
count; scales are permuted), so the weights are the checkpoint's bytes; GPTQ-Marlin frees a symmetric checkpoint's
qzeros and, without act-order, its g_idx (under 1% of the int4 weights).
"""

from __future__ import annotations

from typing import Any, Mapping

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines.vllm import releases

MARLIN = ("awq_marlin", "gptq_marlin", "marlin")
# checkpoint method -> the --quantization values that name it, and the release whose Auto* config takes them all
_FAMILIES = {"awq": (("awq", "awq_marlin", "marlin", "auto_awq"), "0.24.0"),
             "gptq": (("gptq", "gptq_marlin", "marlin", "auto_gptq"), "0.22.0")}
_GROUP_SIZES = (-1, 32, 64, 128)  # utils/marlin_utils.py MARLIN_SUPPORTED_GROUP_SIZES


def accepts(checkpoint: str, requested: str) -> bool:
    """Whether `requested` names the checkpoint's method or one of its kernels (vLLM may still refuse it)."""
    return requested == checkpoint or requested in _FAMILIES.get(checkpoint, ((), None))[0]


def _marlin_compatible(checkpoint: str, quant: Mapping[str, Any]) -> str | None:
    """Why the checkpoint is not Marlin-compatible (None: it is)."""
    bits, group = quant.get("bits"), quant.get("group_size")
    if group not in _GROUP_SIZES:
        return f"group size {group!r} (Marlin takes -1, 32, 64, 128)"
    if checkpoint == "awq":
        if bits != 4 or quant.get("zero_point") is None:
            return f"{bits}-bit AWQ with zero_point {quant.get('zero_point')!r} (AWQ-Marlin takes 4 bits with zero points)"
        return None
    if bits not in (4, 8) or quant.get("sym") is not True or quant.get("desc_act") is None:
        return f"{bits}-bit GPTQ, sym {quant.get('sym')!r} (GPTQ-Marlin takes symmetric 4 or 8 bits)"
    return None


def check(checkpoint: str, requested: str, quant: Mapping[str, Any] | None, *, version: str, capability: str | None,
          where: str) -> str | None:
    """InputError where vLLM refuses the pair; else a note on the kernel (None when there is nothing to say).
    `capability`: the GPU's CUDA SM version ("8.6"), None when not known (the GPU rule is then not applied)."""
    if requested == checkpoint or requested not in MARLIN:
        return None
    family_from = _FAMILIES[checkpoint][1]
    if releases.at_least(version, family_from):
        return (f"--quantization {requested} on a {checkpoint.upper()} checkpoint: vLLM {version}'s Auto"
                f"{checkpoint.upper()} config picks the kernel; the weights are the checkpoint's bytes")
    if quant is None:
        raise UnsupportedError(f"--quantization {requested} on vLLM {version}: whether it takes Marlin for this "
                               f"{checkpoint.upper()} checkpoint turns on its quantization_config, which was not read",
                               where=where, hint="give the model as a folder or config.json")
    why = _marlin_compatible(checkpoint, quant)
    if why is None and capability is not None:
        floor = "7.5" if releases.at_least(version, "0.14.0") else "8.0"
        if tuple(int(x) for x in capability.split(".")) < tuple(int(x) for x in floor.split(".")):
            why = f"a GPU of SM {capability} (Marlin needs SM {floor} or newer in vLLM {version})"
    if why is not None:
        raise InputError(f"vLLM {version} refuses --quantization {requested} for this {checkpoint.upper()} checkpoint: "
                         f"{why}, so the checkpoint's method ({checkpoint}) does not match", where=where,
                         hint=f"give --quantization {checkpoint}, or leave it out")
    return (f"--quantization {requested}: Marlin repacks the {checkpoint.upper()} weights in place (the checkpoint's "
            "bytes)")
