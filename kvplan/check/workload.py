"""Workload -> Deployments for `kvplan check`: `deployments()` finds the engine launch of a Workload (what a format
reader found, kvplan/check/items.py), expands what the file leaves to the environment (naming what it cannot), picks
the release the file pins and hands the command line to its engine's reader (vllm_serve, sglang_launch, trtllm_serve).
Pure of typer and rich."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from kvplan import engines
from kvplan.check import launch, nim, marks
from kvplan.check.deployment import Defaults, Deployment, LaunchContext
from kvplan.check.gpus import GpuEvidence, choose
from kvplan.check.items import Failure, Workload, calls_of
from kvplan.core.errors import KvplanError, UnsupportedError
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.check.readers import rl_rollout, sglang_launch, trtllm_serve, vllm_serve
else:  # each engine's command-line reader loads with the first launch of that engine
    rl_rollout = lazy.module("kvplan.check.readers.rl_rollout")
    sglang_launch = lazy.module("kvplan.check.readers.sglang_launch")
    trtllm_serve = lazy.module("kvplan.check.readers.trtllm_serve")
    vllm_serve = lazy.module("kvplan.check.readers.vllm_serve")


def deployments(workload: Workload, defaults: Defaults) -> list[Deployment | Failure]:
    """Every engine the workload starts, as a Deployment, or the error that stops it being judged."""
    def failure(err: KvplanError) -> Failure:
        return Failure(workload.source, workload.document, workload.name, workload.fmt, err)

    if workload.blocker is not None:
        return [failure(workload.blocker)]
    if workload.gpus.other:  # not a GPU: nothing in the command line could make it one
        try:
            choose(workload.gpus, None, None, where=workload.where)
        except KvplanError as err:
            return [failure(err)]
    try:
        if workload.engine_config is not None:
            engine, config = workload.engine_config
            return [_from_config(workload, engine, config, defaults)]
        calls = calls_of(workload)
    except KvplanError as err:
        return [failure(err)]
    if not calls:
        lines = (workload.script or "").strip().splitlines()
        text = marks.display(" ".join(workload.words))[:160] if workload.words else (lines[0][:160] if lines else "")
        engine = launch.image_engine(workload.image)
        why = (f"runs `{text}`, which kvplan does not read as a vLLM, SGLang or TensorRT-LLM launch" if text else
               "starts its image's own command, which the file does not show")
        if engine:
            why += f" (image {workload.image} is {launch.ENGINE_TITLES[engine]}'s: its arguments are made inside the container)"
        return [failure(UnsupportedError(why, where=workload.where, hint="name the engine command in the file to judge it"))]
    crowded = _sharing(calls, workload.env)
    out: list[Deployment | Failure] = []
    for index, call in enumerate(calls):
        if crowded:
            name = workload.name if len(calls) == 1 else f"{workload.name}#{index + 1}"
            out.append(Failure(workload.source, workload.document, name, workload.fmt, UnsupportedError(
                crowded, where=workload.where, hint="give each engine its own GPUs (CUDA_VISIBLE_DEVICES=0 / =1), "
                "or judge each launch alone with --vllm-args")))
            continue
        name = workload.name if len(calls) == 1 else f"{workload.name}#{index + 1}"
        try:
            out.append(_from_call(replace(workload, name=name), call, defaults))
        except KvplanError as err:
            out.append(Failure(workload.source, workload.document, name, workload.fmt, err))
    return out


# the trainers whose rollout kvplan reads (readers/rl_rollout.py): `python -m MODULE` -> framework
_ROLLOUT_MODULES = {"verl.trainer.main_ppo": "verl", "openrlhf.cli.train_ppo_ray": "OpenRLHF"}


def _rollout(workload: Workload, call: launch.EngineCall, framework: str, image: str | None, gpus: GpuEvidence,
             env: Mapping[str, Any], defaults: Defaults, notes: tuple[str, ...]) -> Deployment:
    """An RL trainer's rollout engine as the vLLM launch its framework builds (readers/rl_rollout.py): judged at the
    framework's entry point and vLLM release, when the file settles what else holds the GPUs as the engine starts
    (or --gpu-reserved says)."""
    rollout = rl_rollout.read(framework, call.args, where=workload.where)
    reasons = []
    if rollout.open_reading is not None:
        reasons.append(rollout.open_reading)
    if rollout.cotenant is not None and defaults.gpu_reserved_bytes is None:
        reasons.append(rollout.cotenant)
    ctx = _context(workload, launch.VLLM, image, gpus, env, defaults, notes + rollout.notes)
    if ctx.version is None and rollout.version is not None:
        ctx = replace(ctx, version=rollout.version, release_origin=rollout.version_origin)
    elif ctx.version is None:
        reasons.append(f"the file pins no {framework} release, and with it no vLLM release (verl 0.6.1 requires vllm "
                       "0.8.5 - 0.11.0, 0.7.0 0.8.5 - 0.12.0)")
    if reasons:
        read_words = marks.display(" ".join(rollout.words))
        raise UnsupportedError(f"starts {call.launcher}, an RL trainer whose rollout kvplan reads as vLLM `{read_words}` "
                               f"at the {rollout.entry} entry point, but " + "; and ".join(reasons), where=workload.where,
                               hint="give --gpu-reserved SIZE (what the trainer holds on each GPU when the rollout "
                                    "starts or wakes) and --vllm-version X, or judge the rollout with --vllm-args")
    vllm = engines.get("vllm")
    spelled = dict(rollout.spelled)
    ctx = replace(ctx, key=lambda dest: spelled.get(dest, "--" + dest.replace("_", "-")),
                  flag_style=rollout.framework != "verl")
    args = vllm_serve.refused_elsewhere(ctx, lambda v: vllm.options.parse_argv(list(rollout.words), where=workload.where,
                                                                               version=v, positional=False))
    dep = vllm_serve.read(args, ctx)
    options = tuple(dep.request.engine_options or ()) + ((vllm.releases.ENTRY_POINT_OPTION, rollout.entry),)
    return replace(dep, request=replace(dep.request, engine_options=options))


def _release(workload: Workload, engine: str, image: str | None, defaults: Defaults) -> tuple[str | None, str | None]:
    """(the release to judge by, where it came from): the image tag, else a pip pin, else --vllm-version."""
    pins = [p for p in ([launch.image_release(image)] + list(workload.pins)) if p is not None and p.engine == engine]
    pinned = next((p for p in pins if p.version), None)
    if pinned is not None:
        return pinned.version, pinned.origin
    if engine == launch.VLLM and defaults.vllm_version:
        return defaults.vllm_version, f"--vllm-version {defaults.vllm_version}" + (f"; {pins[0].origin}" if pins else "")
    if pins:
        return None, f"kvplan's default: {pins[0].origin}"
    return None, None


def _context(workload: Workload, engine: str, image: str | None, gpus: GpuEvidence, env, defaults: Defaults,
             notes: tuple[str, ...] = ()) -> LaunchContext:
    version, origin = _release(workload, engine, image, defaults)
    if engine == launch.VLLM and version is not None:
        releases = engines.get(engine).releases
        try:
            releases.release(version, where="image")
        except KvplanError:
            raise UnsupportedError(f"vLLM {version} ({origin}) is not modelled", where=workload.where,
                                   hint="kvplan mirrors vLLM " + ", ".join(r.mirrors for r in releases.RELEASES)
                                   + "; a file pinned to another release is judged once kvplan models it") from None
    return LaunchContext(source=workload.source, document=workload.document, where=workload.where, name=workload.name,
                         fmt=workload.fmt, base_dir=workload.base_dir, defaults=defaults, gpu=gpus, version=version,
                         release_origin=origin, host_paths=True, notes=tuple(workload.notes) + tuple(notes),
                         key=workload.key, flag_style=workload.flag_style, env=dict(env), whole_launch=True,
                         args_at_run=workload.args_at_run)


def _from_call(workload: Workload, call: launch.EngineCall, defaults: Defaults) -> Deployment:
    image = call.image or workload.image
    env = {**workload.env, **call.env}
    gpus = visible(_merge(workload.gpus, call.gpus), env)
    notes: list[str] = []
    if call.engine == launch.OTHER and nim.is_nim(image):  # NIM_* settings that give a vLLM launch, or why not
        call = nim.engine_call(replace(call, image=image), env, where=workload.where)
        notes.append(f"{nim.TITLE}: the vLLM release inside image {image} is not in the file; judged by the rules of "
                     "a launch that pins none")
    if call.engine == launch.OTHER:
        shown = marks.display(" ".join(call.args))[:160] if call.args else ""
        raise UnsupportedError(f"starts {call.launcher}" + (f" (`{shown}`)" if shown else "") + ", a server whose memory "
                               "kvplan does not model (it models vLLM, SGLang and TensorRT-LLM)", where=workload.where,
                               hint="nothing is assumed: judge this launch with the server's own tools")
    if call.engine == launch.RL_TRAINER:
        module = call.launcher.rsplit(" ", 1)[-1].rstrip(")")
        if module in _ROLLOUT_MODULES:
            return _rollout(workload, call, _ROLLOUT_MODULES[module], image, gpus, env, defaults, tuple(notes))
        raise UnsupportedError(
            f"starts {call.launcher}, an RL trainer: its rollout runs an inference engine in its own processes (vLLM's "
            "LLM class or AsyncLLM, with their own scheduler defaults, or SGLang's Engine) on the GPUs its actor and "
            "reference models train on; kvplan reads the rollouts of verl's main_ppo and OpenRLHF's train_ppo_ray",
            where=workload.where,
            hint="judge the rollout alone as a vllm.LLM(...) launch with --vllm-args and --gpu-reserved SIZE (what the "
                 "trainer holds on each GPU), or --engine-option entry_point=offline on kvplan estimate")
    if call.engine == launch.DYNAMO:
        raise UnsupportedError(f"an NVIDIA Dynamo worker ({call.launcher}): its engine settings are Dynamo's own flags "
                               "and --extra-engine-args, which kvplan does not read", where=workload.where,
                               hint="judge the engine's own command line or options file instead")
    if call.engine == launch.TRTLLM and call.subcommand == "disaggregated":
        raise UnsupportedError("trtllm-serve disaggregated starts its servers from a config file (-c)", where=workload.where,
                               hint="check that config file: kvplan reads it as a trtllm-disaggregated file")
    args, dropped = _strip_unresolved(call, workload.where, defaults)
    notes += dropped
    ctx = _context(workload, call.engine, image, gpus, env, defaults, tuple(notes))
    if call.engine == launch.VLLM:
        return vllm_serve.read_argv(args, ctx, positional=call.positional)
    if call.engine == launch.SGLANG:
        return sglang_launch.read_argv(args, ctx)
    return trtllm_serve.read_argv(args, ctx)


def _from_config(workload: Workload, engine: str, config: Any, defaults: Defaults) -> Deployment:
    gpus = visible(workload.gpus, workload.env)
    ctx = _context(workload, engine, workload.image, gpus, workload.env, defaults)
    if engine == launch.VLLM:
        if workload.fmt == "ray-serve":
            _exact_engine_args(config, where=workload.where, version=ctx.version)
        options = engines.get(engine).options
        args = vllm_serve.refused_elsewhere(ctx, lambda version: options.parse_config(config, where=workload.where,
                                                                                     version=version))
        return vllm_serve.read(args, replace(ctx, key=ctx.key or vllm_serve.key_style("vllm-config")))
    return trtllm_serve.read_llm_api(config, ctx)


def _exact_engine_args(config: Mapping, *, where: str, version: str | None) -> None:
    """Ray Serve LLM hands engine_kwargs to vLLM's AsyncEngineArgs(**kwargs): a key is a field's exact name (no
    argparse prefixes). One the judged release lacks is cannot judge: Ray picks the release, the file does not."""
    vllm = engines.get("vllm")
    releases = vllm.releases
    line = releases.release(version).line
    dests = set(vllm.options.options(line))
    for key in config:
        if str(key) != "model" and str(key).replace("-", "_") not in dests:
            raise UnsupportedError(f"engine_kwargs.{key} is not an engine argument of vLLM {releases.release(version).mirrors}",
                                   where=f"{where}: engine_kwargs.{key}",
                                   hint="the vLLM release is the Ray image's; pass --vllm-version for the release it bundles")


def _merge(base: GpuEvidence, extra: GpuEvidence | None) -> GpuEvidence:
    if extra is None:
        return base
    return GpuEvidence(count=extra.count if extra.count is not None else base.count,
                       count_where=extra.count_where if extra.count is not None else base.count_where,
                       labels=base.labels, vendor=extra.vendor or base.vendor, vendor_where=extra.vendor_where if extra.vendor else base.vendor_where,
                       other=base.other, all_devices=extra.all_devices or base.all_devices,
                       shared=base.shared or extra.shared)


def _devices(env: Mapping) -> frozenset[str] | None:
    """The devices a launch is limited to by its environment, or None (every GPU the container has)."""
    for name in _VISIBILITY:
        value = env.get(name)
        if value is None or marks.MARK in value or value.strip().lower() == "all":
            continue
        return frozenset(i.strip() for i in value.split(",") if i.strip())
    return None


def _sharing(calls: list, env: Mapping) -> str | None:
    """Why the engines a workload starts may share a GPU, when they may: each engine sizes its pool as if it had the
    card alone (vLLM's --gpu-memory-utilization is a share of the whole card), so two at 0.9 on one GPU cannot both
    start, though each alone passes (issue 26). Disjoint CUDA_VISIBLE_DEVICES lists keep them apart; so does srun,
    which places each job step on the resources it allocates. So do distinct `--node-rank`s: the per-node commands
    of one multi-node launch (SGLang's and vLLM's --nnodes / --node-rank, vLLM's data parallelism over nodes with
    --data-parallel-start-rank) run on different machines."""
    engines = [c for c in calls if c.engine in (launch.VLLM, launch.SGLANG, launch.TRTLLM) and not c.scheduled]
    if len(engines) < 2:
        return None
    ranks = [_node_rank(c.args) for c in engines]
    if None not in ranks and len(set(ranks)) == len(ranks):
        return None
    seen: list[frozenset[str] | None] = []
    for call in engines:
        devices = _devices({**env, **call.env})
        if any(other is None or devices is None or other & devices for other in seen):
            return (f"starts {len(engines)} engines that may share a GPU (no CUDA_VISIBLE_DEVICES keeps them apart); "
                    "kvplan judges an engine that has its GPUs to itself")
        seen.append(devices)
    return None


def _value(words: list[str], *flags: str) -> str | None:
    """The value a command line gives one of `flags` (`--flag V` or `--flag=V`), None when it gives none."""
    for i, word in enumerate(words):
        flag, eq, inline = word.partition("=")
        if flag in flags:
            return inline if eq else (words[i + 1] if i + 1 < len(words) else "")
    return None


def _node_rank(args) -> str | None:
    """Which node of a multi-node launch this command starts, when the command says so literally: SGLang's (and
    vLLM's) `--node-rank N`; vLLM's multi-node data parallelism (`--data-parallel-size-local` below
    `--data-parallel-size`) by its `--data-parallel-start-rank` (0 when not given: the head node). None when it gives
    none or leaves it to the environment ($RANK: two such commands may be the same node's)."""
    words = list(args)
    rank = _value(words, "--node-rank", "--node_rank")
    if rank is not None:
        return f"node {rank}" if rank.isdigit() else None
    local = _value(words, "--data-parallel-size-local", "--data_parallel_size_local", "-dpl")
    size = _value(words, "--data-parallel-size", "--data_parallel_size", "-dp")
    if local and size and local.isdigit() and size.isdigit() and int(local) < int(size):
        start = _value(words, "--data-parallel-start-rank", "--data_parallel_start_rank", "-dpr")
        start = "0" if start is None and "--headless" not in words else start
        return f"data-parallel rank {start}" if start is not None and start.isdigit() else None
    return None


# The variables that narrow the devices a process sees (CUDA: CUDA_VISIBLE_DEVICES, a list of indexes or UUIDs;
# the NVIDIA container runtime: NVIDIA_VISIBLE_DEVICES, the same or all/none/void). Wherever a launch sets them (a
# script's export or prefix, a Dockerfile ENV, a Kubernetes or compose environment), the engine gets that many GPUs:
# tensor parallel 2 under CUDA_VISIBLE_DEVICES=0 does not start (issue 26).
_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


def visible(gpus: GpuEvidence, env: Mapping) -> GpuEvidence:
    """`gpus` narrowed by the visibility variables of the launch's environment."""
    for name in _VISIBILITY:
        value = env.get(name)
        if value is None or marks.MARK in value:
            continue  # not set, or left to the environment: the file's own count stands
        text = value.strip()
        if name == "NVIDIA_VISIBLE_DEVICES" and text.lower() == "all":
            continue
        ids = [] if text.lower() in ("", "none", "void", "-1") else [i.strip() for i in text.split(",") if i.strip()]
        if any(i.upper().startswith("MIG-") for i in ids):
            gpus = replace(gpus, shared=gpus.shared or f"a MIG slice (environment {name}={text})")
        if gpus.count is None or len(ids) < gpus.count or (gpus.all_devices and not gpus.count):
            gpus = replace(gpus, count=len(ids), count_where=f"environment {name}={text}", all_devices=False)
    return gpus


# ------------------------------------------------------------------ values the file leaves to the environment

def _strip_unresolved(call: launch.EngineCall, where: str, defaults: Defaults) -> tuple[list[str], list[str]]:
    """The engine's arguments with unresolved values of options that do not change memory dropped (and noted);
    an unresolved value kvplan needs (the model, a size, a fraction) or an unresolved list of arguments is
    cannot judge, naming the variable."""
    args = list(call.args)
    if not any(marks.MARK in a for a in args):
        return args, []
    # flag -> (takes a value, changes memory), from the engine's own option table (its record's option part)
    info = engines.get(call.engine).options.option_info(defaults.vllm_version)
    out: list[str] = []
    notes: list[str] = []
    positional_seen = False
    i = 0

    def names(text: str) -> str:
        return ", ".join(f"${n}" if not n.startswith(("$", "`")) else n for n in marks.unresolved_names(text))

    while i < len(args):
        token = args[i]
        i += 1
        if token.startswith("-") and not token.startswith(marks.MARK):
            flag, eq, inline = token.partition("=")
            if marks.MARK in flag:
                raise UnsupportedError(f"an option's name is {names(flag)}, set outside the file", where=where,
                                       hint="give the value in the file, or judge the launch with --vllm-args")
            takes, relevant = info(flag)
            value = inline if eq else (args[i] if takes and i < len(args) else None)
            if value is not None and marks.MARK in value:
                if relevant:
                    raise UnsupportedError(f"{flag} is {names(value)}, set outside the file", where=where,
                                           hint="give its value in the file (or a ${VAR:-default}) to judge it")
                notes.append(f"{flag} {names(value)} is set outside the file; it does not change GPU memory")
                if takes and not eq:
                    i += 1
                continue
            out.append(token)
            if takes and not eq and i < len(args):
                out.append(args[i])
                i += 1
            continue
        if marks.MARK in token:
            if not positional_seen and call.positional:
                raise UnsupportedError(f"the model is {names(token)}, set outside the file", where=where,
                                       hint="give it in the file (or a ${VAR:-default}) to judge the launch")
            raise UnsupportedError(f"its arguments include {names(token)}, set outside the file", where=where,
                                   hint="give them in the file, or judge the launch with --vllm-args")
        positional_seen = True
        out.append(token)
    return out, notes
