"""Ray tests: one real local Ray cluster (2 CPUs, no dashboard, no usage stats) per test
session, shared by the pytest-xdist workers of the session.

The first process that needs it starts it (``ray.init``, so it is that process's to stop)
and records its address in a file beside the workers' temporary directories; the others
join it. Each user counts itself in and out under a file lock, and the process that
started the cluster shuts it down once nobody uses it. ``PLAIT_TEST_RAY_ADDRESS`` names an
existing cluster to use instead.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plait_ray_testing import Loopback, LoopbackPlugin

# token authentication (the default of a new local cluster), said before anything imports
# Ray, which reads its configuration once: the processes that join see it too; the token is
# in ~/.ray
os.environ.setdefault("RAY_AUTH_MODE", "token")

HERE = Path(__file__).parent
# the workers import the test workflows (plait_ray_flows) from here
RUNTIME_ENV = {"env_vars": {"PYTHONPATH": str(HERE)}}


@pytest.fixture(scope="session")
def ray_cluster(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Iterator[str]:
    """The GCS address of the session's Ray cluster, joined by this process."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from filelock import FileLock

    existing = os.environ.get("PLAIT_TEST_RAY_ADDRESS")
    if existing:
        ray.init(address=existing, runtime_env=RUNTIME_ENV, logging_level="WARNING")
        try:
            yield existing
        finally:
            ray.shutdown()
        return
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if hasattr(request.config, "workerinput") else base
    lock, record = FileLock(str(shared / "ray-cluster.lock")), shared / "ray-cluster.json"
    with lock:
        info = json.loads(record.read_text()) if record.exists() else None
        if info is None:
            started = ray.init(
                num_cpus=2,
                include_dashboard=False,
                logging_level="WARNING",
                runtime_env=RUNTIME_ENV,
            )
            info = {"address": started.address_info["gcs_address"], "owner": os.getpid()}
            info["users"] = 0
        else:
            ray.init(address=info["address"], runtime_env=RUNTIME_ENV, logging_level="WARNING")
        info["users"] += 1
        record.write_text(json.dumps(info))
    owner = info["owner"] == os.getpid()
    try:
        yield str(info["address"])
    finally:
        _leave(lock, record, owner)
        ray.shutdown()


def _leave(lock: Any, record: Path, owner: bool) -> None:
    """Count this process out; the owner waits (a few minutes at most) for the others."""
    with lock:
        info = json.loads(record.read_text())
        info["users"] -= 1
        record.write_text(json.dumps(info))
    if not owner:
        return
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        with lock:
            info = json.loads(record.read_text())
            if info["users"] <= 0:
                record.unlink()
                return
        time.sleep(0.5)


@pytest.fixture
def loopback(plait_register_plugin: Any) -> Loopback:
    """The ``loopback`` placement, registered for this test."""
    plugin = LoopbackPlugin()
    plait_register_plugin(plugin, "plait-ray-loopback")
    return plugin.placement


@pytest.fixture(params=["loopback", "ray"])
def placement(request: pytest.FixtureRequest, loopback: Loopback) -> str:
    """Each placement a test should hold for: the loopback one, then Ray."""
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return str(request.param)
