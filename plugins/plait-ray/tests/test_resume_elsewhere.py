"""A run started by one driver process, with Ray placement and a Redis checkpoint store,
is killed; a fresh driver process resumes it and it completes with the same outputs as an
uninterrupted local run. While either driver lives, it holds the run's lease: resuming the
run from elsewhere is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import plait_ray_flows as flows
import pytest
from plait import RunStatus
from plait_durable import RunLeaseError
from plait_testing import servers

HERE = Path(__file__).parent
UNTIL = 8  # ray_driver.py counts to this


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with servers.redis_url() as url:
        yield url


def _driver(
    mode: str, run_id: str, store: str, markers: Path, address: str
) -> subprocess.Popen[str]:
    env = {**os.environ, "RAY_ADDRESS": address, "PYTHONPATH": str(HERE)}
    return subprocess.Popen(
        [sys.executable, str(HERE / "ray_driver.py"), mode, run_id, store, str(markers)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the driver ended early: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {path.name} after {seconds} s: {process.communicate()}")
        time.sleep(0.05)


def _refused(run_id: str, store: str) -> None:
    """Resuming the run here is refused: a live driver holds its lease."""
    with pytest.raises(RunLeaseError, match=run_id):
        anyio.run(flows.ticking(None).resume, run_id, store)


def test_a_killed_driver_s_run_resumes_in_another_process(
    ray_cluster: str, redis_url: str, tmp_path: Path
) -> None:
    run_id = f"ray-{uuid.uuid4().hex[:8]}"
    store = redis_url
    first = _driver("run", run_id, store, tmp_path, ray_cluster)
    _wait_for(tmp_path / "superstep-2", first)
    _refused(run_id, store)  # the first driver holds the run's lease
    _wait_for(tmp_path / "superstep-3", first)
    first.send_signal(signal.SIGKILL)
    first.communicate()

    second = _driver("resume", run_id, store, tmp_path, ray_cluster)
    _wait_for(tmp_path / "superstep-5", second)  # only the second driver gets this far
    _refused(run_id, store)  # and it holds the lease now
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    resumed = json.loads(out.strip().splitlines()[-1])
    local = anyio.run(flows.ticking(None).run, {"n": 0, "until": UNTIL})
    assert local.status is RunStatus.IDLE
    assert resumed == {"status": str(RunStatus.IDLE), "outputs": local.outputs}
    assert (tmp_path / f"superstep-{UNTIL + 1}").exists()
