"""kvplan.estimate: `kvplan estimate MODEL` as a function (docs/api.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.api import args
from kvplan import engines
from kvplan.core.errors import InputError
from kvplan.engines import fixes
from kvplan.requests.build import at_origins, build_request, refuse_paged_flags

if TYPE_CHECKING:
    from kvplan.engines import EngineRequest
    from kvplan.engines.result import ContractEstimate


def estimate(model: str, *, seq: str | int | None = None, batch: int = 1, kv_dtype: str = "auto", dtype: str | None = None,
             gpu: str | None = None, gpu_mem: str | int | None = None, gpus: int | None = None, tp: int | None = None,
             pp: int = 1, engine: str | None = None, engine_version: str | None = None,
             engine_option: list[str] | dict[str, str] | str | None = None, gpu_util: str | float | None = None,
             gpu_reserved: str | int | None = None, reserve: str | int | None = None,
             kv_cache_memory: str | int | None = None, block_size: int | None = None, max_num_seqs: int | None = None,
             max_num_batched_tokens: int | None = None, kv_heads: int | None = None, head_dim: int | None = None,
             vllm_args: str | None = None, sglang_args: str | None = None, rate: str | float | None = None,
             prompt: str | int | None = None, calibration: str | None = None, models_dir: list[str] | str | None = None,
             offline: bool = False, optimistic: bool = False) -> ContractEstimate:
    """KV cache, weights and fit of `model` at `seq` tokens x `batch` sequences, in the terms of `engine` (static,
    vllm, sglang, trtllm; None: vllm with a GPU, static without): the result `kvplan estimate --json` prints. `fits` is False (not an exception) when a GPU
    was given and the shape does not fit. A modelled engine budget is judged at the low edge of its band, as check
    judges it, unless `optimistic`."""
    return run(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, gpus=gpus, tp=tp,
               pp=pp, engine=engine, engine_version=engine_version, engine_option=engine_option, gpu_util=gpu_util,
               gpu_reserved=gpu_reserved, reserve=reserve, kv_cache_memory=kv_cache_memory, block_size=block_size,
               max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, kv_heads=kv_heads,
               head_dim=head_dim, vllm_args=vllm_args, sglang_args=sglang_args, rate=rate, prompt=prompt,
               calibration=calibration, models_dir=models_dir, offline=offline, optimistic=optimistic)[1]


def run(model, *, seq, batch, kv_dtype, dtype, gpu, gpu_mem, gpus, tp, pp, engine, engine_version, engine_option,
        gpu_util, gpu_reserved, reserve, kv_cache_memory, block_size, max_num_seqs, max_num_batched_tokens, kv_heads,
        head_dim, vllm_args, sglang_args, rate, prompt, calibration, models_dir, offline, optimistic=False
        ) -> tuple[EngineRequest, ContractEstimate]:
    """The request and the estimate: the command also prints what kvplan assumed while reading the model."""
    engine = args.default_engine(args.text(engine, "--engine"), gpu=gpu, gpu_mem=gpu_mem, kv_cache_memory=kv_cache_memory,
                                 reserve=reserve, vllm_only=vllm_args is not None or rate is not None or prompt is not None,
                                 sglang_args=sglang_args)
    block_size, max_num_seqs = args.count(block_size, "--block-size"), args.count(max_num_seqs, "--max-num-seqs")
    max_num_batched_tokens = args.count(max_num_batched_tokens, "--max-num-batched-tokens")
    with args.model_lookup(models_dir, offline):
        chosen = engines.get(engine)
        refuse_paged_flags((chosen.name,), block_size=block_size, max_num_seqs=max_num_seqs,
                           max_num_batched_tokens=max_num_batched_tokens)
        rate, prompt = args.text(rate, "--rate"), args.text(prompt, "--prompt")
        if sglang_args is not None and chosen.launch_args_flag != "--sglang-args":
            raise InputError("SGLang's options apply to --engine sglang", where="--sglang-args", hint="add --engine sglang")
        if (vllm_args is not None or (sglang_args is None and (rate is not None or prompt is not None))) \
                and chosen.launch_args_flag != "--vllm-args":
            flag = "--vllm-args" if vllm_args is not None else "--rate" if rate is not None else "--prompt"
            raise InputError("vLLM's options apply to --engine vllm", where=flag, hint="add --engine vllm")
        if engine_version is not None:
            # the release first (engines/releases.py): an unread one is cannot judge at --engine-version whatever
            # else the command line says, before --vllm-args are read by that release's option table
            if not chosen.has_releases:
                raise InputError("the static engine has no release to choose", where="--engine-version",
                                 hint="use it with --engine vllm, sglang or trtllm")
            engines.release(chosen.name, engine_version)
        site = None
        if calibration is not None:
            # --calibration only: the site-profile reader (about 9 ms at start-up, python -X importtime)
            from kvplan.engines.calibration import read_profile

            site = read_profile(args.path(calibration, "--calibration"), engine=chosen.name)
        request = build_request(
            model, seq=args.text(seq, "--seq"), batch=args.count(batch, "--batch"), kv_dtype=kv_dtype, dtype=dtype,
            gpu=gpu, gpu_mem=args.text(gpu_mem, "--gpu-mem"), gpus=args.count(gpus, "--gpus"), tp=args.count(tp, "--tp"),
            pp=args.count(pp, "--pp"), gpu_util=args.text(gpu_util, "--gpu-util"), reserve=args.text(reserve, "--reserve"),
            kv_cache_memory=args.text(kv_cache_memory, "--kv-cache-memory"), block_size=block_size,
            max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
            kv_heads=args.count(kv_heads, "--kv-heads"), head_dim=args.count(head_dim, "--head-dim"),
            engine_version=engine_version, gpu_reserved=args.text(gpu_reserved, "--gpu-reserved"),
            engine_options=args.engine_options(engine_option), vllm_args=vllm_args, rate=rate, prompt=prompt, site=site,
            sglang_args=sglang_args)
        with at_origins(request):
            chosen.accepts(request)
            result = chosen.estimate(request)
            if not optimistic:
                # judged where check judges: a modelled budget at the low edge of its band, so the verdict, the
                # longest context and every fix are the ones `kvplan check` gives the same deployment
                request, result = fixes.at_judging_edge(chosen, request, result)
            return request, fixes.attach(chosen, request, result)
