"""``plait runs``: the runs a store holds, newest first, with failed runs' errors."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from click.testing import CliRunner, Result
from plait import PlaitError, hookimpl
from plait_cli import make_cli, run_columns
from plait_durable import RunInfo, open_store, opened_store
from plait_testing import RegisterPlugin
from plait_testing.stores import make_checkpoint, new_run_id

WORKFLOWS = Path(__file__).with_name("cli_workflows.py")


def plait(*args: str) -> Result:
    """Run ``plait ARGS`` in-process; an exception other than an exit fails the test."""
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run_ids(result: Result) -> list[str]:
    return [record["run_id"] for record in json.loads(result.stdout)]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_failed_cli_run_is_listed_with_its_error_from_the_default_store(in_tmp: Path) -> None:
    url = "sqlite:///.plait/runs.db"
    failed = plait("run", f"{WORKFLOWS}:failing", "boom", "--checkpoint", url)
    assert failed.exit_code == 1
    done = plait("run", f"{WORKFLOWS}:echo", "abc", "--checkpoint", url)
    assert done.exit_code == 0
    result = plait("runs")
    assert result.exit_code == 0, result.output
    header, newest, oldest = result.stdout.splitlines()
    added = [name.upper() for name in run_columns()]  # what installed plugins add
    assert header.split() == [
        "ID", "WORKFLOW", "STATUS", "SUPERSTEPS", "PENDING", "UPDATED", *added, "ERROR"
    ]  # fmt: skip
    assert newest.split()[1:7] == ["echo", "idle", "2", "0", "0s", "ago"]
    assert newest.split()[-1] == "-"
    assert oldest.split()[1:5] == ["failing", "failed", "1", "0"]
    assert "ConnectionError in 'explode' (superstep 2): the model endpoint hung up" in oldest
    records = json.loads(plait("runs", "--json", "--status", "failed").stdout)
    assert len(records) == 1
    assert records[0]["workflow"] == "failing"
    assert records[0]["error"] == (
        "ConnectionError in 'explode' (superstep 2): the model endpoint hung up on 'BOOM'"
    )
    assert set(records[0]) == {
        "run_id",
        "workflow",
        "status",
        "superstep",
        "pending_requests",
        "error",
        "created_at",
        "updated_at",
    } | ({"columns"} if added else set())


def test_status_and_limit_filter_newest_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    ids = [new_run_id(f"r{i}") for i in range(4)]

    async def save() -> None:
        store = open_store(url)
        try:
            for i, run_id in enumerate(ids):
                status = "failed" if i % 2 else "idle"
                await store.save(
                    attrs.evolve(make_checkpoint(run_id, status=status), created_at=1000.0 + i)
                )
        finally:
            await store.aclose()

    anyio.run(save)
    assert run_ids(plait("runs", "--checkpoint", url, "--json")) == ids[::-1]
    assert run_ids(plait("runs", "--checkpoint", url, "--json", "--limit", "3")) == ids[:0:-1]
    failed = plait("runs", "--store", url, "--json", "--status", "FAILED", "--limit", "1")
    assert run_ids(failed) == [ids[3]]
    none = plait("runs", "--checkpoint", url, "--status", "running")
    assert (none.exit_code, none.stdout) == (0, "")
    assert f"no runs in {url} with status running" in none.stderr


def test_listing_a_missing_default_store_creates_nothing(in_tmp: Path) -> None:
    result = plait("runs")
    assert result.exit_code == 0
    assert "no runs in sqlite:///.plait/runs.db: .plait/runs.db does not exist" in result.stderr
    assert not (in_tmp / ".plait").exists()
    assert json.loads(plait("runs", "--json").stdout) == []


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    assert plait("runs", "--limit", "-1").exit_code == 2
    assert plait("runs", "--status", "sleeping").exit_code == 2
    unknown = plait("runs", "--checkpoint", "nosuch://x")
    assert unknown.exit_code == 1
    assert "nosuch" in unknown.stderr


def _save_runs(url: str, runs: list[tuple[str, str, float]]) -> None:
    """Save one checkpoint per (run id, status, age in seconds) into the store at ``url``."""

    async def save() -> None:
        store = open_store(url)
        try:
            for run_id, status, age in runs:
                checkpoint = make_checkpoint(run_id, status=status)
                await store.save(attrs.evolve(checkpoint, created_at=time.time() - age))
        finally:
            await store.aclose()

    anyio.run(save)


def test_prune_by_age_status_and_count_keeps_the_rest(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    day = 86400.0
    old_idle, old_failed, new_idle = new_run_id("a"), new_run_id("b"), new_run_id("c")
    old_idle2 = new_run_id("d")
    _save_runs(
        url,
        [
            (old_idle, "idle", 9 * day),
            (old_idle2, "idle", 8 * day),
            (old_failed, "failed", 10 * day),
            (new_idle, "idle", 60.0),
        ],
    )
    dry = plait("runs", "--checkpoint", url, "prune", "--older-than", "7d", "--dry-run")
    assert dry.exit_code == 0, dry.output
    would = [line.split()[2] for line in dry.stdout.splitlines()]
    assert would == [old_idle2, old_idle, old_failed]
    assert len(run_ids(plait("runs", "--checkpoint", url, "--json"))) == 4

    prune = ("runs", "--checkpoint", url, "prune")
    by_status = plait(*prune, "--older-than", "1w", "--status", "failed")
    assert by_status.exit_code == 0, by_status.output
    assert by_status.stdout.splitlines() == [f"removed {old_failed} failed (1 checkpoint(s))"]
    by_count = plait(*prune, "--status", "idle", "--keep", "2")
    assert by_count.exit_code == 0, by_count.output
    assert [line.split()[1] for line in by_count.stdout.splitlines()] == [old_idle]
    assert run_ids(plait("runs", "--checkpoint", url, "--json")) == [new_idle, old_idle2]


def test_prune_never_removes_a_run_a_live_worker_holds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    held, free = new_run_id("held"), new_run_id("free")
    _save_runs(url, [(held, "running", 3600.0), (free, "running", 3600.0)])

    async def hold_and_prune() -> tuple[Result, int]:
        store = open_store(url)
        try:
            lease = await store.acquire_lease(held, ttl=300.0)
            result = await anyio.to_thread.run_sync(
                lambda: plait("runs", "--checkpoint", url, "prune", "--older-than", "30m")
            )
            left = len(await store.list(held))
            await store.release_lease(lease)
            return result, left
        finally:
            await store.aclose()

    result, left = anyio.run(hold_and_prune)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"removed {free} running (1 checkpoint(s))"]
    assert f"kept {held}:" in result.stderr
    assert left == 1


def test_prune_needs_a_filter_and_a_real_age(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    bare = plait("runs", "--checkpoint", url, "prune")
    assert bare.exit_code == 2
    assert "--older-than AGE, --status STATUS or --keep N" in bare.output
    bad = plait("runs", "--checkpoint", url, "prune", "--older-than", "7 days")
    assert bad.exit_code == 2
    assert "'7 days' is not an age" in bad.output


def test_the_listing_says_how_much_a_local_store_takes_on_disk(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _save_runs(url, [(new_run_id("x"), "idle", 1.0)])
    listed = plait("runs", "--checkpoint", url)
    size = (tmp_path / "runs.db").stat().st_size
    wal = tmp_path / "runs.db-wal"
    size += wal.stat().st_size if wal.exists() else 0
    assert listed.exit_code == 0
    assert "1 run(s); " in listed.stderr and f"on disk in {url}" in listed.stderr
    assert size > 0


def test_stored_text_cannot_drive_the_terminal_and_a_corrupt_run_is_listed(
    in_tmp: Path,
) -> None:
    # Issue 24, finding 12: a stored error's escape sequences were printed raw, and one
    # corrupt row failed the whole listing.
    url = f"sqlite:///{in_tmp / 'runs.db'}"
    hostile, damaged = new_run_id("hostile"), new_run_id("damaged")
    error = {
        "executor": "x",
        "type": "ValueError",
        "message": "\x1b]0;owned\x07\x1b[2J\u202eexe.txt\x9b31m",
        "superstep": 1,
    }
    failed = attrs.evolve(
        make_checkpoint(hostile, 1, status="failed"),
        metadata={"workflow": "wf\x1b[31m", "error": error},
    )
    broken = make_checkpoint(damaged, 0)

    async def save() -> None:
        store = open_store(url)
        await store.save(failed)
        await store.save(broken)
        await store.aclose()

    anyio.run(save)
    with sqlite3.connect(in_tmp / "runs.db") as db:
        db.execute(
            "UPDATE plait_checkpoints SET data = ? WHERE checkpoint_id = ?",
            (b"garbage", broken.checkpoint_id),
        )
    table = plait("runs", "--checkpoint", url)
    assert table.exit_code == 0, table.output
    assert not any(c in table.stdout for c in "\x1b\x07\x9b\u202e")
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202eexe.txt" in table.stdout
    assert "wf\\x1b[31m" in table.stdout
    (row,) = [line for line in table.stdout.splitlines() if line.startswith(damaged)]
    assert row.split()[1:6] == ["-", "corrupt", "?", "?", "0s"]
    assert f"run {damaged!r}, checkpoint" in row
    records = json.loads(plait("runs", "--checkpoint", url, "--json").stdout)
    assert {r["run_id"]: r["status"] for r in records} == {hostile: "failed", damaged: "corrupt"}
    (corrupt,) = [r for r in records if r["status"] == "corrupt"]
    assert broken.checkpoint_id in corrupt["error"]
    raw = plait("runs", "--checkpoint", url, "--json").stdout
    assert "\x9b" not in raw and "\\u009b" in raw
    only = json.loads(plait("runs", "--checkpoint", url, "--json", "--status", "corrupt").stdout)
    assert [r["run_id"] for r in only] == [damaged]


def test_updated_counts_from_the_latest_checkpoint_the_order_goes_by(tmp_path: Path) -> None:
    # issue 34: the listing sorts by last update, but AGE counted from the first checkpoint,
    # so a run begun long ago and updated just now showed an old age at the top
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    long_running, recent = new_run_id("long"), new_run_id("recent")

    async def save() -> None:
        store = open_store(url)
        try:
            first = make_checkpoint(long_running, status="running")
            await store.save(attrs.evolve(first, created_at=time.time() - 3 * 86400))
            await store.save(attrs.evolve(make_checkpoint(recent), created_at=time.time() - 3600))
            latest = attrs.evolve(
                make_checkpoint(long_running, 2, parent_id=first.checkpoint_id, status="idle"),
                created_at=time.time() - 5,
            )
            await store.save(latest)
        finally:
            await store.aclose()

    anyio.run(save)
    rows = plait("runs", "--checkpoint", url).stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == [long_running, recent]
    assert rows[0].split()[5:7] in (["5s", "ago"], ["6s", "ago"], ["7s", "ago"])
    assert rows[1].split()[5:7] == ["1h", "ago"]


def cell(header: str, row: str, name: str) -> str:
    """The cell of column ``name`` in a row of ``plait runs``' table (cells start where
    their headers do)."""
    start = header.index(name)
    after = header[start + len(name) :]
    end = start + len(name) + (len(after) - len(after.lstrip())) if after.strip() else None
    return row[start:end].strip()


class Columns:
    """A plugin adding two columns to run listings: one from the checkpoint's metadata
    the listing read, one that raises."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def shipped(self, info: RunInfo) -> str:
        self.seen.append(info.run_id)
        return str(info.metadata.get("shipped", "-"))

    def broken(self, info: RunInfo) -> str:
        raise KeyError("no such thing")

    @hookimpl
    def plait_run_columns(self) -> dict[str, Any]:
        return {"shipped": self.shipped, "broken": self.broken}


def test_plugins_add_columns_from_what_the_listing_read(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    boxed, bare = new_run_id("boxed"), new_run_id("bare")

    async def fill() -> None:
        async with opened_store(url) as store:
            await store.save(make_checkpoint(bare, 1))
            checkpoint = make_checkpoint(boxed, 1)
            metadata = {**checkpoint.metadata, "shipped": "box 7\x1b[2J"}
            await store.save(attrs.evolve(checkpoint, metadata=metadata))

    anyio.run(fill)
    columns = Columns()
    plait_register_plugin(columns, "columns")
    table = plait("runs", "--checkpoint", url)
    assert table.exit_code == 0, table.output
    header, first, second = table.stdout.splitlines()
    assert header.split()[-1] == "ERROR" and {"SHIPPED", "BROKEN"} <= set(header.split())
    assert first.startswith(boxed) and second.startswith(bare)
    assert cell(header, first, "SHIPPED") == "box 7\\x1b[2J"  # escaped, never raw
    assert cell(header, first, "BROKEN") == "?"  # a column that raises shows ?
    assert (cell(header, second, "SHIPPED"), cell(header, second, "BROKEN")) == ("-", "?")
    assert sorted(columns.seen) == sorted([boxed, bare])  # once per run, from the listing
    records = json.loads(plait("runs", "--checkpoint", url, "--json").stdout)
    assert records[0]["columns"]["shipped"] == "box 7\\x1b[2J"
    assert records[0]["columns"]["broken"] == "?"
    assert "metadata" not in records[0]


def test_two_plugins_giving_one_column_name_is_an_error_naming_both(
    plait_register_plugin: RegisterPlugin,
) -> None:
    plait_register_plugin(Columns(), "first")
    plait_register_plugin(Columns(), "second")
    with pytest.raises(
        PlaitError, match="'shipped' is given by both plugin 'second' and plugin 'first'"
    ):
        run_columns()


class PendingRuns:
    """A plugin listing runs that have no checkpoint yet (``plait_pending_runs``)."""

    def __init__(self, runs: list[RunInfo], error: str | None = None) -> None:
        self.runs, self.error = runs, error
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    @hookimpl
    def plait_pending_runs(self, store: str, queues: Any) -> Any:
        self.asked.append((store, tuple(queues)))

        async def listed() -> list[RunInfo]:
            if self.error is not None:
                raise RuntimeError(self.error)
            return self.runs

        return listed


def _pending(run_id: str, age: float, status: str = "queued") -> RunInfo:
    at = time.time() - age
    return RunInfo(run_id, "app:flow", status, 0, 0, None, at, at)


def test_runs_with_no_checkpoint_yet_are_listed_among_the_others_newest_first(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    new, old = new_run_id("new"), new_run_id("old")
    _save_runs(url, [(old, "idle", 300.0), (new, "failed", 100.0)])
    newest, between, oldest = new_run_id("q1"), new_run_id("q2"), new_run_id("q3")
    plugin = PendingRuns(
        [
            _pending(between, 200.0),
            _pending(newest, 10.0),
            _pending(oldest, 400.0, "refused"),
            _pending(old, 5.0, "running"),  # it has a checkpoint: listed once, from it
        ]
    )
    plait_register_plugin(plugin, "pending")
    records = json.loads(plait("runs", "--checkpoint", url, "--json", "--queue", "b").stdout)
    assert [(r["run_id"], r["status"]) for r in records] == [
        (newest, "queued"),
        (new, "failed"),
        (between, "queued"),
        (old, "idle"),
        (oldest, "refused"),
    ]
    assert plugin.asked == [(url, ("b",))]
    limited = json.loads(plait("runs", "--checkpoint", url, "--json", "--limit", "2").stdout)
    assert [r["run_id"] for r in limited] == [newest, new]
    queued = json.loads(plait("runs", "--checkpoint", url, "--json", "--status", "queued").stdout)
    assert [r["run_id"] for r in queued] == [newest, between]
    asked = len(plugin.asked)
    idle = json.loads(plait("runs", "--checkpoint", url, "--json", "--status", "idle").stdout)
    assert [r["run_id"] for r in idle] == [old]
    assert len(plugin.asked) == asked  # a status only checkpoints have reads no queue
    table = plait("runs", "--checkpoint", url)
    header, *rows = table.stdout.splitlines()
    assert rows[0].startswith(newest) and cell(header, rows[0], "STATUS") == "queued"


def test_a_pending_source_that_fails_is_a_warning_and_the_rest_is_listed(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    done = new_run_id("done")
    _save_runs(url, [(done, "idle", 10.0)])
    plait_register_plugin(PendingRuns([], error="queue \x1b[2J unreachable"), "pending")
    result = plait("runs", "--checkpoint", url, "--json")
    assert result.exit_code == 0
    assert [r["run_id"] for r in json.loads(result.stdout)] == [done]
    assert (
        "warning: plugin 'pending' could not list its runs: queue \\x1b[2J unreachable"
        in result.stderr
    )
