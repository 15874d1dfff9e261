"""``plait compat``'s throughput (issue 39: at least 1,000 runs a second on SQLite), and
the cost per run of ``plait compat --dry-run``.

    python tests/benchmarks/bench_compat.py [--runs 1000] [--repeat 5] [--dry-runs 50] [--quick]

A fresh SQLite store is filled with ``--runs`` mixed runs of plait-versions' shop
workflow (``plugins/plait-versions/tests/versions_fleet.py``: 40 % waiting on version 1,
20 % failed on version 1, 30 % waiting on version 2, 10 % unversioned, plus finished runs
and another workflow's, which compat leaves out), then
:func:`plait_versions.compat_report` judges every unfinished run against version 2 with
the migration ``shop@1`` registered, ``--repeat`` times, the store opened inside the
timing. Prints one JSON line: the runs judged, the median and best seconds, runs per
second at the median, and whether the 1,000 runs/s target is met (reported, never
asserted: numbers depend on the machine).

The dry-run: a second SQLite store holds ``--dry-runs`` recorded runs of plait-versions'
desk workflow (``versions_desk``) waiting on version 1; each is judged against version 2
(the migration ``desk@1`` registered) and dry-run (:func:`plait_versions.dry_run`: its last
recorded superstep run again under version 2 from a migrated copy of the checkpoint
before it, its ``ctx.now()`` answered from the record), ``--repeat`` times. The JSON line
adds the median milliseconds per dry-run run (the verdict's share included) and what
the dry-runs found (each should ``match``). ``--quick`` judges 20 runs and dry-runs 3,
once (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parents[2] / "plugins" / "plait-versions" / "tests"))

import versions_desk
import versions_fleet
import versions_shop
from plait_durable import opened_store
from plait_versions import compat_report, dry_run, register_migration

TARGET = 1000.0  # runs per second


def _identity(snapshot):  # type: ignore[no-untyped-def]
    return snapshot


def _counts(runs: int) -> dict[str, int]:
    counts = {
        "v1_waiting": runs * 4 // 10,
        "v1_failed": runs * 2 // 10,
        "v2_waiting": runs * 3 // 10,
    }
    counts["unversioned"] = runs - sum(counts.values())
    counts["v2_finished"] = max(1, runs // 20)
    counts["other_workflow"] = max(1, runs // 20)
    return counts


async def _dry_runs(count: int, repeat: int) -> dict[str, object]:
    """``count`` recorded desk runs on version 1, each judged and dry-run against version 2
    ``repeat`` times: the median milliseconds per run, and the outcomes."""
    register_migration("desk", 1, versions_desk.one_to_two)
    workflow = versions_desk.v2()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'recorded.db'}"
        async with opened_store(url) as store:
            for n in range(count):
                await versions_desk.v1().run(f"note {n}", checkpoint=store, record=True)
        times: list[float] = []
        outcomes: dict[str, int] = {}
        for _ in range(repeat):
            started = time.perf_counter()
            async with opened_store(url) as store:
                report = await compat_report(workflow, store)
                found = [await dry_run(workflow, store, v) for v in report.verdicts]
            times.append(time.perf_counter() - started)
            outcomes = {}
            for one in found:
                outcomes[one.outcome] = outcomes.get(one.outcome, 0) + 1
    return {
        "dry_run_runs": count,
        "dry_run_median_ms_per_run": round(statistics.median(times) / count * 1000, 2),
        "dry_run_best_ms_per_run": round(min(times) / count * 1000, 2),
        "dry_run_outcomes": outcomes,
    }


async def _main(runs: int, repeat: int, dry_runs: int) -> dict[str, object]:
    register_migration("shop", 1, _identity)
    workflow = versions_shop.v2()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'runs.db'}"
        async with opened_store(url) as store:
            await versions_fleet.fill(store, _counts(runs))
        times: list[float] = []
        judged = 0
        for _ in range(repeat):
            started = time.perf_counter()
            async with opened_store(url) as store:
                report = await compat_report(workflow, store)
            times.append(time.perf_counter() - started)
            judged = len(report.verdicts)
    median = statistics.median(times)
    return {
        "measure": "compat",
        "store": "sqlite",
        "runs": judged,
        "median_s": round(median, 4),
        "best_s": round(min(times), 4),
        "runs_per_s": round(judged / median),
        "target_runs_per_s": TARGET,
        "met": judged / median >= TARGET,
        **(await _dry_runs(dry_runs, repeat)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dry-runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, repeat, dry_runs = (20, 1, 3) if args.quick else (args.runs, args.repeat, args.dry_runs)
    print(json.dumps(anyio.run(_main, runs, repeat, dry_runs)))


if __name__ == "__main__":
    main()
