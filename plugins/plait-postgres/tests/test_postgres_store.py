"""The PostgreSQL store against a real server: the contract, schema, concurrency, outages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import plait_postgres
import psycopg
import pytest
from plait import CheckpointError
from plait_durable import (
    Checkpoint,
    CheckpointStore,
    CorruptCheckpointError,
    StoreUnavailableError,
    encode_checkpoint,
)
from plait_postgres import SCHEMA_VERSION, PostgresCheckpointStore
from plait_testing import fake_entry_point, make_plugin_manager, servers
from plait_testing.conformance import CrashConformance, LeaseConformance
from plait_testing.stores import (
    CheckpointStoreContract,
    EventJournalContract,
    flip_byte,
    make_checkpoint,
    new_run_id,
)

# psycopg's async API (and psycopg-pool) run on asyncio only, so these tests do too.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: psycopg's async API does not run on trio."""
    return "asyncio"


class TestPostgresStore(
    CheckpointStoreContract, EventJournalContract, CrashConformance, LeaseConformance
):
    @pytest.fixture
    def anyio_backend(self) -> str:
        """asyncio only: psycopg's async API does not run on trio."""
        return "asyncio"

    @pytest.fixture
    async def store(self, postgres_database: str) -> AsyncIterator[PostgresCheckpointStore]:
        self.url = postgres_database
        store = PostgresCheckpointStore.from_url(postgres_database)
        yield store
        await store.aclose()

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        # Another connection, as a damaged disk or a stray writer would be.
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT data FROM plait_checkpoints WHERE checkpoint_id = %s", (checkpoint_id,)
            )
            row = await cursor.fetchone()
            assert row is not None
            await conn.execute(
                "UPDATE plait_checkpoints SET data = %s WHERE checkpoint_id = %s",
                (flip_byte(bytes(row[0])), checkpoint_id),
            )

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        return PostgresCheckpointStore(self.url)


async def _fetch(url: str, sql: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(sql)
        return await cursor.fetchall()


async def test_schema_is_created_once_on_first_use(fresh_database: str) -> None:
    stores = [PostgresCheckpointStore(fresh_database) for _ in range(5)]
    async with anyio.create_task_group() as tg:  # five processes' worth racing to migrate
        for store in stores:
            tg.start_soon(store.latest, "r")
    for store in stores:
        await store.aclose()
    versions = await _fetch(fresh_database, "SELECT version FROM plait_schema_version")
    assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
    columns = await _fetch(
        fresh_database,
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_name = 'plait_checkpoints' ORDER BY ordinal_position",
    )
    assert [c for c, _ in columns] == [
        "seq", "checkpoint_id", "run_id", "superstep", "parent_id", "status", "created_at",
        "data", "base_id",
    ]  # fmt: skip
    assert dict(columns)["data"] == "bytea"


async def test_a_newer_schema_is_refused(fresh_database: str) -> None:
    async with PostgresCheckpointStore(fresh_database) as store:
        await store.latest("r")
    async with await psycopg.AsyncConnection.connect(fresh_database, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO plait_schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,)
        )
    async with PostgresCheckpointStore(fresh_database) as newer:
        with pytest.raises(CheckpointError, match="upgrade plait-postgres"):
            await newer.latest("r")


# The schema as plait-postgres 0.1 created it (migration 1), before base_id.
_V1_SCHEMA = """
CREATE TABLE plait_schema_version (
    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
INSERT INTO plait_schema_version (version) VALUES (1);
CREATE TABLE plait_checkpoints (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    checkpoint_id text NOT NULL UNIQUE,
    run_id text NOT NULL,
    superstep bigint NOT NULL,
    parent_id text,
    status text NOT NULL,
    created_at double precision NOT NULL,
    data bytea NOT NULL
);
CREATE INDEX plait_checkpoints_run_seq ON plait_checkpoints (run_id, seq);
"""


async def test_a_version_1_database_upgrades_in_place(fresh_database: str) -> None:
    run_id, other_run = new_run_id(), new_run_id()
    c1 = make_checkpoint(run_id, 0)
    c2 = make_checkpoint(run_id, 1, parent_id=c1.checkpoint_id, base_id=c1.checkpoint_id)
    c3 = make_checkpoint(
        run_id,
        2,
        parent_id=c2.checkpoint_id,
        state={"kind": "delta", "base": c1.checkpoint_id, "text": "nul \x00 ✓"},
        base_id=c1.checkpoint_id,
    )
    async with await psycopg.AsyncConnection.connect(fresh_database, autocommit=True) as conn:
        await conn.execute(_V1_SCHEMA)
        rows = [
            (c.checkpoint_id, c.run_id, c.superstep, c.parent_id, c.status, c.created_at,
             encode_checkpoint(c))
            for c in (c1, c2, c3)
        ]  # fmt: skip
        # damaged rows: not UTF-8, and not JSON, though both mention a base
        rows.append(("bad-utf8", other_run, 0, None, "running", 0.0, b'\xff"base":"x"'))
        rows.append(("bad-json", other_run, 1, None, "running", 0.0, b"x" * 74 + b'{"base":"x'))
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO plait_checkpoints (checkpoint_id, run_id, superstep, parent_id,"
                " status, created_at, data) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                rows,
            )

    async with PostgresCheckpointStore(fresh_database) as store:
        assert list(await store.list(run_id)) == [c1.info, c2.info, c3.info]
        assert (await store.load(c2.checkpoint_id)).base_id == c1.checkpoint_id
        assert [i.base_id for i in await store.list(other_run)] == [None, None]
        with pytest.raises(CorruptCheckpointError, match="bad-json"):
            await store.load("bad-json")
        # the upgraded rows prune like new ones: the base of the kept delta stays
        assert await store.prune(run_id, keep_last=1) == 1
        assert [i.checkpoint_id for i in await store.list(run_id)] == [
            c1.checkpoint_id,
            c3.checkpoint_id,
        ]
        c4 = make_checkpoint(run_id, 3, parent_id=c3.checkpoint_id, base_id=c1.checkpoint_id)
        await store.save(c4)
        assert await store.latest(run_id) == c4
    versions = await _fetch(fresh_database, "SELECT version FROM plait_schema_version")
    assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


async def _write_run(store: PostgresCheckpointStore, run_id: str) -> list[str]:
    ids: list[str] = []
    for superstep in range(20):
        checkpoint = make_checkpoint(run_id, superstep, parent_id=ids[-1] if ids else None)
        await store.save(checkpoint)
        ids.append(checkpoint.checkpoint_id)
    return ids


async def _check_runs(url: str, runs: dict[str, list[str]]) -> None:
    async with PostgresCheckpointStore(url) as store:
        for run_id, ids in runs.items():
            assert [i.checkpoint_id for i in await store.list(run_id)] == ids
            latest = await store.latest(run_id)
            assert latest is not None and latest.checkpoint_id == ids[-1]
            for checkpoint_id in ids:
                assert (await store.load(checkpoint_id)).run_id == run_id


async def test_ten_concurrent_runs_through_one_store(fresh_database: str) -> None:
    runs: dict[str, list[str]] = {new_run_id(): [] for _ in range(10)}
    async with PostgresCheckpointStore(f"{fresh_database}?pool_max_size=4") as store:

        async def one_run(run_id: str) -> None:
            runs[run_id] = await _write_run(store, run_id)

        async with anyio.create_task_group() as tg:
            for run_id in runs:
                tg.start_soon(one_run, run_id)
    await _check_runs(fresh_database, runs)


async def test_ten_concurrent_runs_through_ten_stores(fresh_database: str) -> None:
    runs: dict[str, list[str]] = {new_run_id(): [] for _ in range(10)}

    async def one_run(run_id: str) -> None:
        async with PostgresCheckpointStore(f"{fresh_database}?pool_max_size=1") as store:
            runs[run_id] = await _write_run(store, run_id)

    async with anyio.create_task_group() as tg:
        for run_id in runs:
            tg.start_soon(one_run, run_id)
    await _check_runs(fresh_database, runs)


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_unreachable_server_is_store_unavailable(scheme: str) -> None:
    port = servers.closed_port()
    url = f"{scheme}://plait:s3cret@127.0.0.1:{port}/plait?connect_timeout=2"
    store = PostgresCheckpointStore.from_url(url)
    # fail_after guards against a hang; how fast the error comes is for the benchmarks
    with anyio.fail_after(10), pytest.raises(StoreUnavailableError) as caught:
        await store.save(make_checkpoint(new_run_id()))
    message = str(caught.value)
    assert str(port) in message and "s3cret" not in message, message
    await store.aclose()


async def test_dropped_connections_are_replaced(fresh_database: str) -> None:
    run_id = new_run_id()
    async with PostgresCheckpointStore(fresh_database) as store:
        first = make_checkpoint(run_id, 0)
        await store.save(first)
        killed = await _fetch(
            fresh_database,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        assert killed and all(ok for (ok,) in killed)
        second = make_checkpoint(run_id, 1, parent_id=first.checkpoint_id)
        await store.save(second)  # the pool notices the dead connection and reconnects
        assert await store.latest(run_id) == second


async def test_server_stopped_mid_run_is_store_unavailable(postgres_server: Any) -> None:
    store = PostgresCheckpointStore(f"{postgres_server.url}?connect_timeout=2&pool_timeout=3")
    run_id = new_run_id()
    first: Checkpoint = make_checkpoint(run_id, 0)
    await store.save(first)
    postgres_server.stop()
    with (
        anyio.fail_after(15),
        pytest.raises(StoreUnavailableError, match=str(postgres_server.port)),
    ):
        await store.save(make_checkpoint(run_id, 1, parent_id=first.checkpoint_id))
    await store.aclose()


def test_urls() -> None:
    store = PostgresCheckpointStore("postgres://u:pw@h:5/db?sslmode=disable&pool_max_size=2")
    assert store.url == "postgres://u:***@h:5/db?sslmode=disable&pool_max_size=2"
    assert store.pool_max_size == 2
    assert "pw" not in repr(store)
    with pytest.raises(ValueError, match="not a PostgreSQL store url"):
        PostgresCheckpointStore("mysql://h/db")
    with pytest.raises(ValueError, match="pool_timeout"):
        PostgresCheckpointStore("postgresql://h/db?pool_timeout=soon")


def test_hook_registers_postgresql_and_postgres() -> None:
    # the kernel's own path: entry point, plugin manager, hook, collector, registry
    manager = make_plugin_manager(
        fake_entry_point("postgres", plait_postgres, distribution="plait-postgres")
    )
    registered = manager.registry("checkpoint_store")
    assert registered.names() == ["postgres", "postgresql"]
    assert {registered.entry(name).distribution for name in registered} == {"plait-postgres"}
    assert isinstance(registered.get("postgres")("postgres://h/db"), PostgresCheckpointStore)
