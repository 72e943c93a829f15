"""Record vLLM's own KV-cache planning figures for the launch layouts in tests/data/vllm_peer/cases.json into
tests/data/vllm_peer/figures.json (tests/test_vllm_peer.py compares kvplan with them).

    python scripts/record_vllm_peer.py --python /work/venv-vllm/bin/python

`--python` is an interpreter where vLLM imports (pip install --no-deps vllm==0.33.0 plus the small packages its
config modules import: pydantic, msgspec, cloudpickle, ...; torch on the CPU). It runs tests/peers/vllm_peer.py,
which builds vLLM KVCacheSpecs from each case's config.json and asks vLLM's get_global_kv_cache_groups,
get_kv_cache_configs and get_kv_cache_capacity for the pool; the file records the vLLM version that produced it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tests" / "data" / "vllm_peer" / "cases.json"
OUT = REPO / "tests" / "data" / "vllm_peer" / "figures.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="an interpreter where vLLM is importable")
    args = parser.parse_args()
    done = subprocess.run([args.python, str(REPO / "tests" / "peers" / "vllm_peer.py"), str(CASES), str(REPO)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stderr[-4000:])
        return done.returncode
    figures = json.loads(done.stdout)
    figures["produced_by"] = ("tests/peers/vllm_peer.py run by scripts/record_vllm_peer.py: vLLM's own "
                              "v1/core/kv_cache_planning.py and kv_cache_utils.py on the CPU, specs from each case's config.json")
    figures["recorded"] = datetime.date.today().isoformat()
    OUT.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(figures['results'])} cases (vLLM {figures['vllm_version']}) to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
