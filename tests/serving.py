"""`kvplan serve`'s app on a free loopback port for the tests that talk to it over a real socket (test_serve.py,
test_page.py): uvicorn in a thread, stopped when the block ends."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


@contextlib.contextmanager
def running(limits=None):
    """Yields the port of a running server."""
    import uvicorn

    from kvplan.serve import app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app.build(limits or app.Limits()), log_level="warning", lifespan="off", timeout_keep_alive=5)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(400):
            if server.started:
                break
            time.sleep(0.05)
        assert server.started, "the server did not start"
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
