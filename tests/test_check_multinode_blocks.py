"""The per-node commands of one multi-node launch (issue 27): a guide's code block with `# node 0` and `# node 1`
commands starts engines on different machines, not two engines on one GPU. Distinct literal `--node-rank`s (SGLang,
vLLM) or vLLM `--data-parallel-start-rank`s (data parallelism over nodes: `--data-parallel-size-local` below
`--data-parallel-size`) keep them apart; two plain launches, or ranks left to the environment ($RANK), may still
share a GPU: cannot judge. Real guides: tests/data/deployments_2026/readme (Kimi-K2, Step3, LongCat)."""

import json

SGLANG = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --nnodes 2 "
          "--node-rank {rank} --dist-init-addr 10.0.0.1:5000 --context-length 8192")
VLLM_DP = ("vllm serve meta-llama/Llama-3.1-8B-Instruct {extra} --data-parallel-size 2 --data-parallel-size-local 1 "
           "--data-parallel-address 10.0.0.1 --max-model-len 8192")
PLAIN = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --port {port}"


def statuses(cli, tmp_path, *commands):
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n\n```bash\n" + "\n".join(commands) + "\n```\n")
    _, out, _ = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    return [(v["status"], v["reason"]) for v in json.loads(out)["verdicts"]]


def test_distinct_node_ranks_are_different_machines(cli, tmp_path):
    # Llama-3.1-8B at 8,192 tokens over TP 2 on H100s: each node's command is judged, and passes
    got = statuses(cli, tmp_path, "# node 0", SGLANG.format(rank=0), "# node 1", SGLANG.format(rank=1))
    assert [s for s, _ in got] == ["pass", "pass"], got


def test_vllm_data_parallel_start_ranks_are_different_machines(cli, tmp_path):
    got = statuses(cli, tmp_path, VLLM_DP.format(extra=""), VLLM_DP.format(extra="--headless --data-parallel-start-rank 1"))
    assert [s for s, _ in got] == ["pass", "pass"], got


def test_launches_that_do_not_say_their_node_may_share_a_gpu(cli, tmp_path):
    for commands in ((PLAIN.format(port=8000), PLAIN.format(port=8001)),
                     (SGLANG.format(rank="$RANK"), SGLANG.format(rank="$RANK")),
                     (SGLANG.format(rank=0), SGLANG.format(rank=0))):
        got = statuses(cli, tmp_path, *commands)
        assert [s for s, _ in got] == ["cannot_judge"] * 2 and all("may share a GPU" in r for _, r in got), got
