import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hf_configs"

# pin the terminal width so rendered tables are the same everywhere
os.environ.setdefault("COLUMNS", "120")


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
