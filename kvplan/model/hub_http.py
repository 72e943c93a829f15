"""HTTP for the Hub lookups with a total deadline and bounded bodies. Standard library only.

A lookup (config.json, then the safetensors index or a header) shares one Deadline: connecting, waiting for the
status line, every header line, every body byte and every retry come out of the same seconds. A per-read socket
timeout is not enough: a server that sends one header line every 2 s never trips a 10 s read timeout (the fault
issue 26 measured at 590 s and counting), so a watchdog shuts the socket down when the deadline passes, which wakes
any read blocked on it. A body is read up to a cap and refused past it, whatever Content-Length claims (an endless
body filled a cache with 8.5 GB in 40 s). Nothing is logged; a failure is one exception carrying one sentence.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

_RETRY_STATUS = (429, 500, 502, 503, 504)  # what huggingface_hub retries (utils/_http.py _DEFAULT_RETRY_ON_STATUS_CODES)
_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
_CHUNK = 64 * 1024


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()


class NoAnswer(Exception):
    """No usable answer before the deadline (silent, too slow, refused connection, a broken answer)."""


class TooLarge(Exception):
    """The body passed its cap."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased; the first answer's headers (before any redirect) under "first:"
    body: bytes


def get(url: str, *, deadline: Deadline, cap: int, headers: dict[str, str] | None = None) -> Answer:
    """GET `url`, following redirects and retrying what a busy server answers, until `deadline`. A final error
    status is returned (the caller maps the Hub's codes); past the deadline NoAnswer; a body over `cap` TooLarge."""
    pause = 0.25
    last: Exception | Answer | None = None
    while True:
        try:
            answer = _follow(url, deadline=deadline, cap=cap, headers=dict(headers or {}))
        except (NoAnswer, OSError, http.client.HTTPException) as err:
            last = err
        else:
            if answer.status not in _RETRY_STATUS:
                return answer
            last = answer
        if deadline.left() <= pause:  # no time for another try: the last outcome is the answer
            if isinstance(last, Answer):
                return last
            raise NoAnswer(_why(last, deadline))
        time.sleep(pause)
        pause *= 2


def _why(err: Exception | None, deadline: Deadline) -> str:
    if deadline.left() <= 0 or isinstance(err, (socket.timeout, TimeoutError)):
        return f"did not answer within {deadline.seconds:g} s"
    if isinstance(err, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(err, NoAnswer):
        return str(err)
    return f"gave no usable answer ({type(err).__name__})"


def _follow(url: str, *, deadline: Deadline, cap: int, headers: dict[str, str]) -> Answer:
    first: dict[str, str] | None = None
    origin = urlsplit(url).netloc
    for _ in range(_MAX_REDIRECTS + 1):
        answer = _once(url, deadline=deadline, cap=cap, headers=headers)
        first = first or answer.headers
        location = answer.headers.get("location")
        if answer.status not in _REDIRECTS or not location:
            merged = {**answer.headers, **{f"first:{k}": v for k, v in first.items()}}
            return Answer(answer.status, merged, answer.body)
        url = urljoin(url, location)
        if urlsplit(url).netloc != origin:  # a token is for the Hub, not for the storage it redirects to
            headers.pop("Authorization", None)
    raise NoAnswer(f"redirected more than {_MAX_REDIRECTS} times")


def _once(url: str, *, deadline: Deadline, cap: int, headers: dict[str, str]) -> Answer:
    left = deadline.left()
    if left <= 0:
        raise NoAnswer(f"did not answer within {deadline.seconds:g} s")
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=left)
    watchdog = threading.Timer(left, _cut, args=(conn,))
    watchdog.daemon = True
    watchdog.start()
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", path, headers={"User-Agent": "kvplan", "Accept-Encoding": "identity", **headers})
        response = conn.getresponse()
        length = response.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > cap and response.status < 300:
            raise TooLarge(int(length))
        body = bytearray()
        while True:
            chunk = response.read(min(_CHUNK, cap + 1 - len(body)))
            if not chunk:
                break
            body += chunk
            if len(body) > cap:
                raise TooLarge(len(body))
        if deadline.left() <= 0:  # the watchdog cut the answer short: what arrived is not the whole of it
            raise NoAnswer(f"did not answer within {deadline.seconds:g} s")
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, bytes(body))
    except (OSError, http.client.HTTPException, ValueError) as err:
        if deadline.left() <= 0:
            raise NoAnswer(f"did not answer within {deadline.seconds:g} s") from None
        if isinstance(err, ValueError):  # http.client on a malformed status line or header
            raise NoAnswer(f"gave no usable answer ({type(err).__name__})") from None
        raise
    finally:
        watchdog.cancel()
        conn.close()


def _cut(conn: http.client.HTTPConnection) -> None:
    """Wake whatever read is blocked on the connection: the deadline has passed."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
