"""kvplan.calibrate: `kvplan calibrate LOG...` as a function (docs/api.md, docs/calibrate.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.api import args
from kvplan.core.io import JsonResult, refuse_over_inputs, write_file
from kvplan.core.errors import did_you_mean, InputError
from kvplan.engines import logcheck
from kvplan.requests.build import hardware_for
from kvplan.engines.calibration import dump_profile, profile_to_mapping, read_profile
from kvplan.engines.sitefit import changes_nothing, fit_site
from kvplan.model.catalog import resolve_model

if TYPE_CHECKING:
    from os import PathLike

    from kvplan.engines.logcheck import LogCalibration, Summary


@dataclass(frozen=True)
class CalibrationReport(JsonResult):
    """kvplan beside every figure of the logs, the summary (its exit_code is the command's) and, with `save`, the site
    profile fitted to them: the object `kvplan calibrate --json` prints."""

    summary: Summary
    logs: tuple[LogCalibration, ...]
    site: dict[str, Any] | None  # the fitted profile, the file it went to and its leave-one-out score
    error: None = None  # the command's JSON names its error here; the API raises it instead


def calibrate(logs: str | PathLike | list[str | PathLike], *, engine: str | None = None, model: str | None = None,
              models_dir: str | None = None, gpu: str | None = None, gpu_mem: str | int | None = None,
              save: str | None = None, calibration: str | None = None) -> CalibrationReport:
    """Compare kvplan with engine start-up logs (vLLM, SGLang, TensorRT-LLM); with `save`, fit the site profile to them
    and write it to that file. A log that disagrees or cannot be judged is in the report; bad input raises."""
    return run(logs, engine=engine, model=model, models_dir=models_dir, gpu=gpu, gpu_mem=gpu_mem, save=save,
               calibration=calibration)[0]


def run(logs, *, engine, model, models_dir, gpu, gpu_mem, save, calibration) -> tuple[CalibrationReport, Any]:
    """The report and the fitted profile with its figures as numbers (engines/sitefit.py), which the command prints."""
    logs, save, models_dir = args.names(logs, "LOG") or [], args.path(save, "--save"), args.path(models_dir, "--models-dir")
    refuse_over_inputs(save, [*logs, calibration, model, models_dir], option="--save")
    results, summary, fit = _run(logs, engine=engine, model=model, models_dir=models_dir, save=save,
                                 calibration=args.path(calibration, "--calibration"), gpu=gpu,
                                 gpu_mem=args.text(gpu_mem, "--gpu-mem"))
    return CalibrationReport(summary=summary, logs=tuple(results), site=_site_json(fit, save)), fit


def _run(logs: list[str], *, engine, model, models_dir, save, calibration, gpu=None, gpu_mem=None):
    from pathlib import Path

    if not logs:
        raise InputError("no log given", where="LOG", hint="kvplan calibrate path/to/server.log")
    if engine is not None:
        key = engine.strip().lower()
        if key not in logcheck.ENGINES:
            raise InputError(f"unknown engine {engine!r}", where="--engine",
                             hint=did_you_mean(engine, logcheck.ENGINES) or "vllm, sglang or trtllm")
        engine = key
    # a wrong --model or --models-dir is bad input for every log (exit 2), not a model kvplan cannot describe
    if model is not None:
        try:
            resolve_model(model)
        except InputError as err:
            raise InputError(err.what, where=f"--model {model}" if err.where in (None, "MODEL") else err.where,
                             hint=err.hint) from None
    if models_dir is not None and not Path(models_dir).expanduser().is_dir():
        missing = not Path(models_dir).expanduser().exists()
        raise InputError("no such folder" if missing else "is not a folder", where=f"--models-dir {models_dir}",
                         hint="a folder of model folders named like the Hub cache (org--name/config.json)")

    hardware = hardware_for(gpu, gpu_mem)
    site = None
    if calibration is not None:
        site = read_profile(calibration, engine=engine)
    results = [logcheck.calibrate_path(path, engine=engine, model=model, models_dir=models_dir, site=site,
                                       hardware=hardware) for path in logs]
    summary = logcheck.summarize(results)
    fit = None
    if save is not None:
        fit = _save(results, save, summary)
    return results, summary, fit


def _save(results, path: str, summary):
    """Fit and write the profile, unless an input was invalid (exit 2: nothing half-written)."""
    if summary.invalid:
        bad = next(r for r in results if r.status == "invalid")
        raise InputError(f"not saved: {bad.reason}", where=bad.log, hint="pass only start-up logs to --save")
    observations = [(r.log, r.site) for r in results if r.site is not None]
    fit = fit_site(observations)
    unchanged = changes_nothing(fit.profile, observations)
    if unchanged:
        explained = next((r.explained for r in results if r.explained), None)
        raise InputError("not saved: the profile these logs give changes none of kvplan's KV budgets for them (the terms "
                         "they print are the engine's model, or do not reach its budget)", where="--save",
                         hint=(f"nothing to calibrate; {explained}" if explained else
                               "nothing to calibrate: kvplan already gives these logs' budgets"))
    if unchanged is None:
        fit = dataclasses.replace(fit, notes=fit.notes + (
            "kvplan models no KV budget for these logs, so whether the profile changes one is not checked",))
    text = dump_profile(fit.profile, path)

    def write(target: str) -> None:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)

    write_file(path, write, what="the site profile")
    return fit


def _site_json(fit, path):
    if fit is None:
        return None

    return {"file": path, "profile": profile_to_mapping(fit.profile), "left_out": fit.left_out,
            "mean_error_percent_before": fit.mean_error_percent_before,
            "mean_error_percent_after": fit.mean_error_percent_after,
            "max_error_percent_after": fit.max_error_percent_after, "notes": fit.notes}
