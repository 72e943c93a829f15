import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hf_configs"

# tests/data holds verbatim public files, some of them Python programs named like tests (`..._test.py`, a deployment
# that calls vllm.LLM): data for the readers, never test modules to import
collect_ignore = ["data"]

# pin the terminal width so rendered tables are the same everywhere
os.environ.setdefault("COLUMNS", "120")
# every `python -m kvplan` a test starts imports this tree's kvplan, wherever pytest was started from: an editable
# install of another checkout (or none) must not answer instead (tests/test_suite_invocation.py checks it)
ROOT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                         if p and p != str(ROOT)])
# the examples and fixtures are named relative to the repository root, as a user in a checkout names them; a run
# started from another folder (`cd /tmp && python -m pytest /path/to/kvplan/tests`) works in the root all the same
os.chdir(ROOT)

# No test touches the internet: the Hugging Face Hub is off for the whole session (tests of the Hub path start a
# stand-in server on loopback and turn it back on for themselves), and the Hugging Face and kvplan caches are empty
# folders of this session, so what a developer's machine has cached changes no result.
import tempfile  # noqa: E402

_SESSION_CACHE = tempfile.mkdtemp(prefix="kvplan-tests-")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_CACHE"] = os.path.join(_SESSION_CACHE, "hf-hub")
os.environ["KVPLAN_CACHE_DIR"] = os.path.join(_SESSION_CACHE, "kvplan")
for _name in ("HF_ENDPOINT", "HF_HOME", "HUGGINGFACE_HUB_CACHE"):
    os.environ.pop(_name, None)



def _build_click_command_once() -> None:
    """typer rebuilds the whole click group from the command functions on every call (typer.main.get_command: it
    evaluates every option's annotation), both in CliRunner.invoke and in `app()`, which kvplan.cli.main runs: about
    100 ms of a 2 ms `kvplan estimate`, most of the suite's in-process CLI time. The group is built once per list of
    registered commands instead (commands register lazily and --help re-sorts them, so the key is the names in
    order); click commands are made to be invoked again and again, so what each invoke runs is unchanged."""
    import typer.main
    import typer.testing

    build = typer.main.get_command
    built: dict = {}

    def cached(app):
        key = (id(app), tuple(c.name for c in app.registered_commands), len(app.registered_groups))
        if key not in built:
            built[key] = build(app)
        return built[key]

    typer.testing._get_command = cached
    typer.main.get_command = cached


_build_click_command_once()


@pytest.fixture(scope="session")
def configs() -> Path:
    return CONFIGS


@pytest.fixture(scope="session")
def cli():
    """Run the real CLI in-process: returns (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from kvplan.cli import entry as kvcli

    kvcli.register_commands()
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(kvcli.app, [str(a) for a in args])
        return result.exit_code, result.stdout, result.stderr

    return run


def pytest_collection_finish(session):
    """Everything alive once the tests are collected (the modules, the test items, the data they were parametrized
    with) stays alive to the end: gc.freeze puts it out of the collector's sight. Each full collection then walks only
    what the tests made since; a worker's heap with torch, transformers and 2,700 items made one take 0.4 s, and the
    probe tests collect on purpose to see that their tensors were released."""
    import gc

    gc.collect()
    gc.freeze()
