"""Issue 26, tracebacks: a value of the wrong type anywhere in a config.json or a deployment file is exit 2 naming the
field (or 3 where the file may be right and kvplan cannot tell), never a traceback; a shell script that cannot be
read (a nested default, a quote left open, a variable that doubles itself) is one line, not a crash or an exhausted
memory. Each case is a real file from tests/data with one value changed as careless hands or templating leave it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).parent / "data"
LLAMA = DATA / "hf_configs" / "llama-3.1-8b.json"


@pytest.mark.parametrize("key, value", [
    ("layer_types", []), ("block_configs", 5), ("block_configs", [5]), ("text_config", 3), ("rope_scaling", "x"),
    ("tie_word_embeddings", "yes"), ("quantization_config", []), ("torch_dtype", 5),
])
def test_a_wrongly_typed_config_field_is_exit_2_naming_it(cli, tmp_path, key, value):
    config = json.loads(LLAMA.read_text())
    config[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    for args in (("estimate", path, "--gpu", "h100", "--engine", "vllm"), ("show", path)):
        code, out, err = cli(*args)
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and f"{path}: {key}" in err, err


def _set(doc, path, value):
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


@pytest.mark.parametrize("source, field, value", [
    ("kserve/isvc-hf-llama31-8b-g5.yaml", ("spec", "predictor", "model", "modelFormat"), "huggingface"),
    ("rayserve/gke-rayservice-llama3-8b-2x-l4.yaml", None, "${REPLICAS}"),
    ("compose/sglang-llama31-8b-device0.yaml", None, "gpu"),
])
def test_a_wrongly_typed_deployment_field_is_exit_2_naming_it(cli, tmp_path, source, field, value):
    text = (DATA / "deployments" / source).read_text()
    if field is not None:
        docs = list(yaml.safe_load_all(text))
        _set(docs[0], field, value)
        text = yaml.safe_dump_all(docs, sort_keys=False)
    elif "rayserve" in source:
        text = text.replace("num_replicas: 1", f"num_replicas: '{value}'")
    else:
        text = text.replace("      resources:\n        reservations:", f"      resources: {value}\n      x-was:\n        reservations:")
    path = tmp_path / Path(source).name
    path.write_text(text)
    code, out, err = cli("check", path, "--gpu", "h100", "--offline")
    assert code in (2, 3), err
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors, err
    if code == 2:
        assert any(name in err for name in ("modelFormat", "num_replicas", "resources")), err


@pytest.mark.parametrize("script, words", [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len ${MAX_LEN:-${DEFAULT_LEN:-8192}}\n", "pass"),
    ('MSG="unterminated\nvllm serve meta-llama/Llama-3.1-8B-Instruct\n', "invalid"),
    ("A=xx\n" + "A=$A$A\n" * 40 + "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name $A\n", "invalid"),
    ('CMD="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192"\neval "$CMD"\n', "cannot_judge"),
    ("alias serve='vllm serve'\nserve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n", "pass"),
])
def test_shell_idioms_are_read_or_refused_in_one_line(cli, tmp_path, script, words):
    path = tmp_path / "serve.sh"
    path.write_text("#!/bin/sh\n" + script)
    code, out, err = cli("check", path, "--gpu", "h100", "--format", "json")
    verdict = json.loads(out)["verdicts"][0]
    assert verdict["status"] == words, (out, err)
    assert code == {"pass": 0, "invalid": 2, "cannot_judge": 3}[words]
    if words == "pass":
        assert verdict["max_model_len"] == 8192


@pytest.mark.parametrize("value", ["two", ".inf", "'２'"])
def test_a_helm_parallelism_that_is_no_whole_number_is_bad_input(cli, tmp_path, value):
    """llm-d's parallelism.tensor read any bad value as 1 (tensor parallel 1: a possible wrong yes), and `.inf`
    raised OverflowError; both are exit 2 naming the field."""
    source = DATA / "deployments" / "helm" / "llmd-modelservice-heterogeneous-pd-nvidia-gaudi.yaml"
    path = tmp_path / source.name
    path.write_text(source.read_text().replace("    tensor: 2\n", f"    tensor: {value}\n", 1))
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    assert code == 2, err
    assert "parallelism.tensor" in err and "Traceback" not in err, err


# ------------------------------------------------------------------ incomplete checkpoints (issue 26)

def _checkpoint(tmp_path, files: dict[str, bytes]) -> Path:
    folder = tmp_path / "Llama-3.1-8B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_bytes(LLAMA.read_bytes())
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _index(total: int, shards: int = 4) -> bytes:
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    return json.dumps({"metadata": {"total_size": total},
                       "weight_map": {f"layer{i}.weight": n for i, n in enumerate(names)}}).encode()


@pytest.mark.parametrize("case, words", [
    ("one shard of four", "names 3 shard(s) the folder does not have"),
    ("index total_size of 1 byte", "not the whole checkpoint"),
    ("a header of no tensors", "not the whole checkpoint"),
    ("one of four shards, no index", "holds 1 of the checkpoint's 4 safetensors shards"),
])
def test_an_incomplete_checkpoint_is_refused_not_sized(cli, tmp_path, case, words):
    """Llama-3.1-8B's 16 GB of bf16 weights 'fit' a T4 when a partial download or lying metadata was taken as the
    checkpoint; each is refused, naming what is wrong."""
    import struct

    empty_header = struct.pack("<Q", 2) + b"{}"
    files = {
        "one shard of four": {"model.safetensors.index.json": _index(16_060_522_496),
                              "model-00001-of-00004.safetensors": empty_header},
        "index total_size of 1 byte": {"model.safetensors.index.json": _index(1)},
        "a header of no tensors": {"model.safetensors": empty_header},
        "one of four shards, no index": {"model-00001-of-00004.safetensors": empty_header},
    }[case]
    folder = _checkpoint(tmp_path, files)
    code, out, err = cli("estimate", folder, "--gpu", "t4", "--seq", "1K")
    assert code == 2, err
    assert err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("construct", ["extends", "include"])
def test_compose_extends_and_include_are_cannot_judge(cli, tmp_path, construct):
    """A service that extends another, or a file that includes others, takes settings kvplan does not merge: the
    inherited 70B service was dropped and the file passed (issue 26)."""
    doc = yaml.safe_load((DATA / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml").read_text())
    if construct == "extends":
        doc["services"]["sglang"]["extends"] = {"file": "base.yaml", "service": "llm"}
    else:
        doc = {"include": ["models.yaml"], **doc}
    path = tmp_path / "compose.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    verdicts = json.loads(out)["verdicts"]
    assert code == 3 and verdicts[0]["status"] == "cannot_judge", err
    assert construct in verdicts[0]["reason"]


def test_a_skypilot_accelerator_count_of_inf_is_bad_input(cli, tmp_path):
    """Found by scripts/fuzz.py (seed 101): `A10g:8: .inf` among a service's any_of accelerators raised
    OverflowError from int(inf)."""
    source = DATA / "deployments" / "skypilot" / "gpt-oss-120b-1x-h100-vllm.sky.yaml"
    doc = yaml.safe_load(source.read_text())
    doc["resources"]["accelerators"] = {"H100": float("inf")}
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("check", path, "--offline", "--format", "json")
    assert code == 2 and "kvplan judges whole GPUs" in err, err
