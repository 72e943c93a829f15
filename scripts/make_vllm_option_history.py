"""Write kvplan/data/vllm_options_before_0.10.json: the `vllm serve` options of the vLLM releases before 0.10, which
kvplan does not model, from the option tables dumped from each release's own parser (a folder of <version>.json tables made by
scripts/vllm_option_table.py, given as the first argument). `kvplan check` uses them for one thing only: a deployment that pins no
vLLM release and uses an option only those releases had is "cannot judge" (it may target them), not invalid.

    python scripts/make_vllm_option_history.py [RESEARCH_OPTIONS_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RELEASES = ("0.6.6.post1", "0.7.3", "0.8.0", "0.8.5.post1", "0.9.2")
OUT = Path(__file__).resolve().parents[1] / "kvplan" / "data" / "vllm_options_before_0.10.json"


def main() -> None:
    folder = Path(sys.argv[1])
    table: dict[str, dict[str, str]] = {}
    for version in RELEASES:
        data = json.loads((folder / f"{version}.json").read_text(encoding="utf-8"))
        flags: dict[str, str] = {}
        for opt in data["options"]:
            if opt["kind"] == "positional":
                continue
            # 'value' takes one or more values; 'switch' none; 'optional' an optional value (StoreBoolean: true/false)
            kind = "optional" if opt["nargs"] == "?" else "switch" if opt["nargs"] == 0 else "value"
            for flag in opt["long"] + opt["short"] + opt["negative"]:
                flags[flag] = "switch" if flag in opt["negative"] else kind
        table[version] = dict(sorted(flags.items()))
    OUT.write_text(json.dumps({"source": "vLLM's own `serve` parser of each release, dumped by scripts/vllm_"
                                         "option_table.py",
                               "releases": table}, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {', '.join(f'{v} ({len(t)} flags)' for v, t in table.items())}")


if __name__ == "__main__":
    main()
