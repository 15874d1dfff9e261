"""A Redis server for the tests: ``PLAIT_TEST_REDIS_URL``, or a throwaway one started here.

Never skips: without a URL and without ``redis-server`` the tests fail, naming the Debian
package to install.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A throwaway ``redis-server`` on 127.0.0.1, for one test session or one test."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "the plait-redis tests need a Redis server: set PLAIT_TEST_REDIS_URL, or "
                "install the Debian package redis-server (apt-get install -y redis-server) "
                "so the tests can start one",
                pytrace=False,
            )
        self.workdir = Path(tempfile.mkdtemp(prefix="plait-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._pidfile = self.workdir / "redis.pid"
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", str(self.workdir), "--daemonize", "yes",
                   "--pidfile", str(self._pidfile),
                   "--logfile", str(self.workdir / "redis.log")]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, timeout=30)
        deadline = time.monotonic() + 15
        while not _ping(self.port):
            if time.monotonic() > deadline:
                log = (self.workdir / "redis.log").read_text(errors="replace")
                self.stop()
                pytest.fail(f"redis-server on port {self.port} did not start:\n{log}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        if self._pidfile.exists():
            os.kill(int(self._pidfile.read_text().strip()), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while _ping(self.port) and time.monotonic() < deadline:
                time.sleep(0.05)
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis server the tests may write to."""
    url = os.environ.get("PLAIT_TEST_REDIS_URL")
    if url:
        yield url
        return
    server = RedisServer()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A Redis server of this test's own, which the test may stop."""
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where a connection is refused."""
    port = free_port()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return port
