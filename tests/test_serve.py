"""`kvplan serve` over a real socket on loopback: uvicorn is started by the test on a free port, and every request goes
through http.client, as any program's would. The answers are the Python API's (tests/test_api.py ties those to the
command line); errors are one JSON object each, and the server keeps serving after a malformed, oversized or slow body
and through 50 requests at once."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="kvplan[serve] is not installed")
uvicorn = pytest.importorskip("uvicorn", reason="kvplan[serve] is not installed")

import kvplan  # noqa: E402
import serving  # noqa: E402
from kvplan.serve import app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LIMITS = app.Limits(max_body=64 * 1024, body_seconds=1.5, call_seconds=120, workers=4)


@pytest.fixture(scope="module")
def server():
    with serving.running(LIMITS) as port:
        yield port


def request(port: int, method: str, path: str, body=None, *, raw: bytes | None = None, headers=None):
    """(status, headers, JSON body) of one request on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(text) if resp.getheader("content-type", "").startswith(
        "application/json") else text.decode()


def assert_still_serving(port):
    status, headers, body = request(port, "GET", "/api/gpus")
    assert status == 200 and body == kvplan.gpus().to_dict()


def test_estimate_answers_what_the_api_answers(server):
    args = {"model": "llama-3.1-8b", "seq": "32K", "batch": 8, "gpu": "h100", "engine": "vllm"}
    status, headers, body = request(server, "POST", "/api/estimate", args)
    assert status == 200 and headers["x-kvplan-exit-code"] == "0"
    assert body == kvplan.estimate(**args).to_dict()
    assert body["max_concurrency"] == kvplan.estimate("llama-3.1-8b", seq=32768, gpu="h100", engine="vllm").max_concurrency


def test_a_definite_no_is_a_result_with_exit_code_1(server):
    status, headers, body = request(server, "POST", "/api/estimate",
                                    {"model": "llama-3.1-70b", "seq": "128K", "batch": 8, "gpu": "h100"})
    assert status == 200 and headers["x-kvplan-exit-code"] == "1" and body["fits"] is False


def test_a_pasted_config_json_is_a_model(server):
    config = json.loads((ROOT / "tests/data/hf_configs/llama-3.1-8b.json").read_text())
    status, _, body = request(server, "POST", "/api/estimate", {"config": config, "seq": 8192, "gpu": "h100"})
    want = kvplan.estimate(str(ROOT / "tests/data/hf_configs/llama-3.1-8b.json"), seq=8192, gpu="h100")
    assert status == 200 and body["kv_bytes"] == want.kv_bytes == 8192 * 131072
    assert body["weights_bytes"] == want.weights_bytes


def test_bad_input_is_one_json_error_with_the_exit_code(server):
    status, headers, body = request(server, "POST", "/api/estimate", {"model": "llama-3.1-8b", "gpu": "h1000"})
    assert status == 400 and headers["x-kvplan-exit-code"] == "2"
    assert body["exit_code"] == 2 and body["error"]["where"] == "--gpu" and "h1000" in body["error"]["what"]
    status, _, body = request(server, "POST", "/api/estimate", {"model": "llama-3.1-8b", "batches": 8})
    assert status == 400 and body["error"]["where"] == "batches" and "batch" in body["error"]["hint"]
    status, _, body = request(server, "POST", "/api/estimate", {"model": "llama-3.1-8b", "batch": "eight"})
    assert status == 400 and body["error"]["where"] == "batch"


def test_the_server_reads_no_file_of_its_own(server):
    for model in ("/etc/passwd", "tests/data/hf_configs/llama-3.1-8b.json", "../x.yaml"):
        status, _, body = request(server, "POST", "/api/estimate", {"model": model})
        assert status == 400 and body["error"]["where"] == "model", model
    status, _, body = request(server, "POST", "/api/estimate", {"model": "llama-3.1-8b", "models_dir": "/"})
    assert status == 400 and body["error"]["where"] == "models_dir"


def test_malformed_bodies_get_one_json_error_and_the_server_keeps_serving(server):
    # the last is nested deeper than Python's JSON reader goes, yet under the size limit
    for raw in (b"{not json", b"\xff\xfe", b"[1, 2", b"[" * 30_000 + b"]" * 30_000):
        assert len(raw) < LIMITS.max_body
        status, _, body = request(server, "POST", "/api/estimate", raw=raw)
        assert status == 400 and body["exit_code"] == 2 and body["error"]["where"] == "body", raw[:10]
    status, _, body = request(server, "POST", "/api/estimate", ["llama-3.1-8b"])
    assert status == 400 and "JSON object" in body["error"]["what"]
    assert_still_serving(server)


def test_oversized_bodies_are_refused_before_they_are_read(server):
    big = json.dumps({"model": "llama-3.1-8b", "pad": "x" * (LIMITS.max_body + 1)}).encode()
    status, _, body = request(server, "POST", "/api/estimate", raw=big)
    assert status == 413 and body["exit_code"] == 2
    # no Content-Length: the body is counted as it arrives
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=30)
    conn.putrequest("POST", "/api/estimate")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    try:
        for _ in range(LIMITS.max_body // 8192 + 2):
            conn.send(b"2000\r\n" + b"x" * 8192 + b"\r\n")
        conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered and closed before the rest was sent
    resp = conn.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["exit_code"] == 2
    conn.close()
    assert_still_serving(server)


def test_a_body_that_does_not_arrive_in_time_is_refused(server):
    with socket.create_connection(("127.0.0.1", server), timeout=30) as sock:
        sock.sendall(b"POST /api/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"model\":")
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and json.loads(payload)["error"]["where"] == "body"
    assert_still_serving(server)


def test_fifty_requests_at_once_each_get_their_own_answer(server):
    lengths = [1024 * (i + 1) for i in range(50)]
    want = {n: kvplan.estimate("llama-3.1-8b", seq=n, batch=4, gpu="h100", engine="vllm").to_dict() for n in lengths}

    def ask(n):
        return n, request(server, "POST", "/api/estimate",
                          {"model": "llama-3.1-8b", "seq": n, "batch": 4, "gpu": "h100", "engine": "vllm"})

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(ask, lengths))
    assert len(answers) == 50
    for n, (status, _, body) in answers:
        assert status == 200 and body == want[n], n
    assert len({body["seq"] for _, (_, _, body) in answers}) == 50


def test_check_takes_the_files_in_the_request(server):
    folder = ROOT / "examples/deploy/vllm"
    files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    status, headers, body = request(server, "POST", "/api/check", {"files": files, "gpu": "h100"})
    want = kvplan.check(str(folder), gpu="h100")
    assert status == 200 and headers["x-kvplan-exit-code"] == str(want.exit_code)
    assert sorted((v["name"], v["status"]) for v in body["verdicts"]) == sorted((v.name, v.status) for v in want.verdicts)


def test_catalogs_openapi_and_unknown_paths(server):
    status, _, body = request(server, "GET", "/api/models")
    assert status == 200 and body == kvplan.models().to_dict()
    status, _, document = request(server, "GET", "/api/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.1")
    assert {"/api/estimate", "/api/check", "/api/plan", "/api/explain", "/api/calibrate", "/api/models",
            "/api/gpus"} <= set(document["paths"])
    jsonschema = pytest.importorskip("jsonschema")
    schema = document["paths"]["/api/estimate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"model": "llama-3.1-8b", "seq": "32K", "batch": 8, "gpu": "h100"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"model": "llama-3.1-8b", "batch": "8"}, schema)
    for method, path, code in (("GET", "/api/nothing", 404), ("DELETE", "/api/estimate", 405), ("GET", "/x.js", 404)):
        status, _, body = request(server, method, path)
        assert status == code and body["error"]["where"].endswith(path)
    status, _, body = request(server, "GET", "/api/estimate?model=x")
    assert status == 400 and body["error"]["where"] == "query"


def test_kvplan_serve_listens_on_loopback_and_warns_elsewhere(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kvplan", "serve", "--host", "127.0.0.2", "--port", str(port)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        for _ in range(200):
            try:
                conn = http.client.HTTPConnection("127.0.0.2", port, timeout=5)
                conn.request("GET", "/api/gpus")
                resp = conn.getresponse()
                assert resp.status == 200 and json.loads(resp.read()) == kvplan.gpus().to_dict()
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        else:
            pytest.fail("kvplan serve did not answer")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "warning: listening on 127.0.0.2" in err and "no authentication" in err
    bad = subprocess.run([sys.executable, "-m", "kvplan", "serve", "--port", "70000"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --port")
