"""The soak of ``tests/benchmarks/soak_workers.py`` at its CI size: 200 runs, 4 worker
processes, 2 of them SIGKILLed and restarted, on real PostgreSQL and Redis."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

SOAK = Path(__file__).resolve().parents[3] / "tests" / "benchmarks" / "soak_workers.py"


def _soak_module() -> Any:
    spec = importlib.util.spec_from_file_location("soak_workers", SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak_workers"] = module
    spec.loader.exec_module(module)
    return module


def test_200_runs_on_postgresql_with_2_workers_killed_lose_nothing(postgres_url: str) -> None:
    """On PostgreSQL. On Redis a killed worker's run can stay stuck (1 of 200 in 2 of 3
    soaks): an open defect, written down in docs/workers.md ("not met yet") and run by
    ``soak_workers.py --backend redis``, not hidden here as an expected failure."""
    store = postgres_url
    soak = _soak_module()
    report = soak.soak(
        store,
        runs=200,
        workers=4,
        kills=2,
        kill_every=(1.0, 2.0),
        concurrency=25,
        lease_ttl=10.0,
        deadline=150.0,
    )
    print(report)
    assert report["kills"] == 2
    assert (report["completed"], report["lost"], report["wrong"]) == (200, 0, 0), report
    # a step runs again only when the worker running it was killed (at least once, by key)
    assert report["excess_duplicates"] == 0, report
    # a dead process's lease is free at once on its host; the queue hands its jobs on
    # within the heartbeat (3 s), the sweep (5 s) and saq's wait for the abort (5 s)
    if report["takeovers"]:
        assert report["takeover_p99_s"] <= 3 + 5 + 5 + 2, report
