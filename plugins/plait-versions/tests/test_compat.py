"""``plait compat``: every unfinished stored run judged against the workflow about to be
deployed, nothing run or written; exit 1 when a run would be stranded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import versions_fleet
from plait_durable import opened_store
from versions_cli import plait

MIXED_1000 = {
    "v1_waiting": 400,
    "v1_failed": 200,
    "v2_waiting": 300,
    "unversioned": 100,
    "v2_finished": 50,
    "other_workflow": 50,
}


pytestmark = pytest.mark.usefixtures("shop_migration")


def _fill(url: str, counts: dict[str, int]) -> dict[str, str | None]:
    async def fill() -> dict[str, str | None]:
        async with opened_store(url) as store:
            return await versions_fleet.fill(store, counts)

    return anyio.run(fill)


def _history(url: str) -> list[Any]:
    async def read() -> list[Any]:
        async with opened_store(url) as store:
            return sorted((r.run_id, r.superstep, r.status) for r in await store.runs())

    return anyio.run(read)


def test_a_store_of_1000_mixed_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    expected = _fill(url, MIXED_1000)
    before = _history(url)
    found = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", url,
                  "--format", "json")  # fmt: skip
    assert found.exit_code == 1, found.output  # the unversioned runs are stranded
    report = json.loads(found.stdout)
    verdicts = {run["run_id"]: run for run in report["runs"]}
    assert {r: v["verdict"] for r, v in verdicts.items()} == {
        r: v for r, v in expected.items() if v is not None
    }
    assert len(verdicts) == 1000
    assert report["counts"] == {"migrate": 600, "as_is": 300, "rejected": 100}
    assert report["stranded"] == 100 and report["version"] == 2
    migrating = next(v for v in verdicts.values() if v["verdict"] == "migrate")
    assert migrating["chain"] == ["shop@1"] and migrating["stored_version"] == 1
    assert "node 'audit' added" in migrating["changes"]
    rejected = next(v for v in verdicts.values() if v["verdict"] == "rejected")
    assert rejected["reason"] == "policy migrate: the run's checkpoint records no version"
    assert _history(url) == before  # nothing was run or written


def test_exit_0_when_no_run_is_stranded_and_text_names_the_chain(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    expected = _fill(url, {"v1_waiting": 2, "v2_waiting": 1, "v2_finished": 1})
    found = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", url)
    assert found.exit_code == 0, found.output
    lines = found.stdout.splitlines()
    for run_id, verdict in expected.items():
        if verdict == "migrate":
            assert any(line.startswith(f"{run_id}  idle_with_pending_requests  migrate through "
                                    "shop@1") for line in lines)  # fmt: skip
    assert "    node 'audit' added" in lines
    assert "2 migrate" in found.stderr and "0 stranded" in found.stderr
    # under reject, the same runs are stranded
    rejected = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", url,
                     "--on-change", "reject")  # fmt: skip
    assert rejected.exit_code == 1 and "2 stranded" in rejected.stderr


def test_mixed_runs_on_every_store(plait_store_url: str) -> None:
    expected = _fill(plait_store_url, {k: 3 for k in versions_fleet.KINDS})
    found = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", plait_store_url,
                  "--format", "json")  # fmt: skip
    verdicts = {run["run_id"]: run["verdict"] for run in json.loads(found.stdout)["runs"]}
    for run_id, verdict in expected.items():
        assert verdicts.get(run_id) == verdict


def test_since_leaves_older_runs_out(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _fill(url, {"v1_waiting": 1})
    recent = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", url,
                   "--since", "1h", "--format", "json")  # fmt: skip
    assert json.loads(recent.stdout)["counts"] == {"migrate": 1}
    bad = plait("compat", "versions_cli_targets:shop_v2", "--checkpoint", url, "--since", "soon")
    assert bad.exit_code == 2 and "--since" in bad.stderr


def test_the_benchmark_runs() -> None:
    import subprocess
    import sys

    bench = Path(__file__).parents[3] / "tests" / "benchmarks" / "bench_compat.py"
    done = subprocess.run([sys.executable, str(bench), "--quick"], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["measure"] == "compat" and record["runs"] == 20
    # the dry-run's share: three recorded runs, each dry-run and matching its record
    assert record["dry_run_runs"] == 3 and record["dry_run_outcomes"] == {"match": 3}
    assert record["dry_run_median_ms_per_run"] > 0
