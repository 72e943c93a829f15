"""Regenerate the README's ```console blocks: each `$ kvplan ...` line is run (at 100 columns) and its
output written under it, so the quick tour always shows what kvplan prints today.

    python scripts/update_readme.py           # rewrite README.md
    python scripts/update_readme.py --check   # exit 1 if README.md is out of date (the test suite runs this)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"(```console\n\$ (kvplan [^\n]*)\n)(.*?)(```)", re.S)


def run(command: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env.update(COLUMNS="100", KVPLAN_DEBUG="0", NO_COLOR="1")
    args = [sys.executable, "-m", "kvplan", *shlex.split(command)[1:]]
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=README.parent)
    text = out.stdout + out.stderr  # notes go to stderr; a reader sees both in a terminal
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines()) + "\n"


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + run(m.group(2)) + m.group(4), text)


def main() -> int:
    current = README.read_text(encoding="utf-8")
    fresh = render(current)
    if "--check" in sys.argv[1:]:
        if fresh != current:
            print("README.md is out of date: run python scripts/update_readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
