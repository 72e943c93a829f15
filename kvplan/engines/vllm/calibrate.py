"""Check kvplan's vLLM model against a real vLLM start-up log: the same launch, figure by figure. Pure
(apart from reading the log and the model files it is pointed at).

A log names its model (a Hugging Face id), GPU (total memory in the worker snapshot) and flags (TP, PP,
max_model_len, gpu_memory_utilization, dtype, quantization, KV dtype, scheduler limits). kvplan resolves
the model (a bundled spec or alias, a path given with --model, or <models-dir>/<org>--<name>/config.json),
rebuilds the launch as an EngineRequest and predicts it twice:

- modelled: the whole budget from the architecture and the flags (what `kvplan estimate --engine vllm`
  says before the run) — weights, activation peak, non-torch memory, CUDA graphs, available KV memory,
  blocks, tokens, concurrency;
- given the logged KV memory: vLLM prints available memory to 0.01 GiB, so kvplan takes every byte
  count that prints the same ([low, high) from vllm_log.gib_bounds) and reports the block range; tokens
  and concurrency follow from the logged number of blocks. This checks the block arithmetic alone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from kvplan.core.errors import InputError, KvplanError, UnsupportedError

GIB = 2**30


@dataclass(frozen=True)
class Figure:
    """One figure of the log beside kvplan's prediction."""

    name: str
    unit: str  # "GiB", "blocks", "tokens", "x", "tokens (length)"
    logged: str | None
    predicted: str | None
    difference: str | None  # predicted - logged, in the unit; percent for memory
    match: bool | None  # exact (or within the printed rounding) where the engine is deterministic


@dataclass(frozen=True)
class Calibration:
    log: str
    model_id: str | None
    model: str | None  # the kvplan spec used
    vllm_version: str | None  # as logged
    rules: str | None  # the vLLM rules kvplan applied ("0.19" / "0.33")
    gpu: str | None
    tp: int | None
    pp: int | None
    max_model_len: int | None
    status: str  # "ok" | "cannot describe"
    reason: str | None
    figures: tuple[Figure, ...] = ()
    available_error_percent: float | None = None  # |modelled - logged| / logged x 100, available KV memory
    notes: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------ resolving

def model_dir_name(model_id: str) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct' -> 'meta-llama--Llama-3.1-8B-Instruct' (the Hub's cache naming)."""
    return model_id.strip().strip("/").replace("/", "--")


def resolve_log_model(model_id: str | None, *, model: str | None = None, models_dir: str | None = None):
    """The ModelSpec for a log's model: --model wins, then a bundled spec or alias, then models_dir."""
    from kvplan.model import catalog

    if model:
        return catalog.resolve_model(model)
    if not model_id:
        raise InputError("the log names no model", hint="give --model PATH")
    errors = []
    if models_dir:
        base = Path(models_dir)
        wanted = model_dir_name(model_id).lower()
        short = model_id.rstrip("/").split("/")[-1].lower()
        if base.is_dir():
            for entry in sorted(base.iterdir()):
                if entry.is_dir() and entry.name.lower() in (wanted, short):
                    return catalog.resolve_model(str(entry))
    try:
        return catalog.resolve_model(model_id)
    except InputError as err:
        errors.append(err.what)
    raise UnsupportedError(f"kvplan cannot describe {model_id!r}: not a bundled model or alias"
                           + (f", nor under {models_dir}" if models_dir else ""),
                           hint="give --model PATH (a config.json, a model folder or a spec YAML) or --models-dir DIR")


def gpu_from_log(total_gib: Decimal | None):
    """The catalog GPU whose runtime capacity vLLM would print as `total_gib`, else a nameless one in the
    middle of the printed interval."""
    from kvplan.model.catalog import gpus
    from kvplan.engines.request import Hardware
    from kvplan.engines.vllm.log import gib_bounds

    if total_gib is None:
        return None, ["the log has no worker memory snapshot (DEBUG): the GPU is unknown"]
    lo, hi = gib_bounds(total_gib)
    for g in gpus():
        if lo <= g.capacity_bytes < hi:
            return Hardware(g.name, g.capacity_bytes), []
    mid = (lo + hi) // 2
    return Hardware(None, mid), [f"no catalog GPU reports {total_gib} GiB; used {mid:,} B"]


def _rules(version: str | None) -> tuple[str, list[str]]:
    """The mirrored release line a log is compared with (kvplan/engines/vllm/releases.py closest)."""
    from kvplan.engines.vllm import releases

    rel, note = releases.closest(version)
    return rel.line, [note] if note else []


_TORCH_DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "float16": "fp16",
                 "bfloat16": "bf16", "float32": "fp32", "half": "fp16", "float": "fp32"}


def request_from_log(figs, spec, hardware, *, rules: str | None = None, kv_cache_memory: int | None = None):
    """The EngineRequest of the launch a log describes."""
    from fractions import Fraction

    from kvplan.core import dtypes
    from kvplan.engines import EngineRequest

    notes = []
    act = _TORCH_DTYPES.get(str(figs.dtype or "").strip())
    if act and act != spec.dtype:
        spec = dataclasses.replace(spec, dtype=act)  # vLLM's --dtype: the activations (and an auto KV cache)
    weight_fmt = None
    quant = (figs.quantization or "").lower()
    if quant == "fp8" and spec.weights_bytes is None:
        weight_fmt = dtypes.weight_format("fp8")  # vLLM quantizes the linear layers to fp8 at load time
    elif quant and quant != "none" and spec.weights_bytes is None:
        notes.append(f"the log's quantization {figs.quantization!r} but the model files carry no quantization_config: "
                     "weights counted in the model dtype")
    kv_name = figs.kv_cache_dtype or "auto"
    util = Fraction(str(figs.gpu_memory_utilization)) if figs.gpu_memory_utilization is not None else None
    return EngineRequest(spec=spec, seq=figs.max_model_len or spec.max_context or 8192, batch=1, kv_dtype=kv_name,
                         weight_fmt=weight_fmt, tp=figs.tensor_parallel_size or 1,
                         pp=figs.pipeline_parallel_size or 1, hardware=hardware, gpu_util=util,
                         kv_cache_memory=kv_cache_memory, block_size=figs.block_size,
                         max_num_seqs=figs.max_num_seqs, max_num_batched_tokens=figs.max_num_batched_tokens,
                         engine_version=rules), notes


# ------------------------------------------------------------------------------------------ comparing

def _gib(b: int | None) -> str | None:
    return None if b is None else f"{b / GIB:.2f}"


def _mem(name: str, logged: Decimal | None, predicted: int | None) -> Figure:
    if logged is None or predicted is None:
        return Figure(name, "GiB", None if logged is None else str(logged), _gib(predicted), None, None)
    diff = predicted / GIB - float(logged)
    pct = f" ({diff / float(logged) * 100:+.1f}%)" if float(logged) else ""
    return Figure(name, "GiB", str(logged), _gib(predicted), f"{diff:+.2f}{pct}", None)


def calibrate_log(path: str | Path, *, model: str | None = None, models_dir: str | None = None) -> Calibration:
    """Parse one vLLM log and compare every figure kvplan predicts for the same launch."""
    from kvplan.engines import vllm
    from kvplan.engines.vllm.log import gib_bounds, parse_vllm_log_file

    try:
        figs = parse_vllm_log_file(path)
    except ValueError as err:
        # vllm_log names the file in its message; the error line names it once, as its <where>
        what = str(err).removeprefix(f"{Path(path)}: ")
        raise InputError(what, where=str(path), hint="pass the log a vLLM server printed while starting (INFO level or DEBUG)") from None
    rules, notes = _rules(figs.vllm_version)
    hardware, hw_notes = gpu_from_log(figs.total_memory_gib)
    notes += hw_notes
    base = dict(log=str(path), model_id=figs.model, vllm_version=figs.vllm_version, rules=rules,
                gpu=hardware.name if hardware else None, tp=figs.tensor_parallel_size,
                pp=figs.pipeline_parallel_size, max_model_len=figs.max_model_len)
    try:
        spec = resolve_log_model(figs.model, model=model, models_dir=models_dir)
        req, req_notes = request_from_log(figs, spec, hardware, rules=rules)
        notes += req_notes
        modelled = vllm.estimate(req) if hardware else None
    except KvplanError as err:
        return Calibration(**base, model=None, status="cannot describe", reason=err.one_line(), notes=tuple(notes))

    w = figs.binding_worker()
    figures: list[Figure] = []
    b = modelled.workers[-1].budget if modelled and modelled.workers else None
    if w is not None and modelled is not None:
        # the worker that sizes the pool: the last stage under PP (the sampler's peak)
        mb = next((x.budget for x in modelled.workers if x.stage == len(modelled.workers) - 1), b)
        figures += [
            _mem("weights (\"Model loading took\")", w.weights_gib, mb.weights_bytes),
            _mem("activation peak", w.activation_peak_gib, mb.activation_peak_bytes),
            _mem("non-torch memory", w.non_torch_gib, mb.non_torch_bytes if w.non_torch_gib is not None else None),
            _mem("CUDA graph estimate", w.cuda_graph_estimate_gib, mb.cuda_graph_bytes),
            _mem("available KV cache memory", w.available_kv_gib, min(x.available_kv_bytes for x in modelled.workers)),
        ]
    error_pct = None
    if w is not None and w.available_kv_gib and modelled is not None:
        logged = float(w.available_kv_gib) * GIB
        error_pct = abs(min(x.available_kv_bytes for x in modelled.workers) - logged) / logged * 100
    if modelled is not None:
        figures += [
            _count("num_gpu_blocks (modelled budget)", figs.num_gpu_blocks, modelled.num_gpu_blocks, exact=False),
            _count("GPU KV cache size, tokens (modelled budget)", figs.kv_cache_tokens, modelled.kv_cache_tokens,
                   exact=False),
            _ratio("maximum concurrency (modelled budget)", figs.max_concurrency, modelled.max_concurrency, exact=False),
        ]

    # given the logged KV memory: every byte count that prints as the logged GiB
    if w is not None and w.available_kv_gib is not None and w.available_kv_gib > 0:
        lo, hi = gib_bounds(w.available_kv_gib)
        low = vllm.estimate(dataclasses.replace(req, kv_cache_memory=lo, hardware=None))
        high = vllm.estimate(dataclasses.replace(req, kv_cache_memory=hi - 1, hardware=None))
        rng = f"{low.num_gpu_blocks:,}" if low.num_gpu_blocks == high.num_gpu_blocks else \
            f"{low.num_gpu_blocks:,}–{high.num_gpu_blocks:,}"
        inside = figs.num_gpu_blocks is not None and low.num_gpu_blocks <= figs.num_gpu_blocks <= high.num_gpu_blocks
        figures.append(Figure("num_gpu_blocks (logged KV memory)", "blocks",
                              None if figs.num_gpu_blocks is None else f"{figs.num_gpu_blocks:,}", rng,
                              None if figs.num_gpu_blocks is None else ("0" if inside else "outside"),
                              None if figs.num_gpu_blocks is None else inside))
        blocks = figs.num_gpu_blocks
        if blocks is not None:
            at = dataclasses.replace(req, kv_cache_memory=max(lo, blocks * low.bytes_per_block), hardware=None)
            pinned = vllm.estimate(at)
            if pinned.num_gpu_blocks == blocks:
                figures.append(_count("GPU KV cache size, tokens (logged KV memory)", figs.kv_cache_tokens,
                                      pinned.kv_cache_tokens))
                figures.append(_ratio("maximum concurrency (logged KV memory)", figs.max_concurrency,
                                      pinned.max_concurrency))
        if figs.estimated_max_model_len is not None:
            figures.append(_count("estimated maximum model length (logged KV memory)", figs.estimated_max_model_len,
                                  low.estimated_max_model_len))
    if figs.padding_layers is not None or (modelled and modelled.padding_layers):
        figures.append(_count("padding layers", figs.padding_layers or 0, modelled.padding_layers if modelled else None))
    return Calibration(**base, model=spec.name, status="ok", reason=None, figures=tuple(figures),
                       available_error_percent=error_pct, notes=tuple(notes))


def _count(name: str, logged: int | None, predicted: int | None, *, exact: bool = True) -> Figure:
    """A count; `exact` where kvplan should reproduce it (not where it rests on a modelled budget)."""
    if logged is None or predicted is None:
        return Figure(name, "count", None if logged is None else f"{logged:,}",
                      None if predicted is None else f"{predicted:,}", None, None)
    return Figure(name, "count", f"{logged:,}", f"{predicted:,}", f"{predicted - logged:+,}",
                  predicted == logged if exact else None)


def _ratio(name: str, logged: float | None, predicted: float | None, *, exact: bool = True) -> Figure:
    if logged is None or predicted is None:
        return Figure(name, "x", None if logged is None else f"{logged:.2f}",
                      None if predicted is None else f"{predicted:.2f}", None, None)
    p = f"{predicted:.2f}"
    return Figure(name, "x", f"{logged:.2f}", p, f"{float(p) - logged:+.2f}", p == f"{logged:.2f}" if exact else None)
