"""The SQLite store's run index: every page is one query served by an index (no scan and
no sort of the whole table), fast over 10,000 runs; older databases are indexed when
opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import attrs
import pytest
from plait_durable import RunQuery, list_runs
from plait_stores import SqliteCheckpointStore
from plait_stores._sqlite import SCHEMA_VERSION, list_runs_sql
from plait_testing.stores import make_checkpoint

pytestmark = pytest.mark.anyio

STATUSES = ("running", "idle", "idle_with_pending_requests", "failed")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def fill(store: SqliteCheckpointStore, runs: int) -> None:
    batch = []
    for i in range(runs):
        checkpoint = make_checkpoint(f"run-{i:05d}", 1, status=STATUSES[i % 4])
        batch.append(attrs.evolve(checkpoint, metadata={"workflow": f"wf{i % 3}"}))
        if len(batch) == 1000:
            await store.save_many(batch)
            batch = []
    if batch:
        await store.save_many(batch)


QUERIES = [
    RunQuery(),
    RunQuery(status="failed"),
    RunQuery(workflow="wf1"),
    RunQuery(forked_from="run-00001"),
    RunQuery(status="idle", cursor="5000"),
    RunQuery(workflow="wf2", since=0.0, until=4_102_444_800.0),  # 2100: every run
    RunQuery(search="run-09"),
]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: repr(attrs.asdict(q)))
async def test_every_page_is_one_indexed_query(tmp_path: Path, query: RunQuery) -> None:
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    await fill(store, 200)
    await store.aclose()
    sql, params = list_runs_sql(query)
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        plan = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "USING INDEX" in plan or "USING COVERING INDEX" in plan, plan
    assert "TEMP B-TREE" not in plan, f"the page sorts the whole table: {plan}"


async def test_pages_over_10000_runs_see_each_run_once(tmp_path: Path) -> None:
    # how fast a page is lives in tests/benchmarks/bench_ui.py (runs_page); that each page
    # is one indexed query is test_every_page_is_one_indexed_query
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    try:
        await fill(store, 10_000)
        first = await list_runs(store, status="failed")
        assert [r.run_id for r in first.runs][:2] == ["run-09999", "run-09995"]
        cursor, pages = first.next_cursor, 1
        seen = [r.run_id for r in first.runs]
        while cursor is not None:
            page = await list_runs(store, status="failed", cursor=cursor)
            seen += [r.run_id for r in page.runs]
            cursor, pages = page.next_cursor, pages + 1
        assert (len(seen), len(set(seen)), pages) == (2500, 2500, 50)
        assert seen == sorted(seen, reverse=True)
    finally:
        await store.aclose()


async def test_a_database_from_before_the_index_is_indexed_when_opened(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    await fill(store, 10)
    await store.aclose()
    with sqlite3.connect(tmp_path / "runs.db") as conn:  # what schema 3 had
        conn.execute("DROP TABLE plait_runs")
        conn.execute("DROP TABLE plait_blobs")  # schema 5 (blobs) came after the index
        conn.execute("DELETE FROM plait_schema_version WHERE version >= 4")
    assert SCHEMA_VERSION >= 5
    again = SqliteCheckpointStore(tmp_path / "runs.db")
    try:
        page = await list_runs(again, workflow="wf0")
        assert [r.run_id for r in page.runs] == [f"run-{i:05d}" for i in (9, 6, 3, 0)]
        assert {r.status for r in page.runs} == {
            "idle",
            "running",
            "idle_with_pending_requests",
            "failed",
        }
    finally:
        await again.aclose()
