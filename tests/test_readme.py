"""The README cannot drift: its opening commands are what CI runs, and its tour shows today's output."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    first, second = blocks[0].strip(), blocks[1].strip()
    assert first.startswith("pip install . && kvplan estimate ") and "--gpu" in first
    assert "'.[test]'" in second and "pytest" in second
    # nothing but prose and those two blocks comes before the quick tour
    assert text.index(blocks[1]) < text.index("## Quick tour") and text.count("```", 0, text.index("## Quick tour")) == 4
    assert second in (ROOT / ".ci" / "run").read_text()


def test_readme_tour_output_is_current():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "update_readme.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
