"""Engine launches in the commands a deployment file runs: `vllm serve`, `python -m vllm.entrypoints.openai.api_server`,
`python -m sglang.launch_server`, `sglang serve`, `trtllm-serve`, NVIDIA Dynamo workers, and the wrappers around
them (`nohup`, `exec`, `env A=B`, `sh -c "..."`, `docker run [options] IMAGE ...`). Also the engine release a
file pins: an image tag (`vllm/vllm-openai:v0.8.5`, `lmsysorg/sglang:v0.4.5-cu125`) or a pip pin
(`pip install vllm==0.10.1`). Pure of typer and rich."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Mapping

from kvplan.check import marks
from kvplan.check.gpus import GpuEvidence
from kvplan.engines import lazy
from kvplan.core.errors import UnsupportedError
from kvplan.core.regex import Pattern

if TYPE_CHECKING:
    from kvplan.check import shell
else:  # the parser loads with the first text to split (a string command, a script); a list command needs none
    shell = lazy.module("kvplan.check.shell")

VLLM, SGLANG, TRTLLM, DYNAMO = "vllm", "sglang", "trtllm", "dynamo"
OTHER = "other"  # an LLM server kvplan does not model: found so that it is "cannot judge", never skipped
RL_TRAINER = "rl-trainer"  # an RL trainer whose rollout starts an engine in-process beside its training
ENGINE_TITLES = {VLLM: "vLLM", SGLANG: "SGLang", TRTLLM: "TensorRT-LLM", DYNAMO: "NVIDIA Dynamo"}

# LLM servers whose memory kvplan does not model, by the command that starts them (the last path component), by
# `python -m` module, and by image name: a file that starts one is cannot judge, naming it (a CI gate must never
# pass a launch it did not judge)
OTHER_COMMANDS = {
    "llama-server": "llama.cpp's llama-server", "llama-cli": "llama.cpp", "llamafile": "llamafile",
    "ollama": "Ollama", "text-generation-launcher": "Hugging Face TGI (text-generation-launcher)",
    "text-generation-server": "Hugging Face TGI", "lmdeploy": "LMDeploy", "mlc_llm": "MLC LLM",
    "tritonserver": "Triton Inference Server", "aphrodite": "Aphrodite Engine", "xinference": "Xinference",
    "xinference-local": "Xinference", "local-ai": "LocalAI", "mistralrs-server": "mistral.rs", "koboldcpp": "KoboldCpp",
    "tabbyapi": "TabbyAPI", "lorax-launcher": "LoRAX", "infinity_emb": "Infinity", "openllm": "OpenLLM",
}
OTHER_MODULES = {
    "llama_cpp.server": "llama-cpp-python's server", "lmdeploy": "LMDeploy", "mlc_llm": "MLC LLM",
    "text_generation_server": "Hugging Face TGI", "aphrodite": "Aphrodite Engine", "fastchat.serve": "FastChat",
    "xinference": "Xinference", "exllamav2": "ExLlamaV2", "mistralrs": "mistral.rs", "openllm": "OpenLLM",
}
# image repository (a substring of its path) -> the server it runs by default
OTHER_IMAGES = (
    ("text-generation-inference", "Hugging Face TGI"), ("ollama/ollama", "Ollama"), ("llama.cpp", "llama.cpp's server"),
    ("lmdeploy", "LMDeploy"), ("tritonserver", "Triton Inference Server"), ("nvcr.io/nim/", "NVIDIA NIM"),
    ("mlc-llm", "MLC LLM"), ("localai", "LocalAI"), ("lorax", "LoRAX"), ("xinference", "Xinference"),
)

# RL trainers that start an engine in-process (vllm.LLM or AsyncLLM, SGLang's Engine) as their rollout, on the GPUs their actor and
# reference models train on: `python -m` module prefix -> name (verl: verl/trainer/main_ppo.py and its siblings;
# OpenRLHF: openrlhf/cli/train_ppo_ray.py and the other CLIs that take --vllm_num_engines)
RL_TRAINER_MODULES = {"verl.trainer": "verl", "openrlhf.cli": "OpenRLHF"}

# python -m <module> -> (engine, launcher words as people write them, takes a positional model)
_MODULES = {
    "vllm.entrypoints.openai.api_server": (VLLM, False),
    "vllm.entrypoints.api_server": (VLLM, False),
    "sglang.launch_server": (SGLANG, False),
    "tensorrt_llm.commands.serve": (TRTLLM, True),
    "dynamo.trtllm": (DYNAMO, False),
    "dynamo.vllm": (DYNAMO, False),
    "dynamo.sglang": (DYNAMO, False),
}
# programs whose `serve` subcommand starts an engine -> (engine, takes a positional model)
_SERVE_PROGRAMS = {"vllm": (VLLM, True), "sglang": (SGLANG, False)}
# what an image's name says it runs, the first match winning: (engine, a word of the image's own name, a word of its
# repository path or None): vllm/vllm-openai and builds named vllm-*, lmsysorg/sglang, nvcr.io/.../tensorrt-llm/...
_IMAGE_MARKS = ((VLLM, "vllm", None), (SGLANG, "sglang", None), (TRTLLM, "trtllm", "tensorrt-llm"))
_SHELLS = {"sh", "bash", "dash", "zsh", "ash"}
_WRAPPERS = {"nohup", "exec", "time", "command", "stdbuf", "setsid", "numactl", "taskset", "tini", "dumb-init",
             "trtllm-llmapi-launch"}  # TensorRT-LLM's MPI launcher runs the command it is given
# Slurm's srun (its options are skipped: short ones take the next word as their value, long ones `--opt=value` or
# the next word when it is one of these) and containers run by apptainer / singularity `exec|run [options] IMAGE`
_SRUN_SHORT_VALUES = set("ANncpwGtJoeqxCDmBdFLMSTWZ")
_SRUN_LONG_VALUES = {"--nodes", "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--partition", "--nodelist",
                     "--gpus", "--gpus-per-node", "--gpus-per-task", "--gres", "--time", "--job-name", "--output",
                     "--error", "--account", "--qos", "--exclude", "--constraint", "--chdir", "--mem", "--mem-per-cpu",
                     "--mem-per-gpu", "--container-image", "--container-mounts", "--container-name", "--container-workdir",
                     "--export", "--mpi", "--distribution", "--cpu-bind", "--het-group", "--reservation"}
# (--overlap takes no value: srun(1) "--overlap: Allow steps to overlap each other on the CPUs"; it was read as taking
# the next word, so `srun --overlap bash -c "..."` ran nothing kvplan saw)
_CONTAINER_RUNNERS = {"apptainer", "singularity"}
_APPTAINER_VALUES = {"-B", "--bind", "--env", "--env-file", "-H", "--home", "--pwd", "-W", "--workdir", "--mount",
                     "-o", "--overlay", "--network", "--security", "--app"}


@dataclass(frozen=True, eq=False, repr=False)
class EngineCall:
    """One engine started by a command."""

    engine: str  # vllm | sglang | trtllm | dynamo
    launcher: str  # as the file starts it: 'vllm serve', 'python3 -m vllm.entrypoints.openai.api_server'
    args: tuple[str, ...]  # the engine's own arguments
    positional: bool = True  # whether the launcher takes the model as a positional argument (vllm serve does)
    env: Mapping[str, str | None] = field(default_factory=dict)  # variables set for this process by the command
    image: str | None = None  # `docker run IMAGE`
    gpus: GpuEvidence | None = None  # `docker run --gpus`
    subcommand: str | None = None  # trtllm-serve disaggregated; dynamo's module
    scheduled: bool = False  # started by a scheduler (srun) on the nodes it allocates, not on this host's GPUs


@dataclass(frozen=True, eq=False, repr=False)
class ReleasePin:
    """An engine release a file pins (an image tag, a pip install), and where."""

    engine: str
    version: str | None  # None: the file names the engine's image or package but no release ('latest', a date tag)
    origin: str  # 'image vllm/vllm-openai:v0.8.5', 'pip install vllm==0.10.1+gptoss'


# ------------------------------------------------------------------ commands

def calls_in_shell(text: str, env: Mapping[str, str | None] | None = None) -> list[EngineCall]:
    """Every engine launch of a shell text (ShellSyntaxError when it cannot be read). An `alias NAME='words'` is
    expanded where NAME starts a later command, as an interactive shell (or one with expand_aliases) would; `eval`
    runs text the reader does not see as commands, so a script with one is cannot judge, naming it (issue 26: a
    launch behind `eval "$CMD"` or an alias was skipped with exit 0)."""
    import shlex

    out: list[EngineCall] = []
    aliases: dict[str, list[str]] = {}
    for command in shell.commands(text, dict(env or {})):
        words = list(command.words)
        if words and words[0] == "alias":
            for definition in words[1:]:
                name, eq, value = definition.partition("=")
                if eq:
                    try:
                        aliases[name] = shlex.split(value)
                    except ValueError:
                        aliases[name] = [value]
            continue
        if words and words[0] in aliases:
            words = aliases[words[0]] + words[1:]
        if words and words[0] == "eval":
            shown = marks.display(" ".join(words))[:120]
            raise UnsupportedError(f"runs `{shown}` (line {command.line}): eval builds a command kvplan does not read "
                                   "as one", hint="write the launch out in the script, or judge it with --vllm-args")
        out.extend(calls_in_words(words, {**(env or {}), **command.env}))
    return out


def calls_in_words(words: list[str], env: Mapping[str, str | None] | None = None, *, image: str | None = None,
                   gpus: GpuEvidence | None = None) -> list[EngineCall]:
    """The engine launch (if any) of one command's words, after wrappers; an exec-form argv is such a list."""
    env = dict(env or {})
    words = list(words)
    while words:
        head = PurePosixPath(words[0]).name
        if head in _WRAPPERS:
            words = words[1:]
            while head in ("numactl", "taskset", "stdbuf") and words and words[0].startswith("-"):
                words = words[2:] if "=" not in words[0] and head == "taskset" else words[1:]
            continue
        if head == "sudo":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
            continue
        if head == "env":
            words = words[1:]
            while words and (words[0].startswith("-") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0], re.S)):
                if "=" in words[0] and not words[0].startswith("-"):
                    name, _, value = words[0].partition("=")
                    env[name] = None if marks.MARK in value else value
                words = words[1:]
            continue
        if words[:2] in (["uv", "run"], ["conda", "run"], ["mamba", "run"], ["pixi", "run"]):
            words = words[2:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-n", "--name", "-p", "--prefix", "--with", "--python") else words[1:]
            continue
        break
    if not words:
        return []
    head = PurePosixPath(words[0]).name
    if head == "srun":
        return [replace(c, scheduled=True) for c in calls_in_words(_after_srun(words[1:]), env, image=image, gpus=gpus)]
    if head == "ray" and words[1:3] == ["job", "submit"] and "--" in words[3:]:
        # `ray job submit [options] -- ENTRYPOINT...` (Ray's job CLI): the entrypoint runs on the cluster's nodes
        rest = words[3:]
        return [replace(c, scheduled=True) for c in calls_in_words(rest[rest.index("--") + 1:], env, image=image, gpus=gpus)]
    if head in _CONTAINER_RUNNERS and words[1:2] in (["exec"], ["run"]):
        rest = words[2:]
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in _APPTAINER_VALUES and "=" not in rest[0] else rest[1:]
        if len(rest) < 2:
            return []
        return calls_in_words(rest[1:], env, image=rest[0], gpus=gpus)
    if head in _SHELLS:
        script = _shell_script(words[1:])
        if script is None:
            return []
        try:
            return calls_in_shell(script, env)
        except shell.ShellSyntaxError as err:
            # the script may start a server: a text kvplan cannot read is said, never passed over as one that
            # starts nothing (issue 26: a container's unreadable `sh -c` was skipped)
            raise UnsupportedError(f"`{words[0]} -c` runs a script kvplan cannot read: {err}",
                                   hint="judge the launch it runs with --vllm-args") from None
    if head == "docker" and words[1:2] == ["run"]:
        return _docker_run(words[2:], env)
    if re.fullmatch(r"python(\d+(\.\d+)?)?", head):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]
        if len(rest) >= 2 and rest[0] == "-m":
            module = rest[1]
            if module == "vllm.entrypoints.cli.main" and rest[2:3] == ["serve"]:
                return [EngineCall(VLLM, f"{words[0]} -m {module} serve", tuple(rest[3:]), True, env, image, gpus)]
            if module in _MODULES:
                engine, positional = _MODULES[module]
                return [EngineCall(engine, f"{words[0]} -m {module}", tuple(rest[2:]), positional, env, image, gpus,
                                   subcommand=module if engine == DYNAMO else None)]
            title = next((t for m, t in OTHER_MODULES.items() if module == m or module.startswith(m + ".")), None)
            if title is not None:
                return [_other(title, words, env, image, gpus)]
            trainer = next((t for m, t in RL_TRAINER_MODULES.items() if module.startswith(m + ".")), None)
            if trainer is not None:
                return [EngineCall(RL_TRAINER, f"{trainer} ({words[0]} -m {module})", tuple(rest[2:]), False, env,
                                   image, gpus)]
        return []
    if head in _SERVE_PROGRAMS and words[1:2] == ["serve"]:
        engine, positional = _SERVE_PROGRAMS[head]
        return [EngineCall(engine, f"{head} serve", tuple(words[2:]), positional, env, image, gpus)]
    if head in OTHER_COMMANDS:
        return [_other(OTHER_COMMANDS[head], words, env, image, gpus)]
    if head == "trtllm-serve":
        if words[1:2] == ["disaggregated"]:
            return [EngineCall(TRTLLM, "trtllm-serve disaggregated", tuple(words[2:]), False, env, image, gpus,
                               subcommand="disaggregated")]
        if words[1:2] in (["mm_embedding_serve"], ["grpc"]):
            return []
        return [EngineCall(TRTLLM, "trtllm-serve", tuple(words[1:]), True, env, image, gpus)]
    return []


def _other(title: str, words: list[str], env, image, gpus) -> EngineCall:
    """A launch of a server kvplan does not model: `launcher` says which, `args` hold the whole command line."""
    return EngineCall(OTHER, title, tuple(words), False, env, image, gpus)


def other_server_image(image: str | None) -> str | None:
    """The server an image runs by default when kvplan does not model it (TGI, Ollama, llama.cpp, NIM, ...)."""
    if not image:
        return None
    repo = split_image(image)[0].lower()
    full = image.lower()
    return next((title for part, title in OTHER_IMAGES if part in repo or (part.endswith("/") and full.startswith(part))), None)


def _after_srun(args: list[str]) -> list[str]:
    """The command `srun [options] COMMAND...` runs."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i]
        if option.startswith("--"):
            i += 2 if "=" not in option and option in _SRUN_LONG_VALUES else 1
        else:
            i += 2 if len(option) == 2 and option[1] in _SRUN_SHORT_VALUES else 1
    return args[i:]


def _shell_script(args: list[str]) -> str | None:
    """The script of `sh -c SCRIPT [NAME [ARG...]]` (options such as -e, -x, -l may come first, or be combined: -lc;
    `--` may end them). The words after the script are its $0 and "$@" (a container's `command: [bash, -c, '... "$@"',
    --]` fed its `args:`): "$@" is replaced by them, quoted, before the script is read."""
    import shlex

    i = 0
    while i < len(args) and args[i].startswith("-"):
        if "c" in args[i][1:] and not args[i].startswith("--"):
            rest = args[i + 1:]
            if rest[:1] == ["--"]:
                rest = rest[1:]
            if not rest:
                return None
            script, positional = rest[0], rest[2:]
            if positional and "$@" in script:
                quoted = " ".join(shlex.quote(a) for a in positional)
                script = script.replace('"$@"', quoted).replace("${@}", quoted).replace("$@", quoted)
            return script
        i += 1
    return None


_DOCKER_VALUE_OPTIONS = {
    "-p", "--publish", "-v", "--volume", "-e", "--env", "-w", "--workdir", "--name", "--shm-size", "--gpus", "--runtime",
    "--network", "--net", "--ipc", "--entrypoint", "--env-file", "-u", "--user", "--mount", "--device", "--label", "-l",
    "--ulimit", "--cpus", "--memory", "-m", "--hostname", "-h", "--add-host", "--cap-add", "--cap-drop",
    "--security-opt", "--restart", "--log-driver", "--log-opt", "--platform", "--pull", "--tmpfs", "--volumes-from",
    "--cidfile", "--dns", "--group-add", "--pid", "--uts", "--cgroupns", "--memory-swap", "--cpuset-cpus", "--stop-signal",
}


def _docker_run(args: list[str], env: dict) -> list[EngineCall]:
    """`docker run [options] IMAGE [COMMAND...]`: the image, its GPUs and environment, and what it runs."""
    container_env: dict[str, str | None] = {}
    count = None
    all_devices = False
    vendor = None
    entrypoint = None
    gpus_given = None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option, eq, inline = args[i].partition("=")
        if option in _DOCKER_VALUE_OPTIONS:
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if eq else 2
        else:
            value = None
            i += 1
        if option == "--gpus" and value is not None:
            spec = value.strip("'\"")
            gpus_given = spec
            if spec == "all":
                all_devices = True
            elif spec.isascii() and spec.isdigit():  # '２' is no count (str.isdigit accepts it, int reads it)
                count = int(spec)
            else:
                ids = re.search(r"device=([\d,]+)", spec)
                count = len(ids.group(1).split(",")) if ids else None
            vendor = "nvidia"
        elif option == "--runtime" and value == "nvidia":
            vendor, all_devices = "nvidia", count is None
        elif option == "--device" and value and "/dev/kfd" in value:
            vendor = "amd"
        elif option in ("-e", "--env") and value:
            name, has, val = value.partition("=")
            container_env[name] = (None if marks.MARK in val else val) if has else env.get(name)
        elif option == "--entrypoint" and value:
            entrypoint = value
    if i >= len(args):
        return []
    image, command = args[i], args[i + 1:]
    evidence = GpuEvidence(count=count, count_where=f"docker run --gpus {gpus_given}: {count}" if count is not None else None,
                           vendor=vendor,
                           vendor_where="docker run --gpus" if vendor == "nvidia" else "docker run --device /dev/kfd",
                           all_devices=all_devices)
    other = other_server_image(image)
    if other is not None and not image_engine(image) and not (entrypoint or (command and calls_in_words(command))):
        if other == "NVIDIA NIM":  # its NIM_* settings may map to a vLLM launch (check/nim.py): keep what it runs
            return [EngineCall(OTHER, f"{other} (image {image})", tuple(command), False, container_env, image, evidence)]
        return [_other(f"{other} (image {image})", ["docker", "run", *args], container_env, image, None)]
    words = ([entrypoint] if entrypoint else []) + command
    if not words or (words[0].startswith("-") and not entrypoint):
        default = image_entrypoint(image)
        if default is None:
            return []
        words = default + words
    return calls_in_words(words, container_env, image=image, gpus=evidence)


# ------------------------------------------------------------------ images and releases

_IMAGE = re.compile(r"^(?:(?P<registry>[^/]+\.[^/]+(?::\d+)?|localhost(?::\d+)?)/)?(?P<repo>[^:@]+)(?::(?P<tag>[^@]+))?(?:@.+)?$")
_VERSION_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+)*(?:\.?(?:post|rc|dev)\d+)?)(?:[-+_].*)?")


def split_image(image: str) -> tuple[str, str | None]:
    """('vllm/vllm-openai', 'v0.8.5') for 'docker.io/vllm/vllm-openai:v0.8.5'."""
    m = _IMAGE.match(image.strip())
    if not m:
        return image, None
    return m.group("repo"), m.group("tag")


def image_engine(image: str | None) -> str | None:
    """The engine an image is built to run, by its name: vllm-openai (and builds named vllm-*), sglang, tensorrt-llm."""
    if not image:
        return None
    repo = split_image(image)[0].lower()
    name = repo.rsplit("/", 1)[-1]
    for engine, in_name, in_repo in _IMAGE_MARKS:
        if in_name in name or (in_repo is not None and in_repo in repo):
            return engine
    return None


def image_entrypoint(image: str | None) -> list[str] | None:
    """What a container of `image` runs when only arguments are given: vLLM's images start its OpenAI server
    (vllm/vllm-openai: ENTRYPOINT ["vllm", "serve"] in docker/Dockerfile, `python3 -m
    vllm.entrypoints.openai.api_server` in older releases: the same options). Builds named vllm-* are taken to
    keep that entrypoint, which the notes say."""
    return ["vllm", "serve"] if image_engine(image) == VLLM else None


def image_release(image: str | None) -> ReleasePin | None:
    """The engine release an image tag pins: vllm/vllm-openai:v0.8.5 -> vLLM 0.8.5; 'latest' pins none."""
    if not image:
        return None
    repo, tag = split_image(image)
    engine = None
    name = repo.lower().rsplit("/", 1)[-1]
    if name in ("vllm-openai", "vllm-openai-rocm") and repo.lower().startswith("vllm/"):
        engine = VLLM
    elif repo.lower() == "lmsysorg/sglang":
        engine = SGLANG
    elif repo.lower() in ("nvidia/tensorrt-llm/release", "nvidia/tensorrt-llm/devel"):
        engine = TRTLLM
    if engine is None:
        return None
    m = _VERSION_TAG.fullmatch(tag or "")
    return ReleasePin(engine, m.group(1) if m else None, f"image {image}")


_PIP_PIN = Pattern(r"(?<![\w.-])(vllm|sglang|tensorrt[-_]llm)(?:\[[^\]]*\])?==\s*([0-9][0-9A-Za-z.+!-]*)")
_PIP_ANY = Pattern(r"\b(?:pip3?|uv pip)\s+install\b[^\n]*?(?<![\w.-])[\"']?(vllm|sglang|tensorrt[-_]llm)\b")


def pip_release(text: str | None) -> ReleasePin | None:
    """The release a `pip install engine==X` in a setup script pins; an unpinned install pins none."""
    if not text:
        return None
    m = _PIP_PIN.search(text)
    engine_of = {"vllm": VLLM, "sglang": SGLANG, "tensorrt-llm": TRTLLM, "tensorrt_llm": TRTLLM}
    if m:
        return ReleasePin(engine_of[m.group(1)], m.group(2), f"pip install {m.group(1)}=={m.group(2)}")
    m = _PIP_ANY.search(text)
    if m:
        return ReleasePin(engine_of[m.group(1)], None, "pip install " + m.group(1) + " (no release pinned)")
    return None


def container_words(image: str | None, entrypoint: list[str] | None, command: list[str] | None
                    ) -> tuple[list[str] | None, str | None]:
    """What a container runs, as Docker and Kubernetes combine them: the file's entrypoint (Kubernetes `command`)
    replaces the image's, its command (Kubernetes `args`) follows. A file that gives only arguments runs them
    through the image's entrypoint, known for vLLM's images (image_entrypoint); a command that is itself an engine
    launch is taken as what runs. Returns (the words or None, a note when the image's entrypoint was assumed)."""
    if entrypoint:
        return list(entrypoint) + list(command or []), None
    if command and calls_in_words(list(command)):
        return list(command), None
    default = image_entrypoint(image)
    if default is not None:
        return default + list(command or []), (f"image {image}: the file gives only arguments; its entrypoint is taken "
                                               "to be vLLM's `vllm serve`")
    return (list(command) if command else None), None


def non_gpu_accelerator(image: str | None) -> str | None:
    """An image built for something that is not an NVIDIA or AMD GPU, by its name (OPEA's vllm-gaudi,
    vllm-openvino, the Neuron and TPU builds)."""
    if not image:
        return None
    name = split_image(image)[0].lower()
    if "gaudi" in name or "habana" in name:
        return f"Intel Gaudi HPUs (image {image})"
    if "neuron" in name:
        return f"AWS Neuron devices (image {image})"
    if "openvino" in name or name.endswith("-cpu") or "vllm-cpu" in name:
        return f"the CPU (image {image})"
    if "tpu" in name.split("/")[-1]:
        return f"Google TPUs (image {image})"
    return None
