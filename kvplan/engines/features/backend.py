"""The attention backend vLLM picks on a GPU, and the KV block size it brings. Pure.

vLLM 0.33.0 (platforms/cuda.py _get_backend_priorities: the first backend of the list that accepts the model,
dtype and KV dtype; platforms/interface.py Platform._preferred_block_size_for_backends: the block size is 16 when
every backend of the model accepts 16, else the smallest size they share, v1/attention/backend.py
AttentionBackend.get_preferred_block_size). vLLM 0.19.0 picks by the first attention layer's backend with the same
preference rule (Platform.update_block_size_for_backend) and the same priority lists for these GPUs.

- Non-MLA attention: FLASH_ATTN (kernel blocks MultipleOf(16)) first, FLASHINFER ([16, 32, 64]) first on SM 10.x:
  16 either way;
- MLA on SM 9.x (Hopper): FLASH_ATTN_MLA (MultipleOf(16), KV dtypes auto / float16 / bfloat16) -> 16; with an fp8 KV
  cache FLASHMLA ([64]) -> 64;
- MLA on SM 10.x (Blackwell): FLASHINFER_MLA ([32, 64], qk_nope_head_dim in 64 / 128 / 192) -> 32, else CUTLASS_MLA
  ([128]) -> 128;
- MLA on SM 12.x and on Ampere / Ada / Turing / Volta: TRITON_MLA (MultipleOf(16)) -> 16;
- a backend the user names (--attention-backend) brings its own kernel sizes: FLASHMLA 64, CUTLASS_MLA 128,
  FLASHINFER_MLA 32, the others 16.
- MLA on AMD GPUs (ROCm): TRITON_MLA (MultipleOf(16)) -> 16 while VLLM_ROCM_USE_AITER is unset, its default
  (envs.py; platforms/rocm.py _get_backend_priorities, 0.19.0 / 0.33.0: ROCM_AITER_MLA first only when
  rocm_aiter_ops.is_mla_enabled()). With VLLM_ROCM_USE_AITER=1, ROCM_AITER_MLA: kernel blocks [1] in 0.12-0.19
  (0.19 then picks 1-token blocks), MultipleOf(1) by 0.27 (16 kept); 0.10-0.11 refuse its 16-token default
  ("currently only supports block size 1"). The bytes per token are the same either way; only the block
  rounding differs, which kvplan does not model for AITER: give --block-size 1 where it applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import UnsupportedError

# the smallest kernel block each backend takes when 16 is not one (get_supported_kernel_block_sizes)
BACKEND_BLOCK = {
    "FLASH_ATTN": 16, "FLASHINFER": 16, "TRITON_ATTN": 16, "FLEX_ATTENTION": 16, "FLASH_ATTN_MLA": 16,
    "TRITON_MLA": 16, "FLASHINFER_MLA": 32, "FLASHMLA": 64, "CUTLASS_MLA": 128,
}
MLA_BACKENDS = frozenset({"FLASH_ATTN_MLA", "TRITON_MLA", "FLASHINFER_MLA", "FLASHMLA", "CUTLASS_MLA"})
_FP16_KV = frozenset({"auto", "float16", "bfloat16", "fp16", "bf16"})


@dataclass(frozen=True)
class BackendChoice:
    backend: str
    block_size: int
    reason: str


def choose(*, mla: bool, kv_dtype: str, qk_nope_head_dim: int | None, compute_capability: str | None, vendor: str | None,
           named: str | None = None) -> BackendChoice:
    """The backend and block size vLLM would use (`named`: the user's --attention-backend)."""
    if named is not None:
        key = named.strip().upper()
        if key not in BACKEND_BLOCK:
            raise UnsupportedError(f"attention backend {named!r} is not modelled", where="attention_backend",
                                   hint="kvplan knows " + ", ".join(sorted(BACKEND_BLOCK)))
        if mla != (key in MLA_BACKENDS):
            raise UnsupportedError(f"attention backend {key} does not serve this model's {'MLA' if mla else 'attention'}",
                                   where="attention_backend")
        return BackendChoice(key, BACKEND_BLOCK[key], f"--attention-backend {key}")
    if not mla:
        return BackendChoice("FLASH_ATTN" if not str(compute_capability or "").startswith("10") else "FLASHINFER", 16,
                             "non-MLA attention: FLASH_ATTN / FLASHINFER accept 16-token blocks")
    if vendor == "amd":
        return BackendChoice("TRITON_MLA", 16, "ROCm MLA: TRITON_MLA while VLLM_ROCM_USE_AITER is unset (16-token blocks; "
                                               "with AITER, ROCM_AITER_MLA's 1-token blocks: give --block-size 1)")
    if compute_capability is None or not compute_capability[:1].isdigit():
        raise UnsupportedError("the MLA backend vLLM picks on this GPU (and its block size) is not modelled",
                               where="--block-size", hint="give --block-size (FlashMLA 64, CUTLASS MLA 128, AITER MLA 1)")
    major = int(compute_capability.split(".")[0])
    fp16_kv = kv_dtype.strip().lower() in _FP16_KV
    if major == 9:
        if fp16_kv:
            return BackendChoice("FLASH_ATTN_MLA", 16, "Hopper MLA: FLASH_ATTN_MLA first (16-token blocks)")
        return BackendChoice("FLASHMLA", 64, "Hopper MLA with an fp8 KV cache: FLASH_ATTN_MLA takes only 16-bit KV, "
                                             "FLASHMLA runs 64-token blocks")
    if major == 10:
        if qk_nope_head_dim in (64, 128, 192):
            return BackendChoice("FLASHINFER_MLA", 32, "Blackwell MLA: FLASHINFER_MLA first (32 or 64-token blocks)")
        return BackendChoice("CUTLASS_MLA", 128, f"Blackwell MLA: FLASHINFER_MLA needs qk_nope_head_dim 64/128/192 "
                                                 f"(got {qk_nope_head_dim}); CUTLASS_MLA runs 128-token blocks")
    return BackendChoice("TRITON_MLA", 16, f"SM {compute_capability} MLA: TRITON_MLA (16-token blocks)")
