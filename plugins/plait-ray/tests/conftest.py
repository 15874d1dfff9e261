"""Ray tests: one real local Ray cluster per test session (see ``ray_cluster``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    info = ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="WARNING",
        # the workers import the test workflows (plait_ray_flows) from here
        runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}},
    )
    try:
        yield info.address_info["gcs_address"]
    finally:
        ray.shutdown()
