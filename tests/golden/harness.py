"""Run one kvplan command line in-process through the real entry point (kvplan.cli.main), as a user's shell
would: the same argv parsing, the same error line, the same exit code. Used by tests/test_golden.py and
scripts/record_golden.py, so recording and checking cannot differ."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("cases.txt")
OUTPUTS = Path(__file__).with_name("outputs.json")
# the Hub is off and the caches are a fixed empty place, so outputs do not depend on the machine (or the network)
ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb", "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": "/kvplan-golden/hf-cache",
       "KVPLAN_CACHE_DIR": "/kvplan-golden/kvplan-cache"}
# wall-clock figures (probe's allocation time) differ run to run: masked before comparing
_TIMINGS = re.compile(r'("seconds": )[0-9.e+-]+')


def cases() -> list[str]:
    return [line.strip() for line in CASES.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


class _Terminal(io.StringIO):
    """A stdout that says it is an interactive terminal."""

    def isatty(self) -> bool:
        return True


def run(command: str) -> dict:
    """{'exit': code, 'stdout': text, 'stderr': text} of `kvplan <command>` run from the repository root. A case
    may start with `TTY ` (stdout is an interactive terminal, as kvplan check's fitted table needs) and then
    `COLUMNS=N ` (as a shell line would) to run at another terminal width than 120."""
    from kvplan.cli import main

    env = dict(ENV)
    terminal = command.startswith("TTY ")
    command = command[len("TTY "):] if terminal else command
    width = re.match(r"COLUMNS=(\d+) +", command)
    if width:
        env["COLUMNS"], command = width.group(1), command[width.end():]
    out, err = (_Terminal() if terminal else io.StringIO()), io.StringIO()
    saved_env = {k: os.environ.get(k) for k in env}
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    os.environ.update(env)
    os.environ.pop("FORCE_COLOR", None)
    sys.argv = ["kvplan", *shlex.split(command)]
    os.chdir(ROOT)
    # click names the program after __main__'s package when run as `python -m pytest`: make it the plain
    # `kvplan` a shell user sees
    entry = sys.modules["__main__"]
    saved_package = getattr(entry, "__package__", None)
    entry.__package__ = None
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        entry.__package__ = saved_package
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"exit": code, "stdout": _TIMINGS.sub(r"\1<t>", out.getvalue()), "stderr": err.getvalue()}


def load_outputs() -> dict:
    return json.loads(OUTPUTS.read_text(encoding="utf-8"))


def write_outputs(outputs: dict) -> None:
    OUTPUTS.write_text(json.dumps(outputs, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
