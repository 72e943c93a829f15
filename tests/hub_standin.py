"""A stand-in for the Hugging Face Hub on loopback, for the tests of kvplan/model/hub.py: a real HTTP server that
answers the requests the real huggingface_hub client makes (HEAD and GET of /{repo}/resolve/{revision}/{file},
with the X-Repo-Commit and ETag headers, 206 answers to Range requests), and the Hub's error answers (401 with
X-Error-Code GatedRepo, 404 with RepoNotFound / EntryNotFound / RevisionNotFound). It can also be slow or serve a
malformed config.json. Every request is logged (method, path, Range, Authorization) so tests can assert what was
asked. No test touches the internet: the client is pointed here with HF_ENDPOINT.

`misbehave` makes every answer one of the ways a real server or proxy fails (issue 26): "silent" accepts the
connection and never answers, "trickle" sends a status line and then one header line every 2 s without end, "500"
answers 500 every time, "endless" sends a 200 with no length and a body that never ends.

The config.json files served are the real ones of tests/data/public_models (byte copies with provenance); the
safetensors index and headers are built by the test that serves them, with the sizes written out in the test."""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PUBLIC_MODELS = Path(__file__).parent / "data" / "public_models"


def safetensors_file(tensors: dict[str, tuple[str, list[int]]], dtype_bytes: dict[str, int]) -> bytes:
    """The start of a safetensors file (8-byte length and JSON header) for `tensors` name -> (dtype, shape). The data
    that would follow is left out: a client that reads the header with a range request never asks for it."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = dtype_bytes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str
    revisions: tuple[str, ...] = ("main",)
    gated: bool = False


@dataclass
class StandIn:
    repos: dict[str, Repo] = field(default_factory=dict)
    delay_s: float = 0.0  # every answer waits this long
    misbehave: str | None = None  # silent | trickle | 500 | endless (see the module docstring)
    requests: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    url: str = ""
    stopping: threading.Event = field(default_factory=threading.Event)

    def add(self, repo_id: str, files: dict[str, bytes], *, gated: bool = False, revisions=("main",)) -> Repo:
        commit = hashlib.sha1(repo_id.encode() + b"".join(files.values())).hexdigest()
        repo = Repo(files=files, commit=commit, revisions=tuple(revisions), gated=gated)
        self.repos[repo_id] = repo
        return repo

    def add_public(self, repo_id: str, **extra_files: bytes) -> Repo:
        config = (PUBLIC_MODELS / repo_id.replace("/", "--") / "config.json").read_bytes()
        return self.add(repo_id, {"config.json": config, **{k.replace("__", "."): v for k, v in extra_files.items()}})


def _handler(state: StandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep the test output clean
            pass

        def _error(self, status: int, code: str, message: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _answer(self, with_body: bool) -> None:
            state.requests.append((self.command, self.path, self.headers.get("Range"), self.headers.get("Authorization")))
            if state.delay_s:
                time.sleep(state.delay_s)
            if state.misbehave:
                return self._misbehave(state.misbehave)
            parts = self.path.split("?")[0].split("/")
            if len(parts) < 6 or parts[3] != "resolve":
                return self._error(404, "EntryNotFound", "not a resolve URL")
            repo_id, revision, name = f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:])
            repo = state.repos.get(repo_id)
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found")
            if repo.gated and self.headers.get("Authorization") != "Bearer hf_valid_token":
                return self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted")
            if revision not in repo.revisions and revision != repo.commit:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            if name not in repo.files:
                return self._error(404, "EntryNotFound", f"{name} does not exist")
            data = repo.files[name]
            etag = hashlib.sha1(data).hexdigest()
            status, body = 200, data
            wanted = self.headers.get("Range")
            if wanted and with_body:
                first, _, last = wanted.split("=", 1)[1].partition("-")
                first, last = int(first), min(int(last or len(data) - 1), len(data) - 1)
                status, body = 206, data[first:last + 1]
            self.send_response(status)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", f'"{etag}"')
            self.send_header("Content-Length", str(len(body) if with_body else len(data)))
            if status == 206:
                self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def _misbehave(self, how: str) -> None:
            # each way ends when the client hangs up (a write fails) or the server shuts down
            try:
                if how == "silent":
                    while not state.stopping.wait(0.1):
                        pass
                elif how == "trickle":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    n = 0
                    while not state.stopping.wait(2.0):
                        n += 1
                        self.wfile.write(b"X-Trickle-%d: yes\r\n" % n)
                        self.wfile.flush()
                elif how == "500":
                    self._error(500, "InternalError", "try again")
                elif how == "endless":
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", "0" * 40)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    block = b"{" + b" " * 65535
                    while not state.stopping.is_set():
                        self.wfile.write(block)
            except OSError:
                pass
            self.close_connection = True

        def do_HEAD(self):
            self._answer(False)

        def do_GET(self):
            self._answer(True)

    return Handler


@contextlib.contextmanager
def serve():
    """A running stand-in; its `url` is what HF_ENDPOINT is set to."""
    state = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def online(monkeypatch, timeout_s: str = "5"):
    """A running stand-in with the Hub allowed for one test (the suite turns it off, conftest.py): HF_ENDPOINT points
    at it, no token is sent, and each lookup has `timeout_s` seconds."""
    with serve() as state:
        monkeypatch.setenv("HF_ENDPOINT", state.url)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("KVPLAN_HUB_TIMEOUT", timeout_s)
        yield state
