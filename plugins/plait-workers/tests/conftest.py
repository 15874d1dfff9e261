"""Real Redis and PostgreSQL for the worker tests (``PLAIT_TEST_REDIS_URL`` /
``PLAIT_TEST_POSTGRES_URL``, or throwaway servers started here), and worker processes.

Never skips: without the servers the tests fail, naming the Debian package to install.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from plait_testing import servers
from workers_support import HERE, WorkerFactory, wait_for


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with servers.redis_url() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with servers.postgres_url() as url:
        yield url


@pytest.fixture(params=["postgresql", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """A checkpoint store URL on each backend a queue lives on."""
    name = "postgres_url" if request.param == "postgresql" else "redis_url"
    url: str = request.getfixturevalue(name)
    return url


@pytest.fixture
def queue() -> str:
    """A queue of this test's own."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    """The side-effect log the test workflows append to."""
    return tmp_path / "effects.log"


@pytest.fixture
def start_worker(store: str, queue: str, effects: Path, tmp_path: Path) -> Iterator[WorkerFactory]:
    """Start ``plait worker`` processes on this test's queue; all are killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(*flags: str, sleep: float = 0.2, cwd: Path | None = None) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "PLAIT_WORKERS_EFFECTS": str(effects),
            "PLAIT_WORKERS_STEP_SLEEP": str(sleep),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        }
        command = [sys.executable, "-m", "plait_cli", "worker", "--checkpoint", store]
        command += ["--queue", queue, *flags]
        process = subprocess.Popen(
            command,
            cwd=cwd or HERE,
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(tmp_path / f"worker{len(started)}.log", "w"),  # noqa: SIM115
            text=True,
        )
        started.append(process)
        log = tmp_path / f"worker{len(started) - 1}.log"
        wait_for(lambda: log.read_text().startswith("worker "), 60, f"{log} says it started")
        # saq's Redis sweep, which runs as a worker starts, can take a job another worker
        # is just taking (the run stops at its next boundary and comes again): let it pass
        time.sleep(1.0)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
