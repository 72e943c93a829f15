"""Write model_specs/<name>.yaml for the bundled models, each derived from a real config.json by hf_config.

    python scripts/make_specs.py            # rewrite model_specs/*.yaml
    python scripts/make_specs.py --check    # exit 1 if a file differs from what the configs give

Every spec is exactly what `kvplan show <config.json>` prints for its source config, plus a name, the Hugging
Face ids it answers to (aliases) and its provenance (the repository, path and commit the config was read
from, per tests/data/*/SOURCES.md). tests/test_bundled_specs.py re-derives each one and compares, so a spec
cannot drift from its config: change hf_config.py or the config, then run this script.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvplan.model import bundled, hf_config  # noqa: E402
from kvplan.core import yamlio  # noqa: E402
from kvplan.core.spec import spec_from_mapping, spec_to_mapping  # noqa: E402

OUT = REPO / "model_specs"
SHARED = "tests/data/hf_configs"
EXTRA = "tests/data/extra_configs"
NEW = "tests/data/hf_configs_2026"  # the 2025-2026 corpus of issue 25 (exact against transformers 5.24 where it builds)
VLLM = "tests/data/vllm_models"  # the configs of the 42 vLLM calibration logs (tier C, checked against the logs)

# name -> (config file, Hugging Face ids). Aliases name only checkpoints that share the config's architecture
# and context length (base and instruct/chat variants of one release).
MODELS: dict[str, tuple[str, list[str]]] = {
    # dense MHA / GQA
    "gpt2": (f"{SHARED}/gpt2.json", ["openai-community/gpt2", "gpt2"]),
    "llama-2-7b": (f"{SHARED}/llama-2-7b.json", ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"]),
    "llama-2-70b": (f"{SHARED}/llama-2-70b.json", ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-chat-hf"]),
    "llama-3-8b": (f"{SHARED}/meta-llama-3-8b.json", ["meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"]),
    "llama-3.1-8b": (f"{SHARED}/llama-3.1-8b.json", ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
                                                     "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"]),
    "llama-3.1-70b": (f"{SHARED}/llama-3.1-70b.json", ["meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
                                                       "meta-llama/Meta-Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct"]),
    "llama-3.1-405b": (f"{SHARED}/llama-3.1-405b.json", ["meta-llama/Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct",
                                                         "meta-llama/Meta-Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B-Instruct"]),
    "qwen2-72b": (f"{SHARED}/qwen2-72b.json", ["Qwen/Qwen2-72B", "Qwen/Qwen2-72B-Instruct"]),
    "qwen2.5-7b": (f"{SHARED}/qwen2.5-7b.json", ["Qwen/Qwen2.5-7B"]),
    "qwen2.5-72b": (f"{SHARED}/qwen2.5-72b-instruct.json", ["Qwen/Qwen2.5-72B-Instruct"]),
    "qwen3-8b": (f"{SHARED}/qwen3-8b.json", ["Qwen/Qwen3-8B"]),
    "phi-3.5-mini": (f"{SHARED}/phi-3.5-mini-instruct.json", ["microsoft/Phi-3.5-mini-instruct"]),
    "qwen2.5-7b-instruct": (f"{VLLM}/Qwen--Qwen2.5-7B-Instruct/config.json", ["Qwen/Qwen2.5-7B-Instruct"]),
    "kimi-dev-72b": (f"{VLLM}/moonshotai--Kimi-Dev-72B/config.json", ["moonshotai/Kimi-Dev-72B"]),
    "llama-3.3-70b": (f"{VLLM}/meta-llama--Llama-3.3-70B-Instruct/config.json", ["meta-llama/Llama-3.3-70B-Instruct"]),
    "codellama-7b": (f"{VLLM}/codellama--CodeLlama-7b-hf/config.json", ["codellama/CodeLlama-7b-hf"]),
    "gemma-7b": (f"{VLLM}/google--gemma-7b/config.json", ["google/gemma-7b"]),
    "granite-3.1-2b": (f"{VLLM}/ibm-granite--granite-3.1-2b-instruct/config.json", ["ibm-granite/granite-3.1-2b-instruct"]),
    "granite-3.1-8b": (f"{VLLM}/ibm-granite--granite-3.1-8b-instruct/config.json", ["ibm-granite/granite-3.1-8b-instruct"]),
    "granite-3.3-8b": (f"{VLLM}/ibm-granite--granite-3.3-8b-instruct/config.json", ["ibm-granite/granite-3.3-8b-instruct"]),
    "phi-4": (f"{VLLM}/microsoft--phi-4/config.json", ["microsoft/phi-4"]),
    # MQA
    "falcon-7b": (f"{EXTRA}/falcon-7b-instruct.json", ["tiiuae/falcon-7b-instruct", "tiiuae/falcon-7b"]),
    "llama-3.2-1b": (f"{EXTRA}/llama-3.2-1b-instruct.json", ["meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B"]),
    # sliding window, interleaved local/global
    "mistral-7b-v0.1": (f"{SHARED}/mistral-7b-v0.1.json", ["mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1"]),
    "phi-3-mini-4k": (f"{SHARED}/phi-3-mini-4k-instruct.json", ["microsoft/Phi-3-mini-4k-instruct"]),
    "gemma-2-9b": (f"{SHARED}/gemma-2-9b.json", ["google/gemma-2-9b", "google/gemma-2-9b-it"]),
    "gemma-3-27b": (f"{SHARED}/gemma-3-27b.json", ["google/gemma-3-27b-it", "google/gemma-3-27b-pt"]),
    "gemma-2-2b": (f"{VLLM}/google--gemma-2-2b-it/config.json", ["google/gemma-2-2b-it"]),
    "gemma-2-27b": (f"{VLLM}/google--gemma-2-27b-it/config.json", ["google/gemma-2-27b-it"]),
    "gemma-3-4b": (f"{VLLM}/google--gemma-3-4b-it/config.json", ["google/gemma-3-4b-it"]),
    "gemma-3-12b": (f"{VLLM}/google--gemma-3-12b-it/config.json", ["google/gemma-3-12b-it"]),
    "gpt-oss-20b": (f"{SHARED}/gpt-oss-20b.json", ["openai/gpt-oss-20b"]),
    "gpt-oss-120b": (f"{SHARED}/gpt-oss-120b.json", ["openai/gpt-oss-120b"]),
    # MoE
    "mixtral-8x7b": (f"{SHARED}/mixtral-8x7b-v0.1.json", ["mistralai/Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"]),
    "qwen3-30b-a3b-2507": (f"{EXTRA}/qwen3-30b-a3b-instruct-2507.json", ["Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B-Thinking-2507"]),
    "qwen3-235b-a22b": (f"{SHARED}/qwen3-235b-a22b.json", ["Qwen/Qwen3-235B-A22B"]),
    "qwen1.5-moe-a2.7b": (f"{VLLM}/Qwen--Qwen1.5-MoE-A2.7B/config.json", ["Qwen/Qwen1.5-MoE-A2.7B"]),
    # chunked local attention (+ MoE, vision)
    "llama-4-scout": (f"{EXTRA}/llama-4-scout-17b-16e-instruct.json", ["meta-llama/Llama-4-Scout-17B-16E-Instruct"]),
    "llama-4-maverick": (f"{EXTRA}/llama-4-maverick-17b-128e-instruct.json", ["meta-llama/Llama-4-Maverick-17B-128E-Instruct"]),
    # MLA (+ MoE)
    "deepseek-v3": (f"{SHARED}/deepseek-v3.json", ["deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-Base"]),
    "kimi-k2": (f"{EXTRA}/kimi-k2-instruct.json", ["moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Base"]),
    "kimi-vl-a3b": (f"{VLLM}/moonshotai--Kimi-VL-A3B-Instruct/config.json", ["moonshotai/Kimi-VL-A3B-Instruct"]),
    # per-layer blocks, no-op attention
    "llama-3.3-nemotron-super-49b": (f"{SHARED}/llama-3.3-nemotron-super-49b-v1.json", ["nvidia/Llama-3_3-Nemotron-Super-49B-v1"]),
    # hybrid attention + state, pure state
    "jamba-1.5-mini": (f"{SHARED}/jamba-1.5-mini.json", ["ai21labs/AI21-Jamba-1.5-Mini"]),
    "nemotron-h-56b": (f"{SHARED}/nemotron-h-56b-base-8k.json", ["nvidia/Nemotron-H-56B-Base-8K"]),
    "nemotron-3-nano-30b-a3b": (f"{SHARED}/nemotron-3-nano-30b-a3b.json", ["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]),
    "qwen3-next-80b-a3b": (f"{SHARED}/qwen3-next-80b-a3b-thinking.json", ["Qwen/Qwen3-Next-80B-A3B-Thinking"]),
    "falcon-mamba-7b": (f"{SHARED}/falcon-mamba-7b.json", ["tiiuae/falcon-mamba-7b"]),
    # multimodal (vision tower counted separately)
    "mistral-small-3.1-24b": (f"{EXTRA}/mistral-small-3.1-24b-instruct-2503.json", ["mistralai/Mistral-Small-3.1-24B-Instruct-2503"]),
    "granite-vision-3.3-2b": (f"{VLLM}/ibm-granite--granite-vision-3.3-2b/config.json", ["ibm-granite/granite-vision-3.3-2b"]),
    # 2025-2026 families. Multimodal ones whose tower kvplan does not size keep their weights unknown (the KV cache is
    # the text model's and exact); quantized checkpoints only where config.json itself carries the format
    "qwen3.5-9b": (f"{NEW}/Qwen--Qwen3.5-9B.json", ["Qwen/Qwen3.5-9B"]),
    "qwen3.5-27b": (f"{NEW}/Qwen--Qwen3.5-27B.json", ["Qwen/Qwen3.5-27B"]),
    "qwen3.5-35b-a3b": (f"{NEW}/Qwen--Qwen3.5-35B-A3B.json", ["Qwen/Qwen3.5-35B-A3B"]),
    "qwen3.5-122b-a10b": (f"{NEW}/Qwen--Qwen3.5-122B-A10B.json", ["Qwen/Qwen3.5-122B-A10B"]),
    "qwen3.5-397b-a17b": (f"{NEW}/Qwen--Qwen3.5-397B-A17B.json", ["Qwen/Qwen3.5-397B-A17B"]),
    "qwen3.6-35b-a3b": (f"{NEW}/Qwen--Qwen3.6-35B-A3B.json", ["Qwen/Qwen3.6-35B-A3B"]),
    "qwen3-vl-8b": (f"{NEW}/Qwen--Qwen3-VL-8B-Instruct.json", ["Qwen/Qwen3-VL-8B-Instruct"]),
    # the Thinking file derives the same spec
    "qwen3-vl-32b": (f"{NEW}/Qwen--Qwen3-VL-32B-Instruct.json", ["Qwen/Qwen3-VL-32B-Instruct", "Qwen/Qwen3-VL-32B-Thinking"]),
    "qwen3-vl-235b-a22b": (f"{NEW}/Qwen--Qwen3-VL-235B-A22B-Instruct.json", ["Qwen/Qwen3-VL-235B-A22B-Instruct"]),
    "qwen3-coder-480b-a35b": (f"{NEW}/Qwen--Qwen3-Coder-480B-A35B-Instruct.json", ["Qwen/Qwen3-Coder-480B-A35B-Instruct"]),
    "gemma-4-31b-it-nvfp4": (f"{NEW}/nvidia--Gemma-4-31B-IT-NVFP4.json", ["nvidia/Gemma-4-31B-IT-NVFP4"]),
    "gemma-4-26b-a4b-nvfp4": (f"{NEW}/nvidia--Gemma-4-26B-A4B-NVFP4.json", ["nvidia/Gemma-4-26B-A4B-NVFP4"]),
    "deepseek-v3.1": (f"{NEW}/deepseek-ai--DeepSeek-V3.1.json", ["deepseek-ai/DeepSeek-V3.1"]),
    "deepseek-v4-flash-fp8": (f"{NEW}/sgl-project--DeepSeek-V4-Flash-FP8.json", ["sgl-project/DeepSeek-V4-Flash-FP8"]),
    "deepseek-v4-pro-fp8": (f"{NEW}/sgl-project--DeepSeek-V4-Pro-FP8.json", ["sgl-project/DeepSeek-V4-Pro-FP8"]),
    "glm-4.7-flash": (f"{NEW}/zai-org--GLM-4.7-Flash.json", ["zai-org/GLM-4.7-Flash"]),
    "glm-5": (f"{NEW}/zai-org--GLM-5.json", ["zai-org/GLM-5", "zai-org/GLM-5.1"]),  # GLM-5.1's file derives the same
    "glm-5.2": (f"{NEW}/zai-org--GLM-5.2.json", ["zai-org/GLM-5.2"]),
    "kimi-k2.5": (f"{NEW}/moonshotai--Kimi-K2.5.json", ["moonshotai/Kimi-K2.5"]),
    "minimax-m2.5": (f"{NEW}/MiniMaxAI--MiniMax-M2.5.json", ["MiniMaxAI/MiniMax-M2.5"]),
    "minimax-m2.7": (f"{NEW}/MiniMaxAI--MiniMax-M2.7.json", ["MiniMaxAI/MiniMax-M2.7"]),
    "minimax-m3": (f"{NEW}/MiniMaxAI--MiniMax-M3.json", ["MiniMaxAI/MiniMax-M3"]),
    "nemotron-3-ultra-550b-a55b": (f"{NEW}/nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json",
                                   ["nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"]),
    "step-3.7-flash": (f"{NEW}/stepfun-ai--Step-3.7-Flash.json", ["stepfun-ai/Step-3.7-Flash"]),
    "mimo-7b": (f"{NEW}/XiaomiMiMo--MiMo-7B-Base.json", ["XiaomiMiMo/MiMo-7B-Base"]),
    "olmo-3.1-32b": (f"{NEW}/allenai--Olmo-3.1-32B-Instruct.json", ["allenai/Olmo-3.1-32B-Instruct"]),
    "smollm3-3b": (f"{NEW}/HuggingFaceTB--SmolLM3-3B.json", ["HuggingFaceTB/SmolLM3-3B"]),
    "devstral-2-123b": (f"{NEW}/mistralai--Devstral-2-123B-Instruct.json", ["mistralai/Devstral-2-123B-Instruct"]),
    "devstral-small-2-24b": (f"{NEW}/mistralai--Devstral-Small-2-24B-Instruct.json", ["mistralai/Devstral-Small-2-24B-Instruct"]),
}


def sources(folder: Path) -> dict[str, dict[str, str]]:
    """The rows of a SOURCES.md table, by file name."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in (folder / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line) <= set("|-: "):
            rows[cells[0]] = dict(zip(header, cells))
    return rows


def _logged_ids() -> list[str]:
    index = REPO / "tests" / "data" / "vllm_logs" / "index.jsonl"
    return [json.loads(line)["model_id"] for line in index.read_text(encoding="utf-8").splitlines() if line.strip()]


def _vllm_model_provenance(config: str) -> str:
    """tests/data/vllm_models/<org>--<name>/config.json: typed from the Hub file (tier C, that folder's SOURCES.md)
    and tied to real runs: its KV layout reproduces the logged blocks, tokens and concurrency exactly
    (tests/test_engine_vllm.py), its parameters the logged weight memory (docs/engines/calibration.md)."""
    folder = (REPO / config).parent.name
    if folder not in sources(REPO / VLLM):
        raise SystemExit(f"{config}: no row in {VLLM}/SOURCES.md")
    model = folder.replace("--", "/", 1)
    logged = _logged_ids()
    same = [m for m in logged if m.lower() == model.lower()]
    if same:
        check = f"checked against its vLLM 0.19.0 start-up log{'s' if len(same) > 1 else ''} (tests/data/vllm_logs)"
    else:
        variants = sorted({m for m in logged if model.split("/")[1].lower() in m.lower()})
        check = "checked against the vLLM 0.19.0 start-up logs of " + ", ".join(variants) + " (tests/data/vllm_logs)"
    return (f"config.json of {model}, typed from huggingface.co/{model}/blob/main/config.json (tier C, "
            f"{VLLM}/SOURCES.md), {check}; derived by hf_config.py from {config}")


def provenance(config: str) -> str:
    if config.startswith(VLLM + "/"):
        return _vllm_model_provenance(config)
    path = REPO / config
    row = sources(path.parent)[path.name]
    if row.get("repo") == "this repository":
        origin = f"a synthetic variant ({row.get('notes', '')[:80]})"
    else:
        origin = f"github.com/{row['repo']} {row['path'].split(' (')[0]} @ {row['commit'][:12]} (tier {row['tier']})"
    return f"config.json of {row['model']}, read from {origin}; derived by hf_config.py from {config}"


def derive(name: str) -> dict:
    """The spec mapping of one bundled model, as the YAML file holds it."""
    config, aliases = MODELS[name]
    path = REPO / config
    spec = hf_config.spec_from_config_file(path, yamlio.load_json(path), name=name)
    mapping = spec_to_mapping(spec)
    out = {"name": name, "aliases": aliases, "provenance": provenance(config)}
    out.update({k: v for k, v in mapping.items() if k not in ("name", "aliases", "provenance")})
    spec_from_mapping(out, source=f"model_specs/{name}.yaml")  # must validate
    return out


def render(name: str) -> str:
    config = MODELS[name][0]
    return (f"# Generated by scripts/make_specs.py from {config}; edit that script or hf_config.py, not this file.\n"
            + yamlio.dump_yaml(derive(name)))


def alias_index_text() -> str:
    """model_specs/aliases.txt: every bundled file's name and aliases as the file says them (kvplan/model/bundled.py
    alias_index reads it instead of each file's aliases line; written after the specs, so it reads what they say)."""
    lines = ["# Generated by scripts/make_specs.py from model_specs/*.yaml: name, then aliases, tab-separated."]
    for path in sorted(OUT.glob("*.yaml")):
        mapping = yamlio.load_yaml_text(path.read_text(encoding="utf-8"), where=f"model_specs/{path.name}")[0]
        aliases = spec_from_mapping(mapping, source=f"model_specs/{path.name}").aliases
        if any("\t" in a or "\n" in a for a in aliases):
            raise SystemExit(f"model_specs/{path.name}: an alias holds a tab or newline")
        lines.append("\t".join([path.stem, *aliases]))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    stale = []
    for name in sorted(MODELS):
        path = OUT / f"{name}.yaml"
        text = render(name)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    extra = sorted(p.name for p in OUT.glob("*.yaml") if p.stem not in MODELS)
    index = OUT / bundled.INDEX
    if args.check:
        if not index.is_file() or index.read_text(encoding="utf-8") != alias_index_text():
            stale.append(index.name)
    else:
        index.write_text(alias_index_text(), encoding="utf-8")
    if args.check:
        for name in stale:
            print(f"stale: model_specs/{name}", file=sys.stderr)
        return 1 if stale else 0
    print(f"wrote {len(MODELS)} specs to {OUT.relative_to(REPO)}" + (f"; not generated here: {', '.join(extra)}" if extra else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
