"""A real HTTP server on 127.0.0.1 for the http kind's tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class _Handler(BaseHTTPRequestHandler):
    """``/echo`` answers ``{"method", "path", "body", "headers"}``; ``/status/<n>`` answers
    status n; ``/text`` answers plain text; ``/slow`` answers after the server is stopped
    (or 10 s)."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == "/echo":
            body = json.loads(raw) if raw else None
            echo = {
                "method": self.command,
                "body": body,
                "content_type": self.headers.get("content-type"),
                "token": self.headers.get("x-token"),
            }
            self._answer(200, json.dumps(echo).encode())
        elif self.path.startswith("/status/"):
            self._answer(int(self.path.rsplit("/", 1)[1]), b'{"error": "as asked"}')
        elif self.path == "/text":
            self._answer(200, b"plain words", "text/plain")
        elif self.path == "/slow":
            self.server.release.wait(10)
            self._answer(200, b"{}")
        else:
            self._answer(404, b"no such path")

    do_GET = do_POST = do_PUT = do_DELETE = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    release = threading.Event()


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 in a thread; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
