"""What `kvplan check` reports: one Verdict per deployment, the checks behind it, and the exit code of the whole
run. Frozen dataclasses; the JSON report is their fields (formats.py), nothing hand-built."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvplan.core.io import JsonResult
from kvplan.core.errors import EXIT_INPUT, EXIT_NO, EXIT_OK, EXIT_UNSUPPORTED, KvplanError, UnsupportedError
from kvplan import engines

PASS, FAIL, INVALID, CANNOT_JUDGE, SKIPPED = "pass", "fail", "invalid", "cannot_judge", "skipped"
STATUSES = (PASS, FAIL, INVALID, CANNOT_JUDGE, SKIPPED)
JUDGED = (PASS, FAIL, INVALID, CANNOT_JUDGE)  # a skipped document (a Service, a ConfigMap) is none of these

# Exit code of a whole check: the worst verdict by this precedence. Invalid input comes first (the
# contract's "2: any invalid file"): until it is fixed nothing else is certain. A definite "no" (1)
# outranks "cannot judge" (3): it is an answer, and the fix it names is actionable now.
_EXIT_PRECEDENCE = ((INVALID, EXIT_INPUT), (FAIL, EXIT_NO), (CANNOT_JUDGE, EXIT_UNSUPPORTED))

FORMAT_KVPLAN, FORMAT_VLLM, FORMAT_VLLM_ARGS = "kvplan", "vllm-config", "vllm-args"
# the other formats (kvplan/check/readers/): one name per reader
FORMAT_COMPOSE, FORMAT_KUBERNETES, FORMAT_KSERVE, FORMAT_KUBEAI = "compose", "kubernetes", "kserve", "kubeai"
FORMAT_HELM_PRODSTACK, FORMAT_HELM_LLMD = "helm-production-stack", "helm-llm-d"
FORMAT_RAY, FORMAT_SKYPILOT, FORMAT_SHELL, FORMAT_DOCKERFILE = "ray-serve", "skypilot", "shell", "dockerfile"
FORMAT_TRTLLM_OPTIONS, FORMAT_TRTLLM_DISAGG = "trtllm-options", "trtllm-disaggregated"
FORMAT_GITHUB_ACTIONS, FORMAT_TRUSS, FORMAT_RECIPES, FORMAT_README = "github-actions", "truss", "vllm-recipe", "readme"
FORMAT_HELM_VLLM, FORMAT_PROGRAM, FORMAT_NOMAD = "helm-vllm-example", "program", "nomad"
FORMAT_VLLM_OFFLINE = "vllm-offline"  # a Python program that builds vllm.LLM(...)
FORMAT_VERL = "verl-config"  # a verl trainer config (Hydra YAML), read as main_ppo's rollout


@dataclass(frozen=True)
class Origins:
    """Where a verdict's inputs came from, so a reviewer can trust it (text, json, markdown and junit show it)."""

    gpu: str | None = None  # 'nodeSelector cloud.google.com/gke-accelerator=nvidia-l4', '--gpu h100-sxm-80gb'
    gpus: str | None = None  # 'resources.limits nvidia.com/gpu: 1', or how many the parallel layout takes
    model: str | None = None  # 'bundled spec llama-3.1-8b', 'Hugging Face cache: Qwen/Qwen3-32B@9216db5... in ...'
    engine_release: str | None = None  # 'vLLM 0.10.0 (image vllm/vllm-openai:v0.10.0)', 'vLLM 0.33.0 (default)'


@dataclass(frozen=True)
class Check:
    """One criterion of a verdict: whether it passed, what was required and what was found."""

    name: str  # "starts", "concurrency", "headroom"
    passed: bool
    required: int | float | None
    actual: int | float | None
    detail: str


@dataclass(frozen=True)
class Figures:
    """The numbers behind a verdict, per GPU (the most loaded one), one request of max_model_len resident."""

    capacity_bytes: int | None
    usable_bytes: int | None
    weights_bytes: int | None
    cache_bytes: int | None
    free_bytes: int | None
    max_concurrency: float | None  # paged engines: requests of max_model_len at once, as the engine logs it
    max_batch: int | None  # whole sequences of max_model_len that fit
    longest_context: int | None  # the longest max_model_len that fits one request
    headroom_bytes: int | None  # free with the required concurrency resident
    headroom_percent: float | None  # of usable memory, 2 decimals
    available_kv_bytes: int | None = None
    num_gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None


@dataclass(frozen=True)
class Verdict:
    """One deployment's verdict: where it is, its status and why, its figures and checks."""

    source: str  # the file as named on the command line (or "--vllm-args")
    document: int | None  # 1-based YAML document, when the file holds several
    name: str
    format: str | None  # kvplan | vllm-config | vllm-args; None when the file could not be read
    status: str
    reason: str  # one line
    engine: str | None = None
    model: str | None = None
    gpu: str | None = None
    gpus: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    figures: Figures | None = None
    checks: tuple[Check, ...] = ()
    suggestions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    origins: Origins | None = None
    line: int | None = None  # the line of the file the verdict points at (kvplan/check/lines.py); None: no file

    @property
    def label(self) -> str:
        """'deploy/prod.yaml#2' — file and document, how people find it."""
        return f"{self.source}#{self.document}" if self.document else self.source


@dataclass(frozen=True)
class CheckReport(JsonResult):
    """Every verdict of a run, their counts and the run's exit code (`kvplan check --json`)."""

    verdicts: tuple[Verdict, ...]  # every document, skipped ones included (status "skipped")
    total: int  # deployments judged or attempted: passed + failed + invalid + cannot_judge (skipped ones are not counted)
    passed: int
    failed: int
    invalid: int
    cannot_judge: int
    exit_code: int
    vllm_version: str  # the vLLM release whose options and rules vLLM deployments are judged by (unless they name one)
    skipped: int = 0  # documents with nothing to judge (a Service, a ConfigMap, a template): neither pass nor fail


def exit_code(verdicts) -> int:
    statuses = {v.status for v in verdicts}
    for status, code in _EXIT_PRECEDENCE:
        if status in statuses:
            return code
    return EXIT_OK


def make_report(verdicts, vllm_version: str | None = None) -> CheckReport:
    verdicts = tuple(verdicts)
    count = {s: sum(1 for v in verdicts if v.status == s) for s in STATUSES}
    return CheckReport(verdicts=verdicts, total=sum(count[s] for s in JUDGED), passed=count[PASS], failed=count[FAIL],
                       invalid=count[INVALID], cannot_judge=count[CANNOT_JUDGE], exit_code=exit_code(verdicts),
                       vllm_version=engines.release_version("vllm", vllm_version, where="--vllm-version"),
                       skipped=count[SKIPPED])


def failed_verdict(source, document, name, fmt, err: KvplanError, origins: Origins | None = None) -> Verdict:
    """A deployment that could not be judged: invalid input (exit 2) or something kvplan does not model (exit 3)."""
    status = CANNOT_JUDGE if isinstance(err, UnsupportedError) else INVALID
    return Verdict(source=source, document=document, name=name, format=fmt, status=status, reason=err.one_line(),
                   origins=origins)


def skipped_verdict(source, document, name, fmt, reason: str) -> Verdict:
    """A document with nothing to judge: it says why, and counts as neither pass nor fail (exit codes unchanged)."""
    return Verdict(source=source, document=document, name=name, format=fmt, status=SKIPPED, reason=reason)


def short_tokens(n: int) -> str:
    """'32K' when exact, else '32,000': short enough for a one-line reason."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def to_dict(report: CheckReport) -> dict:
    """The report as plain data (the JSON output): the dataclass fields, nothing hand-built."""
    return dataclasses.asdict(report)
