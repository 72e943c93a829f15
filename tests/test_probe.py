"""kvplan probe on the CPU (and torch's meta device): layouts, byte-for-byte matches, find-max, the CLI.

The layout tests need no torch; the rest skip when torch is missing.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import weakref
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from kvplan.engines.static import kv_dtype as static_kv_dtype

from kvplan.model import catalog
from kvplan.core.layers import ENGINE_BASE_KINDS
from kvplan.core.cache import CacheModel, layer_token_bytes
from kvplan.core.dtypes import dtype as lookup_dtype
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.probe.layout import PAGED, STATIC, growth_unit, rank_plan

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def _spec(name: str):
    return catalog.resolve_model(str(CONFIGS / f"{name}.json"))


def _all_specs():
    """Every bundled spec (model_specs/*.yaml) and every config.json fixture, by a readable id."""
    out = {}
    try:
        for spec in catalog.bundled_specs():
            if any(layer.kind not in ENGINE_BASE_KINDS for layer in spec.layer_specs):
                continue  # a kind the probe refuses by name (exit 3; tests/test_models_2026.py): nothing to lay out
            out[f"bundled:{spec.name}"] = spec
    except (ModuleNotFoundError, FileNotFoundError):  # no bundled specs in this checkout yet
        pass
    for path in sorted(CONFIGS.glob("*.json")):
        try:
            out[f"config:{path.stem}"] = catalog.resolve_model(str(path))
        except KvplanError:  # a config kvplan refuses (exit 3) has no cache to probe
            continue
    return out


ALL_SPECS = _all_specs()


def _valid_tps(spec):
    heads = {layer.kv_heads for layer in spec.layer_specs if layer.kind in ("full", "sliding")}
    return [tp for tp in (1, 2, 4, 8) if all(h % tp == 0 or tp % h == 0 for h in heads)]


# ------------------------------------------------------------------ layouts (no torch)

def test_static_shapes_gqa_sliding_mla_state():
    llama = CacheModel(_spec("llama-3.1-8b"), lookup_dtype("bf16"))
    plan = rank_plan(llama, seq=1000, batch=3)
    (full,) = plan.groups
    assert full.label == "full" and len(full.layers) == 32
    k, v = full.tensors[:2]
    assert (k.role, k.shape, k.dtype, v.shape) == ("k", (3, 8, 1000, 128), "bfloat16", (3, 8, 1000, 128))

    gemma = CacheModel(_spec("gemma-2-9b"), lookup_dtype("fp8"))
    plan = rank_plan(gemma, seq=8192, batch=2)
    sliding = next(g for g in plan.groups if g.kind == "sliding")
    assert sliding.label == "sliding(4096)"
    assert sliding.tensors[0].shape == (2, 8, 4096, 256) and sliding.tensors[0].dtype == "float8_e4m3fn"

    ds = CacheModel(_spec("deepseek-v3"), lookup_dtype("bf16"), tp=8)
    (mla,) = rank_plan(ds, seq=64, batch=2).groups
    assert mla.tensors[0].role == "latent" and mla.tensors[0].shape == (2, 64, 576)  # whole on every TP rank

    jamba = CacheModel(_spec("jamba-1.5-mini"), lookup_dtype("bf16"), tp=2)
    state = next(g for g in rank_plan(jamba, seq=64, batch=3).groups if g.kind == "state")
    conv, rec = state.tensors[:2]
    assert conv.shape == (3, 4096, 3) and rec.shape == (3, 4096, 16)  # TP splits the channels


def test_int4_is_packed_two_to_a_byte():
    cache = CacheModel(_spec("llama-3.1-8b"), lookup_dtype("int4"))
    plan = rank_plan(cache, seq=10, batch=1)
    k = plan.groups[0].tensors[0]
    assert (k.dtype, k.shape) == ("uint8", (1, 8, 10, 64))
    assert plan.estimated_bytes == plan.planned_bytes == cache.footprint(10, 1).cache_bytes


@pytest.mark.parametrize("key", sorted(ALL_SPECS))
def test_static_plan_equals_cache_model_for_every_rank(key):
    spec = ALL_SPECS[key]
    for tp in _valid_tps(spec):
        for pp in (1, 3):
            cache = CacheModel(spec, lookup_dtype(spec.dtype), tp=tp, pp=pp)
            total = 0
            for stage in range(pp):
                plan = rank_plan(cache, seq=777, batch=2, stage=stage)
                assert plan.planned_bytes == plan.estimated_bytes == plan.footprint_bytes
                total += plan.estimated_bytes * tp
            assert total == cache.footprint(777, 2).cache_bytes


def test_paged_pools_hold_whole_blocks():
    cache = CacheModel(_spec("gemma-2-9b"), lookup_dtype("bf16"))
    exact = rank_plan(cache, seq=8192, batch=2, layout=PAGED, block_size=16)
    assert exact.estimated_bytes == exact.planned_bytes == exact.footprint_bytes  # seq is a multiple of 16
    sliding = next(g for g in exact.groups if g.kind == "sliding")
    assert sliding.tensors[0].shape == (2 * 4096 // 16, 16, 8, 256)
    ragged = rank_plan(cache, seq=8190, batch=2, layout=PAGED, block_size=16)
    assert ragged.estimated_bytes == ragged.planned_bytes == exact.estimated_bytes  # cdiv(8190, 16) = 512 blocks


def _scout_like(pattern=("chunked*3", "full"), chunk=8192):
    """Llama-4-Scout's attention: 48 layers, 8 KV heads of 128, chunked-local layers, every 4th full."""
    from kvplan.core.spec import spec_from_mapping

    return spec_from_mapping(dict(name="scout-like", layers=48, attention_heads=40, kv_heads=8, head_dim=128,
                                  dtype="bf16", params=108_000_000_000, attention_chunk_size=chunk,
                                  layout={"pattern": list(pattern)}, architecture="Llama4ForConditionalGeneration"))


def test_chunked_layers_static_layout_keeps_the_chunk():
    """transformers' StaticCache gives a chunked layer a rolling buffer of min(seq, chunk) tokens."""
    cache = CacheModel(_scout_like(), lookup_dtype("bf16"))
    plan = rank_plan(cache, seq=100_000, batch=2)
    chunked = next(g for g in plan.groups if g.kind == "chunked")
    full = next(g for g in plan.groups if g.kind == "full")
    assert chunked.label == "chunked(8192)" and len(chunked.layers) == 36 and len(full.layers) == 12
    assert chunked.tensors[0].shape == (2, 8, 8192, 128) and full.tensors[0].shape == (2, 8, 100_000, 128)
    # 2 sequences x 4,096 B a token x (36 x 8,192 + 12 x 100,000)
    assert plan.estimated_bytes == plan.planned_bytes == plan.footprint_bytes == 2 * 4096 * (36 * 8192 + 12 * 100_000)


def test_chunk_blocks_by_hand():
    from kvplan.core.layers import ChunkedLocal

    def chunk_blocks(seq, chunk, block_size):  # the layer's own rule, which the probe's paged pool uses
        return ChunkedLocal(window=chunk).blocks_held(seq, block_size)

    assert chunk_blocks(131072, 8192, 16) == 512  # B divides the chunk: cdiv(chunk, B)
    assert chunk_blocks(5000, 8192, 16) == 313  # one partial chunk: cdiv(5000, 16)
    # chunk 7, B 4: chunks start at 0, 7, 14, 21 (offsets 0, 3, 2, 1); [7, 13] spans blocks 1..3
    assert chunk_blocks(7, 7, 4) == 2 and chunk_blocks(14, 7, 4) == 3 and chunk_blocks(30, 7, 4) == 3
    assert chunk_blocks(10, 7, 4) == 2  # [7, 9]: blocks 1..2
    # chunk 6, B 4: offsets 0 and 2, (2 + 5) // 4 + 1 = 2 = cdiv(6, 4): never more
    assert chunk_blocks(600, 6, 4) == 2


def test_chunked_layers_paged_layout_holds_a_chunk_of_blocks():
    cache = CacheModel(_scout_like(), lookup_dtype("bf16"))
    plan = rank_plan(cache, seq=100_000, batch=2, layout=PAGED, block_size=16)
    chunked = next(g for g in plan.groups if g.kind == "chunked")
    full = next(g for g in plan.groups if g.kind == "full")
    assert chunked.tensors[0].shape == (2 * 512, 16, 8, 128)  # 2 sequences x 8,192 / 16
    assert full.tensors[0].shape == (2 * 6250, 16, 8, 128)  # 2 x cdiv(100,000, 16)
    assert plan.estimated_bytes == plan.planned_bytes == 2 * 16 * 4096 * (36 * 512 + 12 * 6250)
    assert "chunked layers" in plan.block_source
    # a chunk B does not divide can span one block more than cdiv(chunk, B): 7-token chunks in 4-token blocks
    odd = rank_plan(CacheModel(_scout_like(chunk=7), lookup_dtype("bf16")), seq=30, batch=1, layout=PAGED, block_size=4)
    assert next(g for g in odd.groups if g.kind == "chunked").tensors[0].shape == (3, 4, 8, 128)


def test_engine_plan_of_the_vllm_chunked_pool():
    from kvplan.engines import EngineRequest, vllm
    from kvplan.probe.layout import engine_rank_plan

    spec = _scout_like()
    req = EngineRequest(spec=spec, seq=131072, batch=1, kv_dtype="auto",
                        weight_fmt=None, kv_cache_memory=40 * 2**30)
    est = vllm.estimate(dataclasses.replace(req, engine_version="0.19"))
    plan = engine_rank_plan(CacheModel(spec, lookup_dtype("bf16")), est, stage=0)
    (pool,) = plan.groups
    # 4 groups (3 chunked, 1 full) of 12 layers share 12 slots of 54,613 pages of 65,536 B
    assert pool.kind == "pool" and len(pool.tensors) == 12 and pool.tensors[0].shape == (54_613, 65_536)
    assert plan.planned_bytes == plan.estimated_bytes == 54_613 * 12 * 65_536 and not plan.checks


def _engine_like(groups, *, num_blocks, group_size, bytes_per_block, stage=0):
    g = [SimpleNamespace(kind=k, window=w, block_size=bs, page_bytes=page) for k, w, bs, page in groups]
    return SimpleNamespace(kv_cache_groups=g, num_gpu_blocks=num_blocks, seq=4096, batch=1,
                           workers=[SimpleNamespace(stage=stage, group_size=group_size, bytes_per_block=bytes_per_block)])


def test_engine_plan_one_group_is_typed_per_layer():
    from kvplan.probe.layout import engine_rank_plan

    cache = CacheModel(_spec("llama-3.1-8b"), lookup_dtype("bf16"))
    page = 16 * 8 * 256 * 2
    plan = engine_rank_plan(cache, _engine_like([("full", None, 16, page)], num_blocks=100, group_size=32, bytes_per_block=32 * page),
                            stage=0)
    assert plan.groups[0].tensors[0].shape == (100, 16, 8, 128) and plan.block_size == 16
    assert plan.estimated_bytes == plan.planned_bytes == plan.footprint_bytes == 100 * 16 * cache.kv_bytes_per_token
    assert plan.reference == "vllm" and not plan.checks


def test_engine_plan_hybrid_uses_shared_slots_and_checks_pages():
    from kvplan.probe.layout import engine_rank_plan

    cache = CacheModel(_spec("jamba-1.5-mini"), lookup_dtype("bf16"))
    groups = [("mamba", None, 80, 327680)] * 7 + [("full", None, 80, 327680)]
    plan = engine_rank_plan(cache, _engine_like(groups, num_blocks=10, group_size=4, bytes_per_block=4 * 327680), stage=0)
    (pool,) = plan.groups
    assert pool.kind == "pool" and len(pool.tensors) == 4 and pool.tensors[0].shape == (10, 327680)
    assert plan.estimated_bytes == plan.footprint_bytes == 10 * 4 * 327680 and not plan.checks
    small = [("mamba", None, 16, 65536)] * 7 + [("full", None, 16, 65536)]  # a state of 311,296 B cannot fit a 64 KiB page
    bad = engine_rank_plan(cache, _engine_like(small, num_blocks=10, group_size=4, bytes_per_block=4 * 65536), stage=0)
    assert bad.checks and "does not fit" in bad.checks[0]
    with pytest.raises(InputError):
        engine_rank_plan(cache, SimpleNamespace(kv_cache_groups=(), workers=(), num_gpu_blocks=None), stage=0)


def test_engine_plan_equals_the_vllm_engine_for_every_spec():
    vllm = pytest.importorskip("kvplan.engines.vllm.engine")
    from kvplan.core.errors import KvplanError
    from kvplan.probe.layout import engine_rank_plan

    checked = 0
    for key, spec in ALL_SPECS.items():
        for pp in (1, 2):
            req = _request_plain(spec, seq=8192, pp=pp, kv_cache_memory=1 << 30)
            try:
                est = vllm.estimate(req)
            except KvplanError:
                continue  # what vLLM refuses, the probe cannot lay out
            if est.num_gpu_blocks is None:
                continue
            cache = CacheModel(spec, lookup_dtype(est.kv_dtype), pp=pp)
            for stage in range(pp):
                plan = engine_rank_plan(cache, est, stage=stage)
                assert plan.planned_bytes == plan.estimated_bytes == est.num_gpu_blocks * est.workers[stage].bytes_per_block, key
                assert not plan.checks, (key, plan.checks)
                checked += 1
    assert checked >= 20


@pytest.mark.parametrize("config", ["nvidia--GLM-5-NVFP4.json", "MiniMaxAI--MiniMax-M3.json",
                                    "nvidia--DeepSeek-V4-Flash-NVFP4.json"])
def test_find_max_and_engine_pools_refuse_kinds_the_probe_cannot_lay_out(config):
    # the probe allocates what each layer's token_tensors name, and only for the kinds it knows (ENGINE_BASE_KINDS):
    # growing GLM-5 sequences once counted its indexed-latent bytes in the estimate but allocated no tensor for them
    spec = catalog.resolve_model(str(CONFIGS.parent / "hf_configs_2026" / config))
    cache = CacheModel(spec, lookup_dtype("bf16"))
    for layout in (STATIC, PAGED):
        with pytest.raises(UnsupportedError, match="the probe does not model"):
            growth_unit(cache, layout=layout, stage=0, seq=4096, block_size=None)
    from kvplan.probe.layout import engine_rank_plan

    pool = _engine_like([("mla", None, 16, 1 << 20)], num_blocks=10, group_size=1, bytes_per_block=1 << 20)
    with pytest.raises(UnsupportedError, match="the probe does not model"):
        engine_rank_plan(cache, pool, stage=0)


def _request_plain(spec, *, seq, batch=1, tp=1, pp=1, kv_cache_memory=None):
    from kvplan.engines import EngineRequest

    return EngineRequest(spec=spec, seq=seq, batch=batch, kv_dtype="auto", weight_fmt=None,
                         tp=tp, pp=pp, kv_cache_memory=kv_cache_memory)


def test_growth_units():
    cache = CacheModel(_spec("jamba-1.5-mini"), lookup_dtype("bf16"))
    seqs = growth_unit(cache, layout=STATIC, stage=0, seq=256, block_size=None)
    assert seqs.estimated_bytes == cache.footprint(256, 1).cache_bytes == sum(t.nbytes for t in seqs.tensors(1))
    blocks = growth_unit(cache, layout=PAGED, stage=0, seq=256, block_size=16)
    assert blocks.estimated_bytes == 16 * cache.kv_bytes_per_token == sum(t.nbytes for t in blocks.tensors(1))
    with pytest.raises(UnsupportedError):
        growth_unit(CacheModel(_spec("falcon-mamba-7b"), lookup_dtype("bf16")), layout=PAGED, stage=0, seq=8, block_size=16)


# ------------------------------------------------------------------ torch on the CPU

torch = pytest.importorskip("torch")

from kvplan.probe.device import CpuDevice, MetaDevice  # noqa: E402
from kvplan.probe.runner import ProbeOptions, run_probe  # noqa: E402


def _request(spec, *, seq, batch=1, kv="auto", tp=1, pp=1):
    from kvplan.core.dtypes import resolve_kv_dtype
    from kvplan.engines import EngineRequest

    return EngineRequest(spec=spec, seq=seq, batch=batch, kv_dtype=kv,
                         weight_fmt=None, tp=tp, pp=pp)


class TrackingCpu(CpuDevice):
    """The CPU device, keeping a weak reference to every tensor it hands out."""

    def __init__(self, torch, fail_at: int | None = None, exc: BaseException | None = None):
        super().__init__(torch)
        self.refs: list = []
        self.fail_at, self.exc = fail_at, exc

    def empty(self, shape, dtype_name):
        if self.fail_at is not None and len(self.refs) == self.fail_at:
            raise self.exc
        t = super().empty(shape, dtype_name)
        self.refs.append(weakref.ref(t))
        return t

    def alive(self) -> int:
        gc.collect()
        return sum(r() is not None for r in self.refs)


@pytest.mark.parametrize("key", sorted(ALL_SPECS))
def test_every_spec_matches_on_cpu_in_both_layouts(key):
    """Acceptance: measured tensor bytes == `kvplan estimate`'s cache_bytes, static and paged."""
    from kvplan.engines import static

    spec = ALL_SPECS[key]
    req = _request(spec, seq=64, batch=2)
    expected = static.estimate(req).cache_bytes
    for layout in (STATIC, PAGED):
        res = run_probe(req, ProbeOptions(layout=layout, device="cpu", touch=False), torch=torch, dist_env=False)
        assert res.match, (layout, res.notes)
        assert res.measured_bytes == res.estimated_bytes == expected  # 64 tokens = 4 whole blocks of 16
        assert all(g.match for g in res.groups)


@pytest.mark.parametrize("key", sorted(ALL_SPECS))
def test_every_spec_matches_on_meta_at_full_size(key):
    """The meta device checks real sizes (32K tokens x 8, fp8 too) without memory."""
    spec = ALL_SPECS[key]
    for kv in ("auto", "fp8"):
        req = _request(spec, seq=32768, batch=8, kv=kv)
        whole = CacheModel(spec, static_kv_dtype(req)).footprint(32768, 8).cache_bytes
        for layout in (STATIC, PAGED):
            res = run_probe(req, ProbeOptions(layout=layout, device="meta"), torch=torch, dist_env=False)
            assert res.match and res.measured_bytes == res.estimated_bytes, (kv, layout)
            if layout == STATIC:
                assert res.measured_bytes == whole
            else:  # whole blocks of 16: a window like Phi-3's 2047 tokens rounds up to 128 blocks
                slack = 8 * 16 * sum(layer_token_bytes(layer, static_kv_dtype(req)) for layer in spec.layer_specs)
                assert whole <= res.measured_bytes <= whole + slack


def test_cpu_counters_and_release():
    dev = TrackingCpu(torch)
    # 64 MiB: above glibc's largest dynamic mmap threshold (32 MiB on 64-bit), so the cache gets fresh pages whatever
    # earlier tests in this process freed; at 32 MiB the heap reused resident pages and the RSS delta fell short
    req = _request(_spec("llama-3.1-8b"), seq=256, batch=2)
    res = run_probe(req, ProbeOptions(device="cpu"), torch=torch, device=dev, dist_env=False)
    assert res.device == "cpu" and res.match and res.measured_bytes == 2 * 256 * 131072
    assert res.rss_delta_bytes is not None and res.rss_delta_bytes > res.measured_bytes // 2  # pages were written
    assert res.requested_delta_bytes is None and res.driver_delta_bytes is None
    assert dev.refs and dev.alive() == 0


@pytest.mark.parametrize("layout", [STATIC, PAGED])
@pytest.mark.parametrize("name,seq,kv", [("llama-3.1-8b", 256, "bf16"), ("gemma-2-9b", 5000, "fp8"), ("jamba-1.5-mini", 100, "bf16"),
                                         ("deepseek-v3", 64, "fp8")])
def test_find_max_equals_the_prediction_exactly(name, seq, kv, layout):
    from kvplan.engines import static

    spec = _spec(name)
    req = _request(spec, seq=seq, kv=kv)
    unit = growth_unit(CacheModel(spec, static_kv_dtype(req)), layout=layout, stage=0, seq=seq, block_size=16)
    for budget in (unit.estimated_bytes * 5, unit.estimated_bytes * 5 - 1, unit.estimated_bytes * 3 + unit.estimated_bytes // 2):
        dev = TrackingCpu(torch)
        # touch=False: page faults are slow in sandboxes, and the budget logic does not need the pages
        res = run_probe(req, ProbeOptions(layout=layout, device="cpu", find_max=True, max_bytes=budget, touch=False), torch=torch,
                        device=dev, dist_env=False)
        fm = res.find_max
        assert fm.measured_max == fm.predicted_max == budget // unit.estimated_bytes
        assert fm.match and fm.limited_by == "budget" and fm.measured_bytes <= budget
        assert dev.alive() == 0
        if layout == STATIC:  # the planner's own answer for the same cache budget
            planned = static.estimate(dataclasses.replace(req, kv_cache_memory=budget))
            assert planned.max_batch == fm.measured_max


def test_memory_is_released_on_every_path():
    req = _request(_spec("llama-3.1-8b"), seq=64, batch=1)
    # an error in the middle of the allocation
    dev = TrackingCpu(torch, fail_at=10, exc=RuntimeError("boom"))
    with pytest.raises(RuntimeError):
        run_probe(req, ProbeOptions(device="cpu"), torch=torch, device=dev, dist_env=False)
    assert len(dev.refs) == 10 and dev.alive() == 0
    # Ctrl-C
    dev = TrackingCpu(torch, fail_at=7, exc=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        run_probe(req, ProbeOptions(device="cpu"), torch=torch, device=dev, dist_env=False)
    assert dev.alive() == 0
    # Ctrl-C while growing
    dev = TrackingCpu(torch, fail_at=100, exc=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        run_probe(req, ProbeOptions(device="cpu", find_max=True, max_bytes=1 << 30), torch=torch, device=dev, dist_env=False)
    assert dev.alive() == 0
    # an out-of-memory error from the allocator
    dev = TrackingCpu(torch, fail_at=5, exc=RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate"))
    from kvplan.probe import ProbeOutOfMemory

    with pytest.raises(ProbeOutOfMemory):
        run_probe(req, ProbeOptions(device="cpu"), torch=torch, device=dev, dist_env=False)
    assert dev.alive() == 0
    # the benchmark holds views of the cache while it runs
    dev = TrackingCpu(torch)
    res = run_probe(req, ProbeOptions(device="cpu", bench=True), torch=torch, device=dev, dist_env=False)
    assert res.bench is not None and dev.alive() == 0


def test_cpu_refuses_more_than_the_host_has():
    from kvplan.probe import ProbeOutOfMemory

    dev = TrackingCpu(torch)
    dev._read_available = lambda: 1 << 20
    with pytest.raises(ProbeOutOfMemory, match="available"):
        run_probe(_request(_spec("llama-3.1-8b"), seq=64, batch=1), ProbeOptions(device="cpu"), torch=torch, device=dev,
                  dist_env=False)
    assert dev.refs == []


def test_bench_on_cpu_reports_bandwidth_and_time_per_token():
    req = _request(_spec("deepseek-v3"), seq=32, batch=1, pp=8)  # MLA; a stage of ~8 layers
    res = run_probe(req, ProbeOptions(device="cpu", bench=True), torch=torch, dist_env=False)
    b = res.bench
    (g,) = b.groups
    assert g.label == "mla" and g.bytes_per_layer == 32 * 576 * 2
    assert b.kv_bytes_per_step == g.layers * g.bytes_per_layer == res.measured_bytes
    assert b.seconds_per_token > 0 and b.achieved_bytes_per_s > 0 and b.gpu is None  # no catalog entry for a CPU


# ------------------------------------------------------------------ the command line

def test_cli_probe_json_contract(cli):
    code, out, _ = cli("probe", CONFIGS / "gemma-2-9b.json", "--seq", "300", "--batch", "2", "--device", "cpu", "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("device", "estimated_bytes", "measured_bytes", "match", "groups", "ranks", "rss_delta_bytes",
                "reserved_delta_bytes", "driver_delta_bytes", "allocated_delta_bytes", "requested_delta_bytes"):
        assert key in data
    assert data["device"] == "cpu" and data["match"] is True
    assert data["estimated_bytes"] == data["measured_bytes"] == data["whole_model_estimated_bytes"]
    assert {g["label"] for g in data["groups"]} == {"full", "sliding(4096)"}


def test_cli_probe_text_and_find_max(cli):
    code, out, _ = cli("probe", CONFIGS / "qwen2.5-7b.json", "--seq", "64", "--device", "cpu")
    assert code == 0 and "total" in out and "yes" in out
    code, out, _ = cli("probe", CONFIGS / "qwen2.5-7b.json", "--seq", "64", "--device", "cpu", "--find-max", "--max-bytes", "10MiB",
                       "--layout", "paged", "--json")
    fm = json.loads(out)["find_max"]
    assert code == 0 and fm["unit"] == "blocks" and fm["measured_max"] == fm["predicted_max"] == (10 << 20) // fm["unit_bytes"]


def test_cli_mismatch_exits_1(cli, monkeypatch):
    from kvplan.probe import layout

    real = layout._static_estimate
    monkeypatch.setattr(layout, "_static_estimate", lambda *a: real(*a) + 1)
    code, out, _ = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16", "--device", "cpu", "--json")
    assert code == 1 and json.loads(out)["match"] is False


@pytest.mark.parametrize("args,code,text", [
    (["--device", "cuda"], 2, "--device"),  # this torch is a CPU build (or sees no GPU)
    (["--device", "tpu"], 2, "unknown device"),
    (["--find-max"], 2, "--max-bytes"),  # the OS would kill, not refuse
    (["--max-bytes", "1GiB"], 2, "--find-max"),
    (["--num-blocks", "4"], 2, "--layout paged"),
    (["--bench", "--kv-dtype", "fp8"], 3, "--bench"),
    (["--bench", "--layout", "paged"], 2, "--bench"),
    (["--layout", "ring"], 2, "--layout"),
    (["--stage", "3"], 2, "--stage"),
])
def test_cli_refusals(cli, args, code, text):
    if args == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    got, out, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16", "--device", "cpu", *args)
    assert got == code, err
    assert err.startswith("error: ") and text in err and "Traceback" not in err and out == ""


def test_cli_missing_torch(cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code, out, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16")
    assert code == 2 and "pip install 'kvplan[probe]'" in err and "Traceback" not in err


def test_cli_ctrl_c_frees_and_exits_130(cli, monkeypatch):
    refs = []
    real = CpuDevice.empty

    def empty(self, shape, dtype_name):
        if len(refs) == 20:
            raise KeyboardInterrupt
        t = real(self, shape, dtype_name)
        refs.append(weakref.ref(t))
        return t

    monkeypatch.setattr(CpuDevice, "empty", empty)
    code, _, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16", "--device", "cpu")
    assert code == 130 and "interrupted" in err
    gc.collect()
    assert all(r() is None for r in refs)


def test_cli_engine_without_budget_is_refused(cli):
    code, _, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16", "--device", "meta", "--engine", "vllm")
    assert code in (2, 3) and err.startswith("error: ")
    code, _, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "16", "--device", "meta", "--engine", "vllm", "--layout", "static")
    assert code == 2 and "--layout" in err


def test_cli_engine_vllm_pool_when_the_engine_exists(cli):
    pytest.importorskip("kvplan.engines.vllm.engine")
    for model in ("llama-3.1-8b", "gemma-2-9b", "jamba-1.5-mini", "deepseek-v3"):
        code, out, err = cli("probe", CONFIGS / f"{model}.json", "--seq", "4096", "--device", "cpu", "--no-touch", "--engine", "vllm",
                             "--kv-cache-memory", "64MiB", "--json")
        assert code == 0, err
        data = json.loads(out)
        assert data["layout"] == "paged" and data["match"] and 0 < data["measured_bytes"] <= 64 << 20
        assert data["blocks_source"].startswith("vllm: num_gpu_blocks")


def test_default_max_fraction_is_exact():
    from kvplan.probe.runner import DEFAULT_MAX_FRACTION

    assert DEFAULT_MAX_FRACTION == Fraction(95, 100)


def test_meta_device_has_no_counters():
    dev = MetaDevice(torch)
    assert dev.counters().rss is None and dev.free_bytes() is None


_TRUTH = json.loads((Path(__file__).parent / "data" / "transformers_truth.json").read_text())


@pytest.mark.parametrize("name", sorted(n for n, e in _TRUTH["configs"].items() if e["built"] and e["state_bytes"] == 0))
def test_probe_allocates_what_transformers_allocates(name):
    """The probe's static tensors on `meta`, against an independent peer: the K/V bytes transformers' StaticCache
    allocated for the same config at the same length (tests/data/transformers_truth.json, bf16, batch 1)."""
    spec = catalog.resolve_model(str(CONFIGS / name))
    n = _TRUTH["n_tokens"]
    req = _request(spec, seq=n, batch=_TRUTH["batch"], kv="bf16")
    res = run_probe(req, ProbeOptions(layout=STATIC, device="meta"), torch=torch, dist_env=False)
    assert res.match and res.measured_bytes == _TRUTH["configs"][name]["kv_bytes"]
