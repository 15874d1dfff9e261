"""``plait runs --against TARGET``: a ``COMPAT`` column with ``plait compat``'s verdict on
each listed run, which plait-cli gets from this plugin through the
``plait_change_policies`` hook (the same ``decide`` as ``plait compat``)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
import versions_fleet
from plait_durable import opened_store
from versions_cli import plait

TARGET = "versions_cli_targets:shop_v2"


pytestmark = pytest.mark.usefixtures("shop_migration")


def _fill(url: str) -> dict[str, str | None]:
    """One run of each kind of the fleet (versions 1 and 2, unversioned, finished, another
    workflow's): run id -> the verdict plait compat gives it (``None``: not judged)."""

    async def fill() -> dict[str, str | None]:
        async with opened_store(url) as store:
            return await versions_fleet.fill(store, {kind: 1 for kind in versions_fleet.KINDS})

    return anyio.run(fill)


def test_each_listed_run_shows_the_compat_verdict(plait_store_url: str) -> None:
    expected = _fill(plait_store_url)
    listed = plait("runs", "--checkpoint", plait_store_url, "--against", TARGET, "--json")
    assert listed.exit_code == 0, listed.output
    # (the Redis and PostgreSQL servers are shared: other tests' runs are listed too)
    records = [r for r in json.loads(listed.stdout) if r["run_id"] in expected]
    shown = {r["run_id"]: r["compat"] and r["compat"]["verdict"] for r in records}
    assert shown == expected
    migrating = next(r["compat"] for r in records if expected[r["run_id"]] == "migrate")
    assert migrating["chain"] == ["shop@1"] and "node 'audit' added" in migrating["changes"]
    # the same verdicts as plait compat's, run by run
    report = plait("compat", TARGET, "--checkpoint", plait_store_url, "--format", "json")
    judged = {r["run_id"]: r for r in json.loads(report.stdout)["runs"] if r["run_id"] in expected}
    assert {r["run_id"]: r["compat"] for r in records if r["compat"]} == judged


def test_the_table_has_a_compat_column_and_a_policy(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    expected = _fill(url)
    table = plait("runs", "--checkpoint", url, "--against", TARGET)
    assert table.exit_code == 0, table.output
    header, *rows = table.stdout.splitlines()
    assert header.split()[-2:] == ["COMPAT", "ERROR"]
    cells = {"migrate": "migrate shop@1", "as_is": "as_is", "rejected": "rejected", None: "-"}
    for run_id, verdict in expected.items():
        row = next(r for r in rows if r.startswith(run_id))
        assert f"  {cells[verdict]}  " in row, row
    # under reject the changed runs would be stranded; the unchanged one resumes as it is
    rejected = plait("runs", "--checkpoint", url, "--against", TARGET, "--on-change", "reject",
                     "--json")  # fmt: skip
    records = json.loads(rejected.stdout)
    shown = {r["run_id"]: r["compat"] and r["compat"]["verdict"] for r in records}
    assert shown == {
        run_id: None if verdict is None else "as_is" if verdict == "as_is" else "rejected"
        for run_id, verdict in expected.items()
    }
    # without --against there is no column, and --on-change alone is refused
    assert "COMPAT" not in plait("runs", "--checkpoint", url).stdout
    alone = plait("runs", "--checkpoint", url, "--on-change", "reject")
    assert alone.exit_code == 2 and "give --against TARGET" in alone.stderr
    missing = plait("runs", "--checkpoint", url, "--against", "no_such_module:flow")
    assert missing.exit_code == 1 and "no_such_module" in missing.stderr
