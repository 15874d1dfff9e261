"""Redis and PostgreSQL for the tests of stores that need a server.

:func:`redis_url` and :func:`postgres_url` give the URL of a server the tests may write
to: the one named by ``PLAIT_TEST_REDIS_URL`` / ``PLAIT_TEST_POSTGRES_URL`` when that is
set (CI starts the servers once, for every job), else a throwaway server started on
127.0.0.1 in a temporary directory and removed when the ``with`` block ends. Wrap them in
a session fixture::

    import pytest
    from plait_testing import servers

    @pytest.fixture(scope="session")
    def redis_url():
        with servers.redis_url() as url:
            yield url

They never skip: without the variable and without the server's binaries the test fails,
naming the Debian package to install. A PostgreSQL URL must let the tests create and drop
databases (a superuser); the throwaway cluster's is ``postgres`` with trust auth. Running
as root, the cluster belongs to the ``postgres`` OS user (``initdb`` refuses root).

:class:`RedisServer` and :class:`PostgresServer` are one throwaway server each, for a test
that stops its server on purpose; :func:`closed_port` is a port where connections are
refused, for testing an unreachable store.
"""

from __future__ import annotations

import abc
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType

import pytest
from typing_extensions import Self

__all__ = [
    "POSTGRES_URL_VAR",
    "REDIS_URL_VAR",
    "PostgresServer",
    "RedisServer",
    "closed_port",
    "free_port",
    "postgres_url",
    "redis_url",
]

#: The environment variable naming a Redis server for the tests.
REDIS_URL_VAR = "PLAIT_TEST_REDIS_URL"
#: The environment variable naming a PostgreSQL server (as a superuser) for the tests.
POSTGRES_URL_VAR = "PLAIT_TEST_POSTGRES_URL"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def closed_port() -> int:
    """A port on 127.0.0.1 where a connection is refused."""
    port = free_port()
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"port {port} on 127.0.0.1 accepted a connection; it should be closed")
    return port


class _Server(abc.ABC):
    """A server on 127.0.0.1 with a working directory of its own; ``with`` stops it."""

    workdir: Path
    port: int
    #: The URL the tests connect to.
    url: str

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the server and remove its directory (safe to call twice)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _ping_redis(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer(_Server):
    """A throwaway ``redis-server`` on 127.0.0.1 (no persistence), started at once."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                f"these tests need a Redis server: set {REDIS_URL_VAR}, or install the Debian "
                "package redis-server (apt-get install -y redis-server) so the tests can "
                "start one",
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
        while not _ping_redis(self.port):
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
            while _ping_redis(self.port) and time.monotonic() < deadline:
                time.sleep(0.05)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _postgres_bin() -> Path | None:
    """The directory with ``initdb`` and ``pg_ctl``: ``PLAIT_PG_BIN``, the newest
    ``/usr/lib/postgresql/*/bin`` (Debian's layout), or the one on ``PATH``."""
    candidates = [Path(p) for p in [os.environ.get("PLAIT_PG_BIN")] if p]

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.parent.name))

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).parent)
    for directory in candidates:
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    return None


def _as_postgres_user(workdir: Path) -> list[str]:
    """The command prefix that runs as the ``postgres`` OS user when we are root."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    import pwd  # Unix only, like running as root

    try:
        owner = pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root needs the 'postgres' OS user (package postgresql)")
    os.chown(workdir, owner.pw_uid, owner.pw_gid)
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if runuser is None:
        pytest.fail("running as root needs runuser (Debian package util-linux)")
    return [runuser, "-u", "postgres", "--"]


class PostgresServer(_Server):
    """A throwaway PostgreSQL cluster on 127.0.0.1 (superuser ``postgres``, trust auth),
    started at once."""

    def __init__(self) -> None:
        bin_dir = _postgres_bin()
        if bin_dir is None:
            pytest.fail(
                f"these tests need PostgreSQL: set {POSTGRES_URL_VAR}, or install the Debian "
                "package postgresql (apt-get install -y postgresql) so the tests can start a "
                "throwaway cluster (looked in /usr/lib/postgresql/*/bin and on PATH; "
                "PLAIT_PG_BIN names another directory)",
                pytrace=False,
            )
        self.workdir = Path(tempfile.mkdtemp(prefix="plait-pg-"))
        self._running = False
        self._as = _as_postgres_user(self.workdir)
        self._pg_ctl = str(bin_dir / "pg_ctl")
        self._data = self.workdir / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._run(str(bin_dir / "initdb"), "-D", str(self._data), "-A", "trust",
                  "-U", "postgres", "-E", "UTF8", "--no-sync")  # fmt: skip
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.workdir}"
        self._running = True
        self._run(self._pg_ctl, "-D", str(self._data), "-o", options,
                  "-l", str(self.workdir / "server.log"), "-w", "-t", "60", "start")  # fmt: skip

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._as, *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.workdir / "server.log"
            server_log = log.read_text(errors="replace") if log.exists() else ""
            self.stop()
            pytest.fail(
                f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
                f"{server_log}",
                pytrace=False,
            )

    def stop(self) -> None:
        """Stop the cluster and remove its directory."""
        if self._running:
            self._running = False
            subprocess.run([*self._as, self._pg_ctl, "-D", str(self._data), "-m", "fast",
                            "-w", "stop"], capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextmanager
def _env_url_or_server(variable: str, server: type[_Server]) -> Iterator[str]:
    url = os.environ.get(variable)
    if url:
        yield url
        return
    with server() as started:
        yield started.url


def redis_url() -> AbstractContextManager[str]:
    """The URL of a Redis server the tests may write to, for a ``with`` block:
    ``PLAIT_TEST_REDIS_URL``, or a :class:`RedisServer` stopped at the end."""
    return _env_url_or_server(REDIS_URL_VAR, RedisServer)


def postgres_url() -> AbstractContextManager[str]:
    """The URL of a PostgreSQL server where the tests may create databases, for a
    ``with`` block: ``PLAIT_TEST_POSTGRES_URL``, or a :class:`PostgresServer` stopped at
    the end."""
    return _env_url_or_server(POSTGRES_URL_VAR, PostgresServer)
