"""What the format readers hand to `kvplan check` (kvplan/check/readers/): a Workload (one container, service, model
resource, task or script that starts an engine, with what its file says around the command line), a Skip (a document
with nothing to judge, and why), or a Failure (an error located in the file). kvplan/check/workload.py turns a
Workload into Deployments. Pure of typer and rich."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from kvplan.check import launch
from kvplan.check.gpus import GpuEvidence
from kvplan.engines import lazy
from kvplan.core.errors import KvplanError, InputError

if TYPE_CHECKING:
    from kvplan.check import shell
else:  # the parser loads with the first text to split (a string command, a script); a list command needs none
    shell = lazy.module("kvplan.check.shell")


@dataclass(frozen=True, eq=False, repr=False)
class Workload:
    """One container, service, model resource, task or script that starts an engine, with what its file says."""

    source: str
    document: int | None
    name: str
    fmt: str
    where: str  # file#doc: key path of the container / service / spec, for messages
    base_dir: Path
    words: tuple[str, ...] | None = None  # the exec-form command line (command + args), expanded as the format expands it
    script: str | None = None  # or a shell script that runs it (a `run:` block, a shell file)
    image: str | None = None
    env: Mapping[str, str | None] = field(default_factory=dict)  # the process environment the file gives (None: unknown)
    gpus: GpuEvidence = GpuEvidence()
    pins: tuple[launch.ReleasePin, ...] = ()  # releases the file pins besides the image (pip installs)
    notes: tuple[str, ...] = ()
    key: Callable[[str], str] | None = None  # how the file spells a setting (None: the engine's flags)
    flag_style: bool = True
    engine_config: tuple[str, Any] | None = None  # ('vllm', engine_kwargs) etc.: settings as a mapping, not a command line
    requests_gpus: bool = False
    blocker: KvplanError | None = None  # found while reading: the workload cannot be judged, and this says why
    # the command takes more arguments where the container starts (a Dockerfile whose ENTRYPOINT is the engine and
    # which has no CMD: `docker run IMAGE MODEL ...` appends them), said in words; None: the command line is whole
    args_at_run: str | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Skip:
    """A document with nothing to judge, and why."""

    source: str
    document: int | None
    name: str
    fmt: str
    reason: str


@dataclass(frozen=True, eq=False, repr=False)
class Failure:
    """An error found while reading a document, located in the file."""

    source: str
    document: int | None
    name: str
    fmt: str | None
    error: KvplanError


Item = Any  # Deployment | Workload | Skip | Failure


# ------------------------------------------------------------------ the launches a workload runs

def calls_of(workload: Workload) -> list[launch.EngineCall]:
    """The engine launches a workload runs (a shell script it cannot read is an error here)."""
    if workload.script is not None:
        try:
            return launch.calls_in_shell(workload.script, workload.env)
        except shell.ShellSyntaxError as err:
            raise InputError(f"the shell script cannot be read: {err}", where=workload.where) from None
        except KvplanError as err:  # a construct the reader does not follow (eval): located at the workload
            if not err.where:
                err.where = workload.where
            raise
    try:
        calls = launch.calls_in_words(list(workload.words), workload.env, image=workload.image) if workload.words else []
    except KvplanError as err:  # an `sh -c` script it cannot read: located at the workload
        if not err.where:
            err.where = workload.where
        raise
    if not calls and launch.other_server_image(workload.image) and not launch.image_engine(workload.image):
        # the image's own server runs (no command, or one kvplan does not read): cannot judge, naming it
        title = launch.other_server_image(workload.image)
        return [launch.EngineCall(launch.OTHER, f"{title} (image {workload.image})", tuple(workload.words or ()), False,
                                  workload.env, workload.image)]
    return calls


def runs_engine(workload: Workload) -> bool:
    try:
        return bool(workload.engine_config or calls_of(workload))
    except KvplanError:
        return True  # an unreadable script is reported, not skipped
