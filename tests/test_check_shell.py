"""The shell reader (kvplan/check/shell.py) and the engine-launch finder (kvplan/check/launch.py), each rule against
what POSIX sh / bash would do with the same text (the expected words were written from the shell's rules, and the
ones marked `sh:` were run through /bin/sh to confirm them)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kvplan.check import launch, shell
from kvplan.check.shell import MARK, ShellSyntaxError


def words(text, env=None):
    return [list(c.words) for c in shell.commands(text, env)]


def unresolved(name):
    return f"{MARK}{name}{MARK}"


# ------------------------------------------------------------------ expansion, quoting, operators

@pytest.mark.parametrize("text, env, expected", [
    ("vllm serve m --tp 2", {}, [["vllm", "serve", "m", "--tp", "2"]]),
    ("echo 'a b' \"c d\" e\\ f", {}, [["echo", "a b", "c d", "e f"]]),
    ("M=qwen\nvllm serve $M", {}, [["vllm", "serve", "qwen"]]),
    ("vllm serve ${MODEL:-org/default}", {}, [["vllm", "serve", "org/default"]]),
    ("vllm serve ${MODEL:-org/default}", {"MODEL": "given"}, [["vllm", "serve", "given"]]),
    ("vllm serve ${MODEL-x}", {"MODEL": ""}, [["vllm", "serve"]]),  # `-` keeps a set empty value; unquoted, it vanishes
    ("vllm serve \"${MODEL-x}\"", {"MODEL": ""}, [["vllm", "serve", ""]]),
    (": ${TP:=4}\nvllm serve m -tp $TP", {}, [[":", "4"], ["vllm", "serve", "m", "-tp", "4"]]),
    ("vllm serve m ${EXTRA:+--enforce-eager}", {"EXTRA": "1"}, [["vllm", "serve", "m", "--enforce-eager"]]),
    ("vllm serve m ${EXTRA:+--enforce-eager}", {}, [["vllm", "serve", "m"]]),
    ("N=2\nvllm serve m -tp $((N * 4))", {}, [["vllm", "serve", "m", "-tp", "8"]]),
    ("ARGS='--a 1 --b'\nrun $ARGS \"$ARGS\"", {}, [["run", "--a", "1", "--b", "--a 1 --b"]]),  # field splitting
    ("a && b || c; d | e & f", {}, [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
    ("vllm serve m \\\n  --tp 2 # a comment\n", {}, [["vllm", "serve", "m", "--tp", "2"]]),
    ("vllm serve m > log.txt 2>&1 < /dev/null", {}, [["vllm", "serve", "m"]]),  # redirections are no arguments
    ("export HF=1 M=q\nvllm serve $M", {}, [["vllm", "serve", "q"]]),
    # a prefix assignment is the command's, not the shell's: $M is expanded before it, from outside the file
    ("M=a vllm serve $M", {}, [["vllm", "serve", unresolved("M")]]),
])
def test_words_as_the_shell_expands_them(text, env, expected):
    assert words(text, env) == expected


def test_prefix_assignment_is_the_commands_environment():
    (cmd,) = shell.commands("CUDA_VISIBLE_DEVICES=0,1 vllm serve m")
    assert cmd.words == ("vllm", "serve", "m") and cmd.env == {"CUDA_VISIBLE_DEVICES": "0,1"}


ENV_SCRIPTS = [
    "export A=1\nB=2\nC=3 env",  # exported, a shell variable (not in the environment), a prefix
    "A=1\nexport A\nexport B=x\nunset B\nenv",  # `export NAME` exports the shell variable; unset removes it
    "export A=1\nA=2\nenv",  # an exported name keeps being exported with its new value
    "if [ \"${MODE:-a}\" = a ]; then export A=1; fi\nenv",  # a branch the shell decides
]


@pytest.mark.parametrize("text", ENV_SCRIPTS)
def test_a_commands_environment_is_what_the_script_exported_and_its_prefixes(text):
    """sh: `env` run after the same lines prints the variables kvplan gives the command (the exported ones and
    its own VAR=x prefixes, never the plain shell variables); checked against /bin/sh where there is one."""
    (cmd,) = [c for c in shell.commands(text) if c.words == ("env",)]
    if shutil.which("sh"):
        real = subprocess.run(["sh", "-c", text], capture_output=True, text=True, env={}, check=True)
        expected = dict(line.split("=", 1) for line in real.stdout.splitlines() if line[:2] in ("A=", "B=", "C="))
        assert cmd.env == expected
    assert "B" not in cmd.env


@pytest.mark.skipif(shutil.which("sh") is None, reason="no /bin/sh")
@pytest.mark.parametrize("text", [
    "M=qwen\nprintf '%s\\n' serve $M ${TP:-2} \"${X-none}\" $((3 * 4))",
    "ARGS='--a 1'\nprintf '%s\\n' $ARGS \"$ARGS\" 'q q' e\\ f",
    "if [ \"${MODE:-a}\" = a ]; then T=1; else T=2; fi\nprintf '%s\\n' $T",
    ": ${P:=9}\nprintf '%s\\n' $P ${Q:+x} ${P:+y}",
])
def test_against_the_real_shell(text):
    """sh: the same text run by /bin/sh (printf one word per line) gives the words kvplan reads."""
    real = subprocess.run(["sh", "-c", text], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=True)
    ours = [w for c in shell.commands(text) if c.words[0] == "printf" for w in c.words[2:]]
    assert ours == real.stdout.splitlines()


def test_unknown_values_are_marked_and_named():
    (cmd,) = shell.commands("vllm serve $MODEL --tp $(nproc) --x ${Y:?set Y}")
    assert cmd.words[2] == unresolved("MODEL")
    assert shell.unresolved_names(cmd.words[4]) == ["$(nproc)"]
    assert shell.display(" ".join(cmd.words)) == "vllm serve $MODEL --tp $(nproc) --x $Y"


# ------------------------------------------------------------------ control flow

def test_a_decidable_if_takes_its_branch():
    text = "if [ \"$GPU\" = h100 ]; then TP=8; elif [ -n \"$GPU\" ]; then TP=2; else TP=1; fi\nvllm serve m -tp $TP"
    assert words(text, {"GPU": "h100"})[-1][-1] == "8"
    assert words(text, {"GPU": "l4"})[-1][-1] == "2"
    assert words(text, {"GPU": ""})[-1][-1] == "1"


def test_an_undecidable_if_reads_every_branch_and_forgets_what_they_disagree_on():
    text = "if [ -f /x ]; then TP=8; vllm serve a; else TP=1; fi\nvllm serve m -tp $TP"
    cmds = words(text)
    assert ["vllm", "serve", "a"] in cmds  # a command of a branch that may run is read
    assert cmds[-1][-1] == unresolved("TP")  # TP is 8 or 1: not known
    same = words("if [ -f /x ]; then TP=4; else TP=4; fi\nvllm serve m -tp $TP")
    assert same[-1][-1] == "4"


def test_loops_run_once_and_case_is_passed_over():
    cmds = words("for i in 1 2; do echo $i; done\ncase $x in a) rm -rf /;; esac\nvllm serve m")
    assert cmds == [["echo", unresolved("i")], ["vllm", "serve", "m"]]


@pytest.mark.parametrize("text", ["echo 'open", "echo \"open", "if true; then echo x", "echo $((1 +"])
def test_unreadable_text_is_a_syntax_error(text):
    with pytest.raises(ShellSyntaxError):
        shell.commands(text)


# ------------------------------------------------------------------ engine launches

@pytest.mark.parametrize("text, engine, launcher, args", [
    ("vllm serve org/m --tp 2", "vllm", "vllm serve", ["org/m", "--tp", "2"]),
    ("python3 -m vllm.entrypoints.openai.api_server --model m", "vllm", "python3 -m vllm.entrypoints.openai.api_server",
     ["--model", "m"]),
    ("python -m sglang.launch_server --model-path m --tp 4", "sglang", "python -m sglang.launch_server",
     ["--model-path", "m", "--tp", "4"]),
    ("trtllm-serve org/m --tp_size 8", "trtllm", "trtllm-serve", ["org/m", "--tp_size", "8"]),
    ("nohup env HF_HOME=/h numactl --cpunodebind=0 vllm serve m &", "vllm", "vllm serve", ["m"]),
    ("uv run --with vllm vllm serve m", "vllm", "vllm serve", ["m"]),
    ("bash -lc 'vllm serve m --max-model-len 4096'", "vllm", "vllm serve", ["m", "--max-model-len", "4096"]),
    ("exec python3 -m vllm.entrypoints.cli.main serve m", "vllm", "python3 -m vllm.entrypoints.cli.main serve", ["m"]),
])
def test_engine_launches_are_found_behind_wrappers(text, engine, launcher, args):
    (call,) = launch.calls_in_shell(text)
    assert (call.engine, call.launcher, list(call.args)) == (engine, launcher, args)


def test_docker_run_carries_its_image_gpus_and_environment():
    (call,) = launch.calls_in_shell("docker run --rm --gpus '\"device=0,1\"' -e TP=2 -p 8000:8000 "
                                    "vllm/vllm-openai:v0.10.1 --model m -tp 2")
    assert call.image == "vllm/vllm-openai:v0.10.1" and call.engine == "vllm"
    assert list(call.args) == ["--model", "m", "-tp", "2"] and call.env.get("TP") == "2"
    assert call.gpus.count == 2


def test_no_engine_no_call():
    assert launch.calls_in_shell("python app.py --port 8000\nnginx -g 'daemon off;'") == []


@pytest.mark.parametrize("image, engine, version", [
    ("vllm/vllm-openai:v0.8.5", "vllm", "0.8.5"),
    ("docker.io/vllm/vllm-openai:v0.10.1.1", "vllm", "0.10.1.1"),
    ("vllm/vllm-openai:latest", "vllm", None),
    ("vllm/vllm-openai:nightly-0123abc", "vllm", None),
    ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1"),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0rc4", "trtllm", "1.0.0rc4"),
])
def test_image_tags_pin_releases(image, engine, version):
    pin = launch.image_release(image)
    assert (pin.engine, pin.version) == (engine, version) and pin.origin == f"image {image}"


def test_images_that_pin_nothing_and_pip_pins():
    assert launch.image_release("ghcr.io/acme/my-vllm:1.2") is None  # not vLLM's own image: its tag is the builder's
    assert launch.image_engine("ghcr.io/acme/my-vllm:1.2") == "vllm"
    pin = launch.pip_release("RUN pip install --no-cache-dir 'vllm==0.10.1+gptoss' transformers")
    assert (pin.engine, pin.version) == ("vllm", "0.10.1+gptoss")
    assert launch.pip_release("pip install -U vllm").version is None
    assert launch.non_gpu_accelerator("opea/vllm-gaudi:latest").startswith("Intel Gaudi")


def test_container_words_combine_entrypoint_and_command_as_kubernetes_does():
    assert launch.container_words("vllm/vllm-openai:v0.10.1", None, ["--model", "m"]) == (
        ["vllm", "serve", "--model", "m"],
        "image vllm/vllm-openai:v0.10.1: the file gives only arguments; its entrypoint is taken to be vLLM's `vllm serve`")
    assert launch.container_words("x", ["python3", "-m", "sglang.launch_server"], ["--model-path", "m"])[0] == [
        "python3", "-m", "sglang.launch_server", "--model-path", "m"]
    assert launch.container_words("busybox", None, None) == (None, None)


def test_the_scripts_own_folder():
    """$0 is the script as the reader names it; `dirname` and `cd DIR && pwd` of it are the paths beside it."""
    env = {"0": "serve.sh"}
    assert words('trtllm-serve m --config "$(dirname "$0")/opts.yaml"', env)[0][-1] == "./opts.yaml"
    here = words('HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\nrun "$HERE/x"', env)
    assert here[-1] == ["run", "./x"]
    assert shell.unresolved_names(words("run $(dirname $1)/x")[0][1]) == ["$(dirname $1)"]  # $1 is the caller's


@pytest.mark.parametrize("nesting", [
    lambda body: "if true; then\n" * 600 + body + "fi\n" * 600,  # hundreds of nested ifs
    lambda body: "X=" + "${A:-" * 300 + "1" + "}" * 300 + "\n" + body,  # defaults nested past any reader's depth
])
def test_a_deeply_nested_script_gets_its_own_verdict_and_the_others_theirs(cli, tmp_path, nesting):
    # issue 26: such a script ended the whole run with one error line and no report; the shell nests them freely
    real = Path(__file__).parent / "data" / "deployments" / "script" / "multiagentsdebate-qwen3-14b-tp4.sh"
    deep = tmp_path / "deep.sh"
    deep.write_text(nesting(real.read_text()))
    other = Path(__file__).parent.parent / "examples" / "deploy" / "prod" / "chat-8b.yaml"
    code, out, err = cli("check", deep, other, "--offline", "--format", "json")
    verdicts = {Path(v["source"]).name: v for v in json.loads(out)["verdicts"]}
    assert code == 3 and verdicts["chat-8b.yaml"]["status"] == "pass", err
    assert verdicts["deep.sh"]["status"] == "cannot_judge" and "nested" in verdicts["deep.sh"]["reason"]


def test_ray_job_submit_runs_the_command_after_the_double_dash():
    """`ray job submit [options] -- ENTRYPOINT` (Ray's job CLI: the entrypoint follows `--`), as OpenRLHF's examples
    start train_ppo_ray: the submitted command is the launch, scheduled on the cluster's nodes (it was read as
    starting nothing, so the script was skipped); without `--` nothing is submitted that kvplan can see."""
    words = ["ray", "job", "submit", "--address=http://127.0.0.1:8265", "--runtime-env-json={\"working_dir\": \"/x\"}",
             "--", "python3", "-m", "openrlhf.cli.train_ppo_ray", "--vllm_num_engines", "2"]
    (call,) = launch.calls_in_words(words, {})
    assert call.engine == launch.RL_TRAINER and call.scheduled
    assert call.args == ("--vllm_num_engines", "2")
    (served,) = launch.calls_in_words(["ray", "job", "submit", "--", "vllm", "serve", "org/m"], {})
    assert served.engine == launch.VLLM and served.args == ("org/m",)
    assert launch.calls_in_words(["ray", "job", "submit", "--address", "x"], {}) == []


def test_srun_overlap_takes_no_value():
    """srun's --overlap is a switch (srun(1)): OpenRLHF's train_ppo_ray_slurm.sh submits its job with `srun --overlap
    --nodes=1 ... bash -c "... ray job submit -- python3 -m openrlhf.cli.train_ppo_ray ..."`, which was read as
    starting nothing (--overlap taking `bash` as its value)."""
    (call,) = launch.calls_in_shell('srun --overlap bash -c "ray job submit -- python3 -m openrlhf.cli.train_ppo_ray '
                                    '--vllm_num_engines 1"', {})
    assert call.engine == launch.RL_TRAINER and call.args == ("--vllm_num_engines", "1") and call.scheduled


def test_backslash_newline_in_double_quotes_continues_the_line():
    """POSIX 2.2.3: inside double quotes a backslash before a newline is a line continuation, both removed (bash:
    `echo "a \\<newline>b"` prints "a b"). It was kept as a newline, which split a `bash -c "... \\<newline> -- cmd"`
    script (OpenRLHF's train_ppo_ray_slurm.sh) into commands that start nothing."""
    words = shell.commands('echo "a \\\nb"', {})[0].words
    assert tuple(words) == ("echo", "a b")
    (call,) = launch.calls_in_shell('bash -c "ray job submit \\\n  -- python3 -m openrlhf.cli.train_ppo_ray \\\n'
                                    '  --vllm_num_engines 1"', {})
    assert call.engine == launch.RL_TRAINER and call.args == ("--vllm_num_engines", "1")
