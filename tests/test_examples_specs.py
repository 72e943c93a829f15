"""The hand-written spec in examples/ is what the README shows; keep it working and hand-checked."""

import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "specs" / "my-model.yaml"


def test_hand_written_spec(cli):
    code, out, _ = cli("estimate", EXAMPLE, "--seq", "32K", "--json")
    d = json.loads(out)
    # 20 sliding layers keep 4096 tokens, 10 full layers keep 32768; 8 KV heads x (128 + 128) x 2 bytes
    assert code == 0 and d["kv_bytes"] == 20 * 8 * 256 * 2 * 4096 + 10 * 8 * 256 * 2 * 32768
    assert d["kv_bytes_per_token"] == 30 * 8 * 256 * 2


def test_show_writes_back_what_it_read(cli, tmp_path):
    code, out, _ = cli("show", EXAMPLE)
    copy = tmp_path / "copy.yaml"
    copy.write_text(out)
    a = json.loads(cli("estimate", EXAMPLE, "--seq", "9999", "--json")[1])
    b = json.loads(cli("estimate", copy, "--seq", "9999", "--json")[1])
    assert code == 0 and a == b
