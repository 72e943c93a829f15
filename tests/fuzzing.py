"""The contract fuzzer (issue 15), shared by tests/test_fuzz.py (a bounded run on every suite run) and
scripts/fuzz.py (a longer run before a release, reporting the inputs tried and every failure).

Hostile inputs are generated in the classes issue 15 lists: binary and non-UTF-8 bytes, byte-order marks, deep
nesting, YAML alias bombs, huge and tiny numbers, NaN / inf, wrong types, unknown keys, empty and whitespace files,
and flags drawn from the same classes. Each goes to a kvplan command in-process (the real typer app), and the
contract is checked on every call:

- the exit code is one of 0, 1, 2, 3;
- no traceback, and no exception escapes the command;
- on 2 and 3, stderr's last non-note line is one `error: <where> — <what>` line;
- with --json, stdout is exactly one JSON object;
- the same input gives the same bytes twice (determinism);
- every call returns within BOUND_S (a SIGALRM timer in the harness, not a timed assertion about speed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

NUMBERS = st.sampled_from(["0", "-1", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "1" * 5000, "0.0000001",
                           "18446744073709551617", "１２", "0x10", "1_000", "", " ", "80GiB", "-80GiB", "1e-30"])
WORDS = st.sampled_from(["", "a", "llama-3.1-8b", "../../etc/passwd", "\x1b[31mred", "name\nwith: newline #x",
                         "=HYPERLINK(\"x\")", "{{PLACEHOLDER}}", "[/x]", ":smile:", "\u202e", "\x00"])
SCALARS = st.one_of(NUMBERS, WORDS, st.booleans(), st.none(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True))
KEYS = st.sampled_from(["model", "engine", "gpu", "gpu_memory", "tensor_parallel_size", "max_model_len",
                        "kv_cache_dtype", "gpu_memory_utilization", "require", "services", "apiVersion", "kind",
                        "spec", "layers", "kv_heads", "head_dim", "num_hidden_layers", "num_attention_heads",
                        "num_key_value_heads", "hidden_size", "torch_dtype", "prompt_tokens", "output_tokens",
                        "requests", "unknown_key", "max-model-len", "tensor-parallel-size"])


def _values(depth: int = 3):
    if depth == 0:
        return SCALARS
    inner = _values(depth - 1)
    return st.one_of(SCALARS, st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4))


MAPPINGS = st.dictionaries(KEYS, _values(), max_size=6)


def _yaml(data) -> str:
    import yaml

    return yaml.safe_dump(data, allow_unicode=True)


SPECIAL_FILES = st.sampled_from([
    b"", b"   \n\t\n", b"\xef\xbb\xbfmodel: llama-3.1-8b\nengine: vllm\n", b"\xff\xfe\x00m\x00o", bytes(range(256)),
    b"[" * 5000 + b"]" * 5000, b"{" * 5000, b"- " * 3000 + b"x",
    # an alias bomb: nine levels of ten aliases each
    ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                                                for p, c in zip("abcdefgh", "bcdefghi"))).encode(),
    b"model: llama-3.1-8b\nmodel: llama-3.1-70b\n", b"key: value\n---\n: :\n", b"\x00\x00\x00\x00",
    b"%YAML 9.9\n---\nx: 1\n", b"!!python/object:os.system ['true']\n", b"model: !!binary AAAA\n",
])

FILES = st.one_of(SPECIAL_FILES, MAPPINGS.map(lambda d: _yaml(d).encode()),
                  MAPPINGS.map(lambda d: json.dumps(d, default=str).encode()),
                  st.binary(max_size=200))

SUFFIXES = st.sampled_from([".yaml", ".yml", ".json", ".log", ".csv", ".sh", ""])

# GPU names: catalog names and aliases with the WSL2 qualifier (catalog.find_gpu), mangled and hostile ones
GPU_NAMES = st.one_of(
    st.builds(lambda base, tail: base + tail,
              st.sampled_from(["h100", "rtx-3090", "RTX 5090", "gb10", "mi300x", "a10g", "h100-pcie-80gb", "", " "]),
              st.sampled_from(["", "@wsl", "@WSL2", "@wsl@wsl", "@wsl2x", " @wsl", "@", "@@wsl"])),
    st.text(max_size=30))


@dataclass(frozen=True)
class Call:
    """One command line; FILE in it is replaced by the generated file's path."""

    args: tuple[str, ...]
    json_out: bool


def calls():
    """Command lines over every command, with the generated file and generated flag values in them."""
    num = NUMBERS
    return st.one_of(
        st.builds(lambda: Call(("check", "FILE", "--json"), True)),
        st.builds(lambda g: Call(("check", "FILE", "--gpu-mem", g, "--format", "junit"), False), num),
        st.builds(lambda: Call(("estimate", "FILE", "--json"), True)),
        st.builds(lambda s, b: Call(("estimate", "llama-3.1-8b", "--seq", s, "--batch", b, "--gpu", "h100", "--json"),
                                    True), num, num),
        st.builds(lambda g: Call(("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", g, "--json"), True),
                  GPU_NAMES),
        st.builds(lambda u: Call(("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--gpu-util", u,
                                  "--json"), True), num),
        st.builds(lambda: Call(("show", "FILE"), False)),
        st.builds(lambda: Call(("calibrate", "FILE", "--json"), True)),
        st.builds(lambda: Call(("simulate", "llama-3.1-8b", "-w", "FILE", "--gpu", "h100", "--json"), True)),
        st.builds(lambda s: Call(("sweep", "llama-3.1-8b", "--seq", s, "-f", "csv"), False), num),
        st.builds(lambda s: Call(("explain", "FILE", "--seq", s, "--json"), True), num),
        st.builds(lambda s: Call(("plan", "llama-3.1-8b", "--concurrency", s, "--seq", "4K", "--json"), True), num),
    )


@dataclass(frozen=True)
class Result:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None


# every call must return within this bound (issue 15: inputs hung commands); far above any real call's time
BOUND_S = 60


class DidNotReturn(Exception):
    pass


def _too_long(signum, frame):  # noqa: ARG001 - a signal handler's signature
    raise DidNotReturn(f"did not return within {BOUND_S} s")


def invoker():
    """Run `kvplan ARGS` in-process through the real entry point (kvplan.cli.main: usage errors become the
    contract's line there), capturing stdout, stderr and the exit code."""
    import contextlib
    import io
    import signal
    import sys

    from kvplan.cli import entry

    def run(args) -> Result:
        out, err = io.StringIO(), io.StringIO()
        argv, sys.argv = sys.argv, ["kvplan", *args]
        code, exc = 0, None
        previous = signal.signal(signal.SIGALRM, _too_long)
        signal.setitimer(signal.ITIMER_REAL, BOUND_S)  # a hang is a violation, not a stuck suite
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    entry.main()
                except SystemExit as stop:
                    code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException as escaped:  # noqa: BLE001 - what the fuzzer looks for
            code, exc = -1, escaped
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            sys.argv = argv
        return Result(code, out.getvalue(), err.getvalue(), exc)

    return run


# the reprs of the exact number types kvplan computes with, which no message may show
REPR = re.compile(r"\b(?:Fraction|Decimal)\([^)]*\)")


def violations(invoke, call: Call, path: Path) -> list[str]:
    """What one call breaks of the contract (empty: it keeps it)."""
    args = tuple(str(path) if a == "FILE" else a for a in call.args)
    result = invoke(args)
    problems = []
    if result.exception is not None:
        problems.append(f"exception escaped: {result.exception!r}")
    if "Traceback" in result.stderr or "Traceback" in result.stdout:
        problems.append("a traceback was printed")
    if result.exit_code not in (0, 1, 2, 3):
        problems.append(f"exit code {result.exit_code}")
    raw = REPR.search(result.stdout + result.stderr)
    if raw:  # a Python repr is not a message: '1.5', not 'Fraction(3, 2)' (issue 26)
        problems.append(f"a Python repr in the output: {raw.group(0)!r}")
    if result.exit_code in (2, 3):
        lines = [ln for ln in result.stderr.splitlines() if ln.strip() and not ln.startswith("note:")]
        if not lines or not lines[-1].startswith("error: "):
            problems.append(f"no `error:` line on exit {result.exit_code}: {result.stderr[-200:]!r}")
    if call.json_out and result.exit_code in (0, 1, 2, 3):
        try:
            obj = json.loads(result.stdout)
            if not isinstance(obj, dict):
                problems.append("--json printed something other than one object")
        except ValueError:
            problems.append(f"--json stdout is not one JSON object: {result.stdout[:200]!r}")
    again = invoke(args)
    if (again.exit_code, again.stdout) != (result.exit_code, result.stdout):
        problems.append("the same input gave different output")
    return [f"{' '.join(args)}: {p}" for p in problems]


# ------------------------------------------------------------------ structural mutation of real files (issue 26)
# Real configs and deployment files (tests/data, each with its provenance) with one value replaced by what careless
# hands and templating leave there: null, an empty or wrong container, a string where a number goes, an unexpanded
# variable, digits that are not ASCII, a negative or absurd number. A wrong type must be exit 2 naming the field (or
# 3), never a traceback.
DATA = Path(__file__).parent / "data"
CONFIG_SOURCES = sorted((DATA / "hf_configs").glob("*.json"))
DEPLOYMENT_SOURCES = sorted(p for p in (DATA / "deployments").rglob("*")
                            if p.is_file() and p.suffix in (".yaml", ".yml") and p.name != "SOURCES.md")
SCRIPT_SOURCES = sorted(p for p in (DATA / "deployments").rglob("*") if p.is_file() and p.suffix == ".sh")
HOSTILE_VALUES = [None, [], {}, "", "x", "gpu", -1, 0, 2**64, 1.5, True, "${REPLICAS}", "２", "١٢٨", [None], {"a": None},
                  "nan", float("inf")]


def _nodes(data, path=()):
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _nodes(value, path + (i,))


def _replaced(data, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {k: (_replaced(v, rest, value) if k == head else v) for k, v in data.items()}
    return [(_replaced(v, rest, value) if i == head else v) for i, v in enumerate(data)]


def mutate_documents(docs: list, pick: int, value) -> list:
    """`docs` with the node number `pick` (modulo the count, the root of each document left out) replaced."""
    nodes = [(d, p) for d, doc in enumerate(docs) for p in _nodes(doc) if p]
    if not nodes:
        return docs
    d, path = nodes[pick % len(nodes)]
    return [(_replaced(doc, path, value) if i == d else doc) for i, doc in enumerate(docs)]


def mutated_config(source: Path, pick: int, value) -> bytes:
    data = json.loads(source.read_text(encoding="utf-8"))
    return json.dumps(mutate_documents([data], pick, value)[0], default=str).encode()


def mutated_deployment(source: Path, pick: int, value) -> bytes:
    import yaml

    try:
        docs = [d for d in yaml.safe_load_all(source.read_text(encoding="utf-8")) if d is not None]
    except yaml.YAMLError:  # a Helm template ({{ .Values }}): kept as it is
        return source.read_bytes()
    return yaml.safe_dump_all(mutate_documents(docs, pick, value), allow_unicode=True, sort_keys=False).encode()


# shell idioms real launch scripts use (and careless ones): nested defaults, unterminated quotes, ANSI-C quoting,
# eval, aliases, CRLF line ends, self-doubling variables, exports of the devices a launch sees
SHELL_IDIOMS = [
    'MAX_LEN=${A:-${B:-8192}}\n', 'X="unterminated\n', "X='unterminated\n", "X=$'\\x31'\n", 'eval "$CMD"\n',
    "alias serve='vllm serve'\n", "export CUDA_VISIBLE_DEVICES=0\n", "CUDA_VISIBLE_DEVICES=0 ",
    "\r\n", "A=xx\n" + "".join(f"A=$A$A\n" for _ in range(40)), "${A:?}\n", "$(( 1 << 62 ))\n", "`echo x`\n",
    "${#A}\n", "NVIDIA_VISIBLE_DEVICES=none\n", "set -u\n", "cat <<EOF\nx\nEOF\n",
]


def mutated_script(source: Path, pick: int, idiom: str) -> bytes:
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    at = pick % (len(lines) + 1)
    return "".join(lines[:at] + [idiom] + lines[at:]).encode()


MUTATED = st.one_of(
    st.builds(lambda s, i, v: ("estimate", mutated_config(s, i, v)), st.sampled_from(CONFIG_SOURCES),
              st.integers(0, 10**6), st.sampled_from(HOSTILE_VALUES)),
    st.builds(lambda s, i, v: ("check", mutated_deployment(s, i, v)), st.sampled_from(DEPLOYMENT_SOURCES),
              st.integers(0, 10**6), st.sampled_from(HOSTILE_VALUES)),
    st.builds(lambda s, i, v: ("script", mutated_script(s, i, v)), st.sampled_from(SCRIPT_SOURCES),
              st.integers(0, 10**6), st.sampled_from(SHELL_IDIOMS)),
)


def mutated_call(kind: str) -> tuple[Call, str]:
    """The command line for a mutated file of `kind`, and the file's suffix."""
    if kind == "estimate":
        return Call(("estimate", "FILE", "--gpu", "h100", "--engine", "vllm", "--json"), True), ".json"
    models = str(DATA / "public_models")  # so the mutated files get past finding their model
    if kind == "check":
        return Call(("check", "FILE", "--gpu", "h100", "--offline", "--models-dir", models, "--json"), True), ".yaml"
    return Call(("check", "FILE", "--gpu", "h100", "--offline", "--models-dir", models, "--json"), True), ".sh"


# One generated input of either family: (call, file bytes, suffix).
def _hostile(call, content, suffix):
    return call, content, suffix


def _structural(mutated):
    kind, content = mutated
    call, suffix = mutated_call(kind)
    return call, content, suffix


INPUTS = st.one_of(st.builds(_hostile, calls(), FILES, SUFFIXES), MUTATED.map(_structural))


HUB_MISBEHAVIOURS = ("silent", "trickle", "500", "endless")


def hub_violations(how: str, timeout_s: float = 1.0) -> list[str]:
    """A lookup against the loopback stand-in misbehaving `how` (tests/hub_standin.py), in a fresh process: it must
    end with exit 3 and one `error:` line within the generous guard."""
    import os
    import subprocess
    import sys
    import tempfile

    import hub_standin

    with hub_standin.serve() as state, tempfile.TemporaryDirectory() as cache:
        state.add_public("Qwen/Qwen3-0.6B")
        state.misbehave = how
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
        env.update(HF_ENDPOINT=state.url, KVPLAN_HUB_TIMEOUT=str(timeout_s), HF_HUB_CACHE=cache,
                   KVPLAN_CACHE_DIR=cache + "-kvplan")
        try:
            done = subprocess.run([sys.executable, "-m", "kvplan", "estimate", "Qwen/Qwen3-0.6B"], env=env,
                                  capture_output=True, text=True, timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            return [f"hub {how}: did not return within {BOUND_S} s"]
    lines = done.stderr.splitlines()
    if done.returncode != 3 or len(lines) != 1 or not lines[0].startswith("error: "):
        return [f"hub {how}: exit {done.returncode}, stderr {done.stderr[-300:]!r}"]
    return []
