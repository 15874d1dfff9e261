"""The PostgreSQL store's run index: it is a RunIndex, pages are served from plait_runs,
and runs stored before the index existed are indexed when the schema is upgraded."""

from __future__ import annotations

import attrs
import psycopg
import pytest
from plait_durable import RunIndex, list_runs
from plait_postgres import PostgresCheckpointStore
from plait_postgres._store import SCHEMA_VERSION
from plait_testing.stores import make_checkpoint

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: psycopg's async API does not run on trio."""
    return "asyncio"


async def test_runs_before_the_index_are_indexed_on_upgrade(fresh_database: str) -> None:
    store = PostgresCheckpointStore(fresh_database)
    assert isinstance(store, RunIndex)
    try:
        for i in range(6):
            checkpoint = make_checkpoint(f"run-{i}", 1, status=("idle", "failed")[i % 2])
            await store.save(attrs.evolve(checkpoint, metadata={"workflow": f"wf{i % 2}"}))
        assert [r.run_id for r in (await list_runs(store, status="failed")).runs] == [
            "run-5",
            "run-3",
            "run-1",
        ]
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(fresh_database, autocommit=True) as conn:
        await conn.execute("DROP TABLE plait_runs")  # what the schema before it had
        await conn.execute("DROP TABLE plait_blobs")  # schema 5 came after the index
        await conn.execute("DELETE FROM plait_schema_version WHERE version >= 4")
    assert SCHEMA_VERSION >= 5
    again = PostgresCheckpointStore(fresh_database)
    try:
        page = await list_runs(again, workflow="wf0", limit=2)
        assert [r.run_id for r in page.runs] == ["run-4", "run-2"]
        assert page.next_cursor is not None
        rest = await list_runs(again, workflow="wf0", limit=2, cursor=page.next_cursor)
        assert [r.run_id for r in rest.runs] == ["run-0"] and rest.next_cursor is None
    finally:
        await again.aclose()
