"""Queued runs in ``plait runs`` and ``plait ui``'s run list (the ``plait_pending_runs``
hook), on real PostgreSQL and Redis: a submitted run no worker has taken has no checkpoint,
and the queue says it is there."""

from __future__ import annotations

import json
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from click.testing import CliRunner
from plait_cli import make_cli
from plait_workers import submit
from workers_support import HERE, WorkerFactory, latest_status, wait_for


def _submit(store: str, queue: str, value: int) -> str:
    return anyio.run(lambda: submit("workers_app:chain", value, store=store, queue=queue))


def _listed(store: str, *flags: str) -> tuple[list[dict[str, Any]], str]:
    """``plait runs --json``'s records, and what it said on stderr."""
    result = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", store, "--json", *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_plait_runs_lists_queued_runs_then_each_once_from_its_checkpoint(
    store: str, queue: str, start_worker: WorkerFactory
) -> None:
    first = _submit(store, queue, 1)
    time.sleep(0.01)  # (the queue keeps milliseconds)
    second = _submit(store, queue, 2)
    records, _ = _listed(store, "--queue", queue)
    mine = [r for r in records if r["run_id"] in (first, second)]
    # no checkpoint yet, listed from the queue, newest first like every run
    assert [r["run_id"] for r in mine] == [second, first]
    assert {r["status"] for r in mine} == {"queued"}
    assert all(r["workflow"] == "workers_app:chain" and r["superstep"] == 0 for r in mine)
    assert all(abs(r["updated_at"] - time.time()) < 60 for r in mine)
    # newest first across the listing: nothing listed before them is older
    at = records.index(mine[0])
    assert all(r["updated_at"] >= mine[0]["updated_at"] for r in records[:at])
    # the table says so too, and --status queued lists them alone
    table = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", store, "--queue", queue])
    assert table.exit_code == 0, table.output
    row = next(line for line in table.stdout.splitlines() if line.startswith(first))
    assert " queued " in row
    queued, _ = _listed(store, "--queue", queue, "--status", "queued")
    assert {first, second} <= {r["run_id"] for r in queued}
    assert {r["status"] for r in queued} == {"queued"}
    # without --queue, this test's own queue is not read
    plain, _ = _listed(store)
    assert first not in {r["run_id"] for r in plain}

    start_worker("--allow-imports", sleep=0.05)
    wait_for(
        lambda: all((latest_status(store, r) or ("",))[0] == "idle" for r in (first, second)),
        60,
        "both runs finish",
    )
    records, _ = _listed(store, "--queue", queue)
    ids = [r["run_id"] for r in records]
    assert ids.count(first) == 1 and ids.count(second) == 1  # from the checkpoint alone
    assert {r["status"] for r in records if r["run_id"] in (first, second)} == {"idle"}
    idle, _ = _listed(store, "--queue", queue, "--status", "idle", "--limit", "100000")
    assert {first, second} <= {r["run_id"] for r in idle}


def test_a_listing_whose_queue_does_not_answer_in_time_lists_the_checkpoints_and_warns(
    store: str, queue: str, start_worker: WorkerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _submit(store, queue, 3)
    worker = start_worker("--allow-imports", sleep=0.01)
    wait_for(lambda: (latest_status(store, done) or ("",))[0] == "idle", 60, "the run ends")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    waiting = _submit(store, queue, 4)  # no worker takes it
    listed, _ = _listed(store, "--queue", queue)
    assert waiting in {r["run_id"] for r in listed}
    from plait_workers import _listing

    monkeypatch.setattr(_listing, "LIST_TIMEOUT", 0.0)
    records, said = _listed(store, "--queue", queue)
    ids = {r["run_id"] for r in records}
    assert done in ids and waiting not in ids
    assert "warning: plugin 'workers' could not list its runs: queue 'plait' at" in said
    assert "did not answer within 0 s" in said


def test_a_queue_the_store_user_may_not_read_is_a_warning(
    redis_url: str, queue: str, tmp_path: Path
) -> None:
    # a Redis user that may use Plait's keys and not saq's: the store works, the queue not
    user, password = f"u{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin = redis.Redis.from_url(redis_url)
    admin.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], keys=["plait:*"], commands=["+@all"]
    )
    try:
        host = redis_url.split("://", 1)[1].split("@")[-1]
        store = f"redis://{user}:{password}@{host}"
        sys.path.insert(0, str(HERE))
        import workers_app

        async def one() -> str:
            result = await workers_app.chain().run(5, checkpoint=store)
            return str(result.run_id)

        run_id = anyio.run(one)
        queued = _submit(redis_url, queue, 6)  # a job on the queue, which the user may not read
        records, said = _listed(store, "--queue", queue)
        assert [r["status"] for r in records if r["run_id"] == run_id] == ["idle"]
        assert queued not in {r["run_id"] for r in records}
        assert "warning: plugin 'workers' could not list its runs:" in said
        table = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", store, "--queue", queue])
        assert table.exit_code == 0 and run_id in table.stdout
        assert "warning:" in table.stderr
    finally:
        admin.acl_deluser(user)
        admin.close()


def test_a_store_with_no_queue_is_listed_with_no_connection(tmp_path: Path) -> None:
    import plait_workers

    # the answer for a store no queue can hold is None, decided from the URL alone
    assert plait_workers.plait_pending_runs(f"sqlite:///{tmp_path / 'runs.db'}", ("x",)) is None


def test_listing_a_postgresql_store_no_queue_has_used_creates_no_queue(
    postgres_url: str,
) -> None:
    import psycopg

    name = f"fresh{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        base, _, _ = postgres_url.rpartition("/")
        store = f"{base}/{name}"
        records, said = _listed(store)
        assert records == [] and "warning" not in said
        with psycopg.connect(store) as conn:
            row = conn.execute("SELECT to_regclass('saq_jobs')").fetchone()
        assert row == (None,)  # the listing made no queue tables
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_the_queue_column_names_the_queue_a_run_went_through(
    store: str, queue: str, start_worker: WorkerFactory
) -> None:
    sys.path.insert(0, str(HERE))
    import workers_app

    async def direct() -> str:  # a run no worker ran: no queue
        result = await workers_app.chain().run(7, checkpoint=store)
        return str(result.run_id)

    alone = anyio.run(direct)
    ran = _submit(store, queue, 8)
    start_worker("--allow-imports", sleep=0.01)
    wait_for(lambda: (latest_status(store, ran) or ("",))[0] == "idle", 60, "the run ends")
    waiting = _submit(store, queue, 9)  # taken by the worker, or still queued: either way
    records, _ = _listed(store, "--queue", queue, "--limit", "100000")
    cells = {r["run_id"]: r["columns"]["queue"] for r in records}
    assert cells[ran] == queue  # from its checkpoints' metadata
    assert cells[waiting] == queue  # from its checkpoints, or from the queue's listing
    assert cells[alone] == "-"
    table = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", store, "--queue", queue])
    assert table.exit_code == 0, table.output
    assert " QUEUE " in table.stdout.splitlines()[0]
    row = next(line for line in table.stdout.splitlines() if line.startswith(ran))
    assert f" {queue} " in row


def test_the_queue_column_shows_only_a_queue_name_from_stored_metadata() -> None:
    from plait_durable import RunInfo
    from plait_workers._columns import queue_cell

    def cell(metadata: Any) -> str:
        return queue_cell(RunInfo("r", "w", "idle", 1, 0, None, 0.0, 0.0, metadata=metadata))

    assert cell({"workers": {"queue": "orders.eu-1"}}) == "orders.eu-1"
    assert cell({"workers": {"target": "app:flow"}}) == "?queue"  # recorded before queues
    assert cell({"workers": {"queue": "\x1b[31mred"}}) == "?queue"  # stored text: not shown
    assert cell({"workers": "queue"}) == "-"
    assert cell({}) == "-"
