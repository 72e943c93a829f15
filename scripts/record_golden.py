"""Re-record tests/golden/outputs.json: every command line of tests/golden/cases.txt, run in-process.

    python scripts/record_golden.py            # all cases
    python scripts/record_golden.py --check    # say which cases differ, write nothing

Re-record only when an output changes on purpose, and say in the commit message why it changed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from golden import harness  # noqa: E402


def main() -> int:
    check = "--check" in sys.argv[1:]
    old = harness.load_outputs() if harness.OUTPUTS.exists() else {}
    new = {case: harness.run(case) for case in harness.cases()}
    changed = [c for c in new if old.get(c) != new[c]]
    for case in changed:
        print(("differs: " if case in old else "new: ") + case)
    if not check:
        harness.write_outputs(new)
    print(f"{len(new)} cases, {len(changed)} changed" + ("" if check else ", written"))
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
