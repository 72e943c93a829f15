"""Options several commands share, declared once (typer's Annotated aliases)."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer


def whole_number(value) -> int:
    """typer's parser for every whole-number option: ASCII digits only, as kvplan.core.units reads numbers (click's
    int() would take full-width or Arabic-Indic digits); the range is each command's to check."""
    from kvplan.core.errors import InputError
    from kvplan.core.units import parse_int

    try:
        return parse_int(value, what=None, minimum=None)
    except InputError as err:
        raise typer.BadParameter(err.what) from None


whole_number.__name__ = "int"  # typer names the value after its parser in --help: `--batch <int>`, as before


ModelArg = Annotated[str, typer.Argument(help="Bundled model name or alias, spec YAML, config.json, a folder with one, or a Hugging Face id (org/name[@revision]: --models-dir, the Hugging Face cache, then the Hub).", show_default=False)]
ModelsDirOpt = Annotated[Optional[List[str]], typer.Option("--models-dir", help="Folder of model folders (org--name/config.json, org/name/, or a Hugging Face cache) to find models in (repeatable).", show_default=False)]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Never ask the Hugging Face Hub (as HF_HUB_OFFLINE=1): bundled models, files, --models-dir and the local cache only.")]
SeqOpt = Annotated[Optional[str], typer.Option("--seq", "-s", help="Tokens per sequence (max_model_len): 8192, 8k (=8000), 32K (=32768); auto or -1 (--engine vllm): the length vLLM's --max-model-len auto picks. Default: the model's max context.", show_default=False)]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.", parser=whole_number)]
KvDtypeOpt = Annotated[str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV cache dtype: auto (model dtype), fp32, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, int8, int4; --engine vllm also its packed formats (fp8_per_token_head, int8_per_token_head, int4_per_token_head, nvfp4, nvfp4_4over6). --kv-cache-dtype is the same option, as vLLM and SGLang spell it.")]
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype/format: bf16, fp16, fp32, fp8, int8, int4 (GPTQ/AWQ, group 128). Default: the model's.", show_default=False)]
GpuOpt = Annotated[Optional[str], typer.Option("--gpu", help="GPU from the catalog (kvplan gpus), e.g. h100-sxm-80gb, h100, a100-80gb; NAME@wsl under WSL2 (its nvidia-smi total).", show_default=False)]
GpuMemOpt = Annotated[Optional[str], typer.Option("--gpu-mem", help="Memory of one GPU, for GPUs not in the catalog: 80GiB, 24GB, 81559MiB.", show_default=False)]
GpusOpt = Annotated[Optional[int], typer.Option("--gpus", help="Number of GPUs (= TP x PP); sets --tp when --tp is not given.", show_default=False, parser=whole_number)]
TpOpt = Annotated[Optional[int], typer.Option("--tp", help="Tensor parallel size.", show_default=False, parser=whole_number)]
PpOpt = Annotated[int, typer.Option("--pp", help="Pipeline parallel size.", parser=whole_number)]
EngineOpt = Annotated[Optional[str], typer.Option("--engine", help="static (the textbook: contiguous, like transformers' StaticCache), vllm, sglang, trtllm. Default: vllm with a GPU (the engine most deployments run gives the verdict), static without.", show_default=False)]
EngineVersionOpt = Annotated[Optional[str], typer.Option("--engine-version", help="Engine release whose rules to mirror: vllm any of 0.10.0 ... 0.33.x (default 0.33); sglang 0.3.0 ... 0.5.23 (default 0.5.23); trtllm 0.5 ... 1.x (default 1.x).", show_default=False)]
EngineOptionOpt = Annotated[Optional[List[str]], typer.Option("--engine-option", help="An engine setting as KEY=VALUE (repeatable). trtllm: backend=tensorrt|pytorch, max_batch_size, max_num_tokens, max_input_len, activation_bytes (the engine's execution context), max_tokens, max_gpu_total_bytes; sglang: attention_backend; vllm: VLLM_USE_FLASHINFER_SAMPLER=0|1 (the sampler the profile warms up), VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0|1 (the CUDA-graph estimate out of the budget), VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (a max_model_len past the model's limit), entry_point=serve|offline|engine (whose scheduler defaults apply: `vllm serve`, the default; the offline LLM(...) class; an AsyncLLM / LLMEngine built directly or vllm run-batch).", show_default=False)]
GpuReservedOpt = Annotated[Optional[str], typer.Option("--gpu-reserved", help="Memory each GPU already has in use when the engine starts (a desktop's display, WSL2, another process; on DGX Spark what the host holds of the shared pool, else the public readings' range, 5.8-19.2 GiB), e.g. 1.2GiB; the sglang and trtllm budgets subtract it; vllm counts it in its start check.", show_default=False)]
GpuUtilOpt = Annotated[Optional[str], typer.Option("--gpu-util", help="Fraction of GPU memory the engine may use (vLLM gpu_memory_utilization). static default 0.9.", show_default=False)]
ReserveOpt = Annotated[Optional[str], typer.Option("--reserve", help="Memory per GPU kept back for runtime overhead (static engine); overrides --gpu-util.", show_default=False)]
KvMemOpt = Annotated[Optional[str], typer.Option("--kv-cache-memory", help="Bytes per GPU for the KV cache (vLLM kv_cache_memory_bytes); skips the budget model.", show_default=False)]
BlockOpt = Annotated[Optional[int], typer.Option("--block-size", help="Paged-attention block size in tokens (engine default when absent).", show_default=False, parser=whole_number)]
MaxSeqsOpt = Annotated[Optional[int], typer.Option("--max-num-seqs", help="vLLM max_num_seqs.", show_default=False, parser=whole_number)]
MaxTokOpt = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", help="vLLM max_num_batched_tokens.", show_default=False, parser=whole_number)]
KvHeadsOpt = Annotated[Optional[int], typer.Option("--kv-heads", help="What-if: override the KV heads of every attention layer.", show_default=False, parser=whole_number)]
HeadDimOpt = Annotated[Optional[int], typer.Option("--head-dim", help="What-if: override the head dimension.", show_default=False, parser=whole_number)]
OptimisticOpt = Annotated[bool, typer.Option("--optimistic", help="Judge a modelled engine budget by its modelled value (what the engine most likely logs). By default the verdict, the longest context and the fixes are judged at the low edge of its band (the terms' measured error), as kvplan check judges.")]
DetailOpt = Annotated[bool, typer.Option("--detail", help="Every figure with its exact byte count beside the readable one (the default view rounds to KiB/MiB/GiB; --json has the bytes).")]
BriefOpt = Annotated[bool, typer.Option("--brief", help="The answer alone, in at most 8 lines of 80 columns: the verdict and its engine, the concurrency at the asked length, the longest length, the fix.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (keys: docs/json.md).")]
VllmArgsOpt = Annotated[Optional[str], typer.Option("--vllm-args", help="Extra `vllm serve` options, as vLLM spells them (--engine vllm): speculative decoding, LoRA, offload, data / expert / context parallelism, KV connectors, ... (docs/engines/features/).", show_default=False)]
SglangArgsOpt = Annotated[Optional[str], typer.Option("--sglang-args", help="Extra `python -m sglang.launch_server` options, as SGLang spells them (--engine sglang): --disaggregation-mode prefill|decode, --speculative-algorithm EAGLE|EAGLE3|NEXTN|STANDALONE with its draft, --enable-dp-attention, --enable-lora with its rank and modules, --enable-hierarchical-cache (docs/engines/features/).", show_default=False)]
RateOpt = Annotated[Optional[str], typer.Option("--rate", help="Requests per second a KV connector's prefill -> decode link carries (with --vllm-args \"--kv-transfer-config ...\").", show_default=False)]
PromptOpt = Annotated[Optional[str], typer.Option("--prompt", help="Prompt tokens per request moved by a KV connector (default: --seq).", show_default=False)]
CalibrationOpt = Annotated[Optional[str], typer.Option("--calibration", help="A site profile (kvplan calibrate --save FILE): the budget terms your own start-up logs measured (non-torch memory, activation scale, CUDA graphs, memory in use at start), applied by the engine's budget.", show_default=False)]


def with_model_lookup(command):
    """A command that takes MODEL runs with its --models-dir / --offline in force for every model it resolves, and
    reads each model once: a sweep or plan builds a request per grid point, and re-parsing a config.json (and counting
    its parameters) for each cost 25 ms a row for DeepSeek-V3."""
    import functools

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from kvplan.api.args import model_lookup

        with model_lookup(kwargs.get("models_dir"), bool(kwargs.get("offline"))):
            return command(*args, **kwargs)

    return wrapper
