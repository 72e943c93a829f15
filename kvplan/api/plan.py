"""kvplan.plan: `kvplan plan MODEL` as a function (docs/api.md, docs/plan.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.analysis import targets
from kvplan.api import args
from kvplan import engines
from kvplan.analysis import emit as emitting, plan as planning, workload as wl
from kvplan.core import units, yamlio
from kvplan.core.errors import InputError
from kvplan.requests.build import build_request
from kvplan.model import catalog, efficiency, fleet

if TYPE_CHECKING:
    from kvplan.analysis.plan import Load, PlanResult
    from kvplan.engines import EngineRequest


@dataclass(frozen=True)
class Planned:
    """A search and what writing its deployment file needs (the command's --emit)."""

    result: PlanResult
    load: Load
    base: EngineRequest  # the model's request at the load's max_model_len
    ref: Any  # how a deployment file names the model (analysis/emit.py model_reference)


def plan(model: str, *, concurrency: int | None = None, seq: str | int | None = None, rate: float | None = None,
         workload: str | None = None, prompt: str | int | None = None, output: str | int | None = None,
         ttft: float | str | None = None, tpot: float | str | None = None, gpu: str | list[str] | None = None,
         engine: str | list[str] = "vllm,sglang,trtllm", kv_dtype: str | list[str] = "auto,fp8", dtype: str | None = None,
         max_gpus: int = 64, gpus_per_node: int | None = None, expert_parallel: bool = False,
         price: list[str] | dict[str, float] | str | None = None, prices: str | None = None,
         models_dir: list[str] | str | None = None, offline: bool = False) -> PlanResult:
    """The cheapest deployments of `model` that hold a load (`concurrency` sequences of `seq` tokens, or `rate`
    requests per second of a length mix), ranked: the result `kvplan plan --json` prints. No plan holding the load is
    an empty `plans`, not an exception. Lists (gpu, engine, kv_dtype) may be given as Python lists or comma-separated.
    `ttft`, `tpot`: targets as the options read them (a number is P99 milliseconds; 'p95:2s', 'p50:300ms,p99:1s');
    `tpot=None` is the default interactivity target (P99 100 ms), `tpot='none'` no target (docs/plan.md)."""
    return run(model, concurrency=concurrency, seq=seq, rate=rate, workload=workload, prompt=prompt, output=output,
               ttft=ttft, tpot=tpot, gpu=gpu, engine=engine, kv_dtype=kv_dtype, dtype=dtype, max_gpus=max_gpus,
               gpus_per_node=gpus_per_node, expert_parallel=expert_parallel, price=price, prices=prices,
               models_dir=models_dir, offline=offline).result


def run(model, *, concurrency, seq, rate, workload, prompt, output, ttft, tpot, gpu, engine, kv_dtype, dtype, max_gpus,
        gpus_per_node, expert_parallel, price, prices, models_dir, offline) -> Planned:
    import dataclasses

    max_gpus, gpus_per_node = args.count(max_gpus, "--max-gpus"), args.count(gpus_per_node, "--gpus-per-node")
    for flag, value in (("--max-gpus", max_gpus), ("--gpus-per-node", gpus_per_node)):
        if value is not None and not 1 <= value <= 4096:
            raise InputError(f"must be from 1 to 4096, got {value}", where=flag)
    goals = targets.targets(ttft, tpot)
    rate = _number(rate, "--rate")
    concurrency = args.count(concurrency, "--concurrency")
    with args.model_lookup(models_dir, offline):
        requests, description, max_len = _lengths(args.text(seq, "--seq"), args.path(workload, "--workload"),
                                                  args.text(prompt, "--prompt"), args.text(output, "--output"),
                                                  concurrency=concurrency, rate=rate, load_yaml=yamlio.load_yaml)
        load = planning.load_of(requests, concurrency=concurrency, rate=rate, max_model_len=max_len,
                                description=description)
        base = build_request(model, seq=str(load.max_model_len), batch=1, kv_dtype="auto", dtype=dtype, gpu=None,
                             gpu_mem=None, gpus=None, tp=None, pp=1)
        axes = planning.Axes(gpus=_gpus(_joined(gpu, "--gpu")), engines=_names(_joined(engine, "--engine"), "--engine"),
                             kv_dtypes=_names(_joined(kv_dtype, "--kv-dtype"), "--kv-dtype"), max_gpus=max_gpus,
                             gpus_per_node=gpus_per_node, expert_parallel=bool(expert_parallel))
        table = fleet.price_table(args.path(prices, "--prices"), _prices(price), load_yaml=yamlio.load_yaml)
        result = planning.search(base, load, goals, axes, prices=table, get_engine=engines.get,
                                 factors_for=efficiency.factors_for, node_of=fleet.node)
        ref = emitting.model_reference(base.spec, model)
        result = dataclasses.replace(result, launch=tuple(_launches(result, ref, emitting)))
        return Planned(result=result, load=load, base=base, ref=ref)


def _number(value, flag: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"must be a number, got {type(value).__name__}", where=flag)
    try:
        return float(value)
    except ValueError:
        raise InputError(f"must be a number, got {value!r}", where=flag) from None


def _joined(value, flag: str) -> str | None:
    """A comma-separated option from a string or a list of names."""
    names = args.names(value, flag)
    return None if names is None else ",".join(names)


def _prices(value) -> list[str]:
    """--price NAME=DOLLARS (repeatable), from those strings or a mapping {gpu: dollars}."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return [f"{name}={args.text(dollars, f'--price {name}')}" for name, dollars in value.items()]
    return args.names(value, "--price") or []


def _names(text: str, flag: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    if not names:
        raise InputError("names nothing", where=flag)
    return names


def _gpus(text: str | None):
    if text is None:
        return catalog.gpus()
    return tuple({catalog.find_gpu(name).name: catalog.find_gpu(name) for name in _names(text, "--gpu")}.values())


def _lengths(seq, workload, prompt, output, *, concurrency, rate, load_yaml):
    """(requests, description, max_model_len or None) from --seq, --workload, or --prompt/--output."""
    max_len = units.parse_tokens(seq, what="--seq") if seq is not None else None
    if workload and (prompt or output):
        raise InputError("give --workload or --prompt/--output, not both", where="--workload")
    if workload:
        requests, description = wl.load(workload, load_yaml=load_yaml)
        return requests, description, max_len
    if prompt or output:
        if max_len is not None and (prompt is None or output is None):
            half = max(1, max_len // 2)
            prompt = prompt or str(max_len - half)
            output = output or str(half)
        if prompt is None or output is None:
            raise InputError("give both --prompt and --output", where="--prompt" if prompt is None else "--output",
                             hint="a number of tokens or percentiles, e.g. --prompt p50:200,p99:2000 --output 300")
        spec = f"prompt={_points(prompt)};output={_points(output)}"
        requests = wl.parse_inline(spec, where="--prompt/--output")
        return requests, f"prompt {prompt}, output {output}", max_len
    if max_len is None:
        raise InputError("the load needs lengths", where="--seq",
                         hint="--seq L (with --concurrency), --workload FILE, or --prompt and --output")
    half = max(1, max_len // 2)
    return [wl.Request(max(1, max_len - half), half)], f"{max_len:,} tokens ({max_len - half:,} prompt + {half:,} output)", max_len


def _points(text: str) -> str:
    """'512' -> 'p50:512' (a fixed length); percentile lists pass through."""
    text = text.strip()
    return f"p50:{text}" if ":" not in text else text


def _launches(result, ref, emitting):
    seen, out = set(), []
    for p in result.plans:
        if p.engine in seen:
            continue
        seen.add(p.engine)
        out.append(emitting.launch(p, ref))
    return out
