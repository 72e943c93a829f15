"""Which dtypes and weight formats vLLM runs on each NVIDIA GPU generation, by release. Pure.

Read from the wheels of 0.10.0, 0.12.0, 0.13.0 ... 0.33.0 (`pip download --no-deps vllm==X`):

- Activations in bfloat16 need SM 8.0: the worker refuses at start ("Bfloat16 is only supported on GPUs with compute
  capability of at least 8.0", v1/worker/gpu_worker.py _check_if_gpu_supports_dtype in 0.10, then
  platforms/cuda.py check_if_supports_dtype, called from gpu_worker.py init_device). `--dtype auto` on a bfloat16
  checkpoint falls back to float16 there (config/model.py _resolve_auto_dtype: CudaPlatform.supported_dtypes is
  [float16, float32] below SM 8.0): the same bytes, so it starts. For the model types float16 is unsafe for
  (_FLOAT16_NOT_SUPPORTED_MODELS: gemma2, gemma3, gemma3_text, glm4, and plamo2 until 0.26) the fallback is float32,
  which doubles weights and KV cache: not modelled.
- A quantization method refuses GPUs below its get_min_capability (config/vllm.py _get_quantization_config: "The
  quantization method X is not supported for the current GPU"): fp8 (a checkpoint's, or --quantization fp8 on a
  16-bit one) SM 8.0 until 0.13, SM 7.5 from 0.14 (Marlin's weight-only path); awq SM 7.5 (awq.py, then
  auto_awq.py); gptq SM 6.0 (gptq.py, then auto_gptq.py); mxfp4 SM 8.0; ModelOpt FP8 SM 8.9 until 0.26, SM 8.0 from
  0.27 (read in 0.27.1; 0.27.0 is held to 8.9); ModelOpt NVFP4 SM 8.0 until 0.13, SM 7.5 from 0.14.
  compressed-tensors passes SM 7.0 itself, but each of its schemes has its own floor (7.0 ... 9.0, and fp8 falls
  back to a Marlin scheme below 8.9): below SM 8.0 it is not judged.
- An fp8 KV cache below SM 8.0: from 0.24 FlashAttention (SM 8.0+) and FlashInfer (raised to SM 8.0) leave only the
  Triton backend, which refuses it ("FP8 KV cache is not supported by the Triton attention backend ... requires
  SM89+", v1/attention/backends/triton_attn.py TritonAttentionImpl) and refuses a bfloat16 KV cache below SM 8.0.
  From 0.12 (the first read) to 0.23 FlashInfer (SM 7.5+) took fp8 on a T4; on a V100 only Triton's kernels remain, which were not read.
  From SM 8.0 FlashInfer takes an fp8 KV cache in every release read, so it starts.
MLA models pick other backends (TRITON_MLA below Hopper): their KV rules here were not read and are not applied.
"""

from __future__ import annotations

from kvplan.core.errors import UnsupportedError
from kvplan.engines.vllm import releases

# model types (and their architectures) whose --dtype auto falls back to float32, not float16, below SM 8.0
FLOAT16_UNSAFE = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4", "plamo2", "Gemma2ForCausalLM",
                            "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Glm4ForCausalLM",
                            "Plamo2ForCausalLM"})
# quantization method -> ((first release, lowest SM as major * 10 + minor), ...), newest first
MIN_CAPABILITY = {
    "fp8": (("0.14.0", 75), ("0.10.0", 80)),
    "awq": (("0.10.0", 75),),
    "gptq": (("0.10.0", 60),),
    "mxfp4": (("0.10.0", 80),),
    "modelopt-fp8": (("0.27.1", 80), ("0.10.0", 89)),
    "modelopt-nvfp4": (("0.14.0", 75), ("0.10.0", 80)),
}
TRITON_ONLY_FROM = "0.24.0"  # FlashInfer's floor rises to SM 8.0: below it only Triton attention takes a KV cache
FLASHINFER_SM75_FROM = "0.12.0"  # the first release read whose FlashInfer backend takes SM 7.5 (until 0.23)


def sm(capability: str) -> int:
    """"7.5" -> 75 (vLLM's DeviceCapability.to_int)."""
    major, _, minor = capability.partition(".")
    return int(major) * 10 + int(minor or 0)


def _floor(method: str, version: str) -> int | None:
    for first, floor in MIN_CAPABILITY.get(method, ()):
        if releases.at_least(version, first):
            return floor
    return None


def _shown(value: int) -> str:
    return f"{value // 10}.{value % 10}"


def quant_method(checkpoint_method: str | None, weight_dtype: str | None, online: str | None) -> str | None:
    """The vLLM quantization config that loads the weights: the checkpoint's own method (ModelOpt by its algorithm),
    else --quantization fp8 on a 16-bit checkpoint (`online`: the weight format it was given as), else None."""
    method = (checkpoint_method or "").lower()
    if method == "modelopt":
        return "modelopt-fp8" if (weight_dtype or "").startswith("fp8") else "modelopt-nvfp4"
    if method:
        return method
    if online is not None and online.startswith("fp8"):
        return "fp8"
    return None


def refusal(*, version: str, capability: str, explicit_dtype: str | None, checkpoint_dtype: str,
            architecture: str | None, method: str | None, kv_spelled: str, mla: bool) -> str | None:
    """Why vLLM `version` does not start this launch on a GPU of CUDA SM `capability` ("7.5"), in its words; None
    when it does. UnsupportedError where the rule was not read (exit 3). `explicit_dtype`: the float --dtype given
    (bf16, fp16, fp32), None for auto; `checkpoint_dtype`: the config's torch_dtype as kvplan names it; `method`:
    quant_method()'s answer; `kv_spelled`: --kv-cache-dtype as written."""
    here = sm(capability)
    if explicit_dtype == "bf16" and here < 80:
        return (f"vLLM refuses to start: bfloat16 needs a GPU of compute capability 8.0 or newer, this one is "
                f"{capability} (\"Bfloat16 is only supported on GPUs with compute capability of at least 8.0\"; "
                "--dtype half runs it)")
    if explicit_dtype is None and here < 80 and checkpoint_dtype in ("bf16", "fp32") and architecture in FLOAT16_UNSAFE:
        raise UnsupportedError(f"vLLM {version} runs {architecture} in float32 on a GPU of compute capability "
                               f"{capability} (--dtype auto: no bfloat16 there, float16 is unsafe for the model), "
                               "twice the weights and KV cache; that is not modelled", where="--gpu",
                               hint="judge it on a GPU of compute capability 8.0 or newer")
    if method == "compressed-tensors" and here < 80:
        raise UnsupportedError(f"a compressed-tensors checkpoint on a GPU of compute capability {capability}: each "
                               "scheme has its own GPU floor in vLLM (7.0 to 9.0), which kvplan does not match",
                               where="--gpu", hint="judge it on a GPU of compute capability 8.0 or newer")
    floor = _floor(method, version) if method else None
    if floor is not None and here < floor:
        name = {"modelopt-fp8": "modelopt (FP8)", "modelopt-nvfp4": "modelopt_fp4"}.get(method, method)
        return (f"vLLM {version} refuses to start: quantization {name} needs a GPU of compute capability "
                f"{_shown(floor)} or newer, this one is {capability} (\"The quantization method {name} is not "
                "supported for the current GPU\")")
    kv = kv_spelled.strip().lower()
    if mla or here >= 80 or not (kv.startswith("fp8") or kv in ("bfloat16", "bf16")):
        return None
    if releases.at_least(version, TRITON_ONLY_FROM):
        wants = "SM 8.9" if kv.startswith("fp8") else "SM 8.0"
        return (f"vLLM {version} refuses to start: below compute capability 8.0 only its Triton attention backend "
                f"takes the KV cache, and it refuses --kv-cache-dtype {kv_spelled} there (needs {wants}); this GPU is "
                f"{capability} (--kv-cache-dtype float16 runs it)")
    if kv.startswith("fp8") and here >= 75 and releases.at_least(version, FLASHINFER_SM75_FROM):
        return None  # FlashInfer (SM 7.5+ until 0.23) takes an fp8 KV cache
    raise UnsupportedError(f"--kv-cache-dtype {kv_spelled} on vLLM {version} and a GPU of compute capability "
                           f"{capability}: which attention backend takes it there was not read", where="--gpu",
                           hint="judge it on vLLM 0.24 or newer, or with --kv-dtype fp16")
