"""The soak of ``tests/benchmarks/soak_workers.py`` at its CI size: 200 runs of a 5-step
workflow, 4 worker processes, 2 busy ones SIGKILLed mid-run and restarted, on a real
PostgreSQL and a real Redis. Nothing is lost, every output is a clean run's, and no side
effect runs twice beyond the documented re-run of the superstep a killed worker was in.

No time is asserted (the machine may be loaded): the deadline only bounds a hang.
"""

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


def test_200_runs_with_2_workers_killed_mid_run_lose_nothing(store: str) -> None:
    soak = _soak_module()
    report = soak.soak(
        store,
        runs=200,
        workers=4,
        kills=2,
        # both kills land while runs are under way: the first after 1-1.5 s, each run of 5
        # steps lasting 2.5 s or more, 200 of them on 100 slots (2-3 s apart with 1 s runs,
        # all 200 could finish before the second kill)
        kill_every=(1.0, 1.5),
        concurrency=25,
        lease_ttl=10.0,
        step_sleep=0.5,
        deadline=600.0,
    )
    print(report)
    assert report["kills"] == 2, report
    assert (report["completed"], report["lost"], report["wrong"]) == (200, 0, 0), report
    # a step runs again only when the worker running it was killed (once per run per kill)
    assert report["excess_duplicates"] == 0, report
    # the kills hit workers with runs under way, and other workers took those over
    assert report["takeovers"] >= 1, report
