"""kvplan.check: `kvplan check CONFIG...` as a function (docs/api.md). It lives in this package, not in kvplan/api/,
because the package itself answers `kvplan.check(...)` (see __init__.py) and the API must not import back into it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.api import args
from kvplan.check.deployment import CheckOptions
from kvplan.check.run import run_check

if TYPE_CHECKING:
    from os import PathLike

    from kvplan.check.report import CheckReport


def check(configs: str | PathLike | list[str | PathLike] | None = None, *, vllm_args: str | list[str] | None = None,
          gpu: str | None = None, gpu_mem: str | int | None = None, gpus: int | None = None,
          require_concurrency: int | None = None, require_headroom: str | float | None = None,
          vllm_version: str | None = None, optimistic: bool = False, models_dir: str | list[str] | None = None,
          offline: bool = False, gpu_reserved: str | int | None = None,
          engine_option: list[str] | dict[str, str] | str | None = None, calibration: str | None = None,
          allow_path: str | list[str] | None = None) -> CheckReport:
    """Judge deployment files or folders (and vLLM command lines in `vllm_args`): the report `kvplan check --json`
    prints. Its exit_code is the command's (0 pass, 1 a failure, 2 an invalid file, 3 cannot judge); a file that cannot
    be read is a verdict in the report, not an exception."""
    options = CheckOptions(gpu=gpu, gpu_mem=args.text(gpu_mem, "--gpu-mem"), gpus=args.count(gpus, "--gpus"),
                           require_concurrency=args.count(require_concurrency, "--require-concurrency"),
                           require_headroom=args.text(require_headroom, "--require-headroom"), vllm_version=vllm_version,
                           optimistic=bool(optimistic), models_dirs=tuple(args.names(models_dir, "--models-dir") or ()),
                           offline=bool(offline), gpu_reserved=args.text(gpu_reserved, "--gpu-reserved"),
                           engine_options=tuple(args.engine_options(engine_option) or ()),
                           calibration=args.path(calibration, "--calibration"),
                           allow_paths=tuple(args.names(allow_path, "--allow-path") or ()))
    return run_check(args.names(configs, "CONFIG") or [], options, tuple(args.names(vllm_args, "--vllm-args") or ()))
