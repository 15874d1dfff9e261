"""PostgreSQL for the tests: ``PLAIT_TEST_POSTGRES_URL``, or a throwaway cluster started here.

``PLAIT_TEST_POSTGRES_URL`` must let the tests create and drop databases (a superuser,
as ``.ci/services.sh`` provides). Without it the session starts its own cluster with
``initdb``/``pg_ctl`` (as the ``postgres`` OS user when running as root). Never skips:
without a URL and without the binaries the tests fail, naming the Debian package.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postgres_bin() -> Path | None:
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


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1, for one test session or one test."""

    def __init__(self) -> None:
        bin_dir = _postgres_bin()
        if bin_dir is None:
            pytest.fail(
                "the plait-postgres tests need PostgreSQL: set PLAIT_TEST_POSTGRES_URL, or "
                "install the Debian package postgresql (apt-get install -y postgresql) so "
                "the tests can start a throwaway cluster (looked in /usr/lib/postgresql/*/bin "
                "and on PATH; PLAIT_PG_BIN names another directory)",
                pytrace=False,
            )
        self.workdir = Path(tempfile.mkdtemp(prefix="plait-pg-"))
        self._as = []
        if os.geteuid() == 0:  # initdb refuses to run as root: the cluster is postgres's
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail("running as root needs the 'postgres' OS user (package postgresql)")
            os.chown(self.workdir, owner.pw_uid, owner.pw_gid)
            runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
            if runuser is None:
                pytest.fail("running as root needs runuser (Debian package util-linux)")
            self._as = [runuser, "-u", "postgres", "--"]
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
        if getattr(self, "_running", False):
            self._running = False
            subprocess.run([*self._as, self._pg_ctl, "-D", str(self._data), "-m", "fast",
                            "-w", "stop"], capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(self.workdir, ignore_errors=True)


def database_url(server_url: str, name: str) -> str:
    """``server_url`` pointing at database ``name``."""
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


class Databases:
    """Creates databases on one server and drops them again."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self.created: list[str] = []

    def create(self) -> str:
        """A new, empty database; returns its URL."""
        name = f"plait_test_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.server_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return database_url(self.server_url, name)

    def drop_all(self) -> None:
        """Drop every database this object created."""
        with psycopg.connect(self.server_url, autocommit=True) as conn:
            for name in self.created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.clear()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a PostgreSQL server where the tests may create databases."""
    url = os.environ.get("PLAIT_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    server = PostgresServer()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_database(postgres_url: str) -> Iterator[str]:
    """One database for the whole session, dropped at the end."""
    databases = Databases(postgres_url)
    try:
        yield databases.create()
    finally:
        databases.drop_all()


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    """An empty database of this test's own."""
    databases = Databases(postgres_url)
    try:
        yield databases.create()
    finally:
        databases.drop_all()


@pytest.fixture
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of this test's own, which the test may stop."""
    server = PostgresServer()
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
