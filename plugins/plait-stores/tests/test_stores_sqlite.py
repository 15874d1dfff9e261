"""The SQLite store: the contract, WAL and durability settings, concurrent writers."""

from __future__ import annotations

import sqlite3
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from plait import CheckpointError
from plait_durable import (
    Checkpoint,
    CheckpointStore,
    CorruptCheckpointError,
    StoreUnavailableError,
    encode_checkpoint,
)
from plait_stores import SqliteCheckpointStore
from plait_stores._sqlite import SCHEMA_VERSION
from plait_testing.conformance import CrashConformance, LeaseConformance
from plait_testing.stores import (
    CheckpointStoreContract,
    EventJournalContract,
    flip_byte,
    make_checkpoint,
    new_run_id,
)


class TestSqliteStore(
    CheckpointStoreContract, EventJournalContract, CrashConformance, LeaseConformance
):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[SqliteCheckpointStore]:
        store = SqliteCheckpointStore.from_url(f"sqlite:///{tmp_path / 'runs.db'}")
        yield store
        await store.aclose()

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        # Another connection, as a damaged disk or a stray writer would be.
        assert isinstance(store, SqliteCheckpointStore)
        with sqlite3.connect(store.path) as conn:
            (data,) = conn.execute(
                "SELECT data FROM plait_checkpoints WHERE checkpoint_id = ?", (checkpoint_id,)
            ).fetchone()
            conn.execute(
                "UPDATE plait_checkpoints SET data = ? WHERE checkpoint_id = ?",
                (flip_byte(data), checkpoint_id),
            )
        conn.close()

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        assert isinstance(store, SqliteCheckpointStore)
        return SqliteCheckpointStore(store.path)


pytestmark = pytest.mark.anyio


async def _write_run(path: Path, run_id: str, count: int) -> list[Checkpoint]:
    saved: list[Checkpoint] = []
    async with SqliteCheckpointStore(path) as store:
        for superstep in range(count):
            parent = saved[-1].checkpoint_id if saved else None
            checkpoint = make_checkpoint(run_id, superstep, parent_id=parent)
            await store.save(checkpoint)
            saved.append(checkpoint)
    return saved


async def _check_runs(path: Path, runs: dict[str, list[str]]) -> None:
    async with SqliteCheckpointStore(path) as store:
        for run_id, ids in runs.items():
            assert [i.checkpoint_id for i in await store.list(run_id)] == ids
            for checkpoint_id in ids:
                assert (await store.load(checkpoint_id)).run_id == run_id


async def test_ten_writers_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    runs = {new_run_id(): [] for _ in range(10)}  # type: dict[str, list[str]]

    async def writer(run_id: str) -> None:
        runs[run_id] = [c.checkpoint_id for c in await _write_run(path, run_id, 20)]

    async with anyio.create_task_group() as tg:
        for run_id in runs:
            tg.start_soon(writer, run_id)
    await _check_runs(path, runs)


_WRITER = textwrap.dedent(
    """
    import json, sys
    import anyio
    from plait_testing.stores import make_checkpoint
    from plait_stores import SqliteCheckpointStore

    async def main(path, run_ids):
        store = SqliteCheckpointStore(path, timeout=60)
        written = {run_id: [] for run_id in run_ids}

        async def one_run(run_id):
            for superstep in range(20):
                checkpoint = make_checkpoint(run_id, superstep)
                await store.save(checkpoint)
                written[run_id].append(checkpoint.checkpoint_id)

        async with anyio.create_task_group() as tg:
            for run_id in run_ids:
                tg.start_soon(one_run, run_id)
        await store.aclose()
        print(json.dumps(written))

    anyio.run(main, sys.argv[1], sys.argv[2:])
    """
)


async def test_two_processes_write_one_file(tmp_path: Path) -> None:
    import json

    path = tmp_path / "shared.db"
    batches = [[new_run_id() for _ in range(5)] for _ in range(2)]
    results: list[dict[str, list[str]]] = []

    async def process(run_ids: list[str]) -> None:
        done = await anyio.run_process(
            [sys.executable, "-c", _WRITER, str(path), *run_ids], check=False
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        results.append(json.loads(done.stdout))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for run_ids in batches:
                tg.start_soon(process, run_ids)
    runs = {run_id: ids for result in results for run_id, ids in result.items()}
    assert len(runs) == 10 and all(len(ids) == 20 for ids in runs.values())
    await _check_runs(path, runs)


async def test_wal_mode_and_full_sync_by_default(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "runs.db")
    await store.save(make_checkpoint(new_run_id()))
    assert store.journal_mode == "wal"
    assert store._conn is not None
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    await store.aclose()
    fast = SqliteCheckpointStore.from_url(f"sqlite:///{tmp_path / 'runs.db'}?synchronous=normal")
    await fast.latest("r")
    assert fast._conn is not None
    assert fast._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    await fast.aclose()


async def test_schema_is_versioned(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SqliteCheckpointStore(path) as store:
        await store.latest("r")
    with sqlite3.connect(path) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM plait_schema_version")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        conn.execute("INSERT INTO plait_schema_version VALUES (?, 0)", (SCHEMA_VERSION + 1,))
    conn.close()
    async with SqliteCheckpointStore(path) as newer:
        with pytest.raises(CheckpointError, match="upgrade plait-stores"):
            await newer.latest("r")


# The schema as plait-stores 0.1 created it (migration 1), before base_id.
_V1_SCHEMA = """
CREATE TABLE plait_schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL);
INSERT INTO plait_schema_version VALUES (1, 0);
CREATE TABLE plait_checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    checkpoint_id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    superstep INTEGER NOT NULL,
    parent_id TEXT,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX plait_checkpoints_run_seq ON plait_checkpoints (run_id, seq);
"""


async def test_a_version_1_database_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
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
    with sqlite3.connect(path) as conn:
        conn.executescript(_V1_SCHEMA)
        rows = [
            (c.checkpoint_id, c.run_id, c.superstep, c.parent_id, c.status, c.created_at,
             encode_checkpoint(c))
            for c in (c1, c2, c3)
        ]  # fmt: skip
        rows.append(("damaged", other_run, 0, None, "running", 0.0, b"not a checkpoint"))
        conn.executemany("INSERT INTO plait_checkpoints VALUES (NULL, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()

    async with SqliteCheckpointStore(path) as store:
        assert list(await store.list(run_id)) == [c1.info, c2.info, c3.info]
        assert (await store.load(c2.checkpoint_id)).base_id == c1.checkpoint_id
        assert [i.base_id for i in await store.list(other_run)] == [None]
        with pytest.raises(CorruptCheckpointError, match="damaged"):
            await store.load("damaged")
        # the upgraded rows prune like new ones: the base of the kept delta stays
        assert await store.prune(run_id, keep_last=1) == 1
        assert [i.checkpoint_id for i in await store.list(run_id)] == [
            c1.checkpoint_id,
            c3.checkpoint_id,
        ]
        c4 = make_checkpoint(run_id, 3, parent_id=c3.checkpoint_id, base_id=c1.checkpoint_id)
        await store.save(c4)
        assert await store.latest(run_id) == c4
    with sqlite3.connect(path) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM plait_schema_version")]
        columns = [row[1] for row in conn.execute("PRAGMA table_info(plait_checkpoints)")]
    conn.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    assert columns[-1] == "base_id"


async def test_unopenable_path_is_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    store = SqliteCheckpointStore(tmp_path / "a-file" / "runs.db")
    with pytest.raises(StoreUnavailableError, match="a-file"):
        await store.save(make_checkpoint(new_run_id()))


async def test_not_a_database_is_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "runs.db").write_bytes(b"this is not a database" * 100)
    async with SqliteCheckpointStore(tmp_path / "runs.db") as store:
        with pytest.raises(StoreUnavailableError, match="not a SQLite database"):
            await store.latest("r")


def test_urls() -> None:
    assert SqliteCheckpointStore.from_url("sqlite:///runs.db").path == "runs.db"
    assert SqliteCheckpointStore.from_url("sqlite:////var/x.db").path == "/var/x.db"
    store = SqliteCheckpointStore.from_url("sqlite:///x.db?synchronous=NORMAL&timeout=2.5")
    assert (store.synchronous, store.timeout) == ("normal", 2.5)
    for bad in ("sqlite://", "sqlite:///", "sqlite://x.db"):
        with pytest.raises(ValueError, match="not a SQLite store url"):
            SqliteCheckpointStore.from_url(bad)
    with pytest.raises(ValueError, match="synchronous"):
        SqliteCheckpointStore.from_url("sqlite:///x.db?synchronous=off")
    with pytest.raises(ValueError, match="known options: synchronous, timeout"):
        SqliteCheckpointStore.from_url("sqlite:///x.db?journal=delete")


async def test_a_new_database_and_its_folder_are_private(tmp_path: Path) -> None:
    # Issue 24, finding 11: the database was created 0644 in a 0755 folder.
    store = SqliteCheckpointStore(tmp_path / "new" / "runs.db")
    await store.save(make_checkpoint(new_run_id()))
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
    files = sorted(p.name for p in (tmp_path / "new").iterdir())
    assert "runs.db" in files and "runs.db-wal" in files, files
    for name in files:
        assert (tmp_path / "new" / name).stat().st_mode & 0o777 == 0o600, name
    await store.aclose()


async def _fill(store: SqliteCheckpointStore, runs: int) -> list[str]:
    """``runs`` runs of three checkpoints and 600 KB of blobs each."""
    import os

    from plait_durable import blob_hash

    run_ids = []
    for _ in range(runs):
        run_id = new_run_id()
        blobs = {}
        for _ in range(3):
            data = b'"' + os.urandom(100_000).hex().encode() + b'"'
            blobs[blob_hash(data)] = data
        await store.save(make_checkpoint(run_id, 1), blobs=blobs)
        await store.save(make_checkpoint(run_id, 2))
        run_ids.append(run_id)
    return run_ids


def _db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@pytest.mark.anyio
async def test_removing_runs_shrinks_the_database_file(tmp_path: Path) -> None:
    """Issue 34, item 8: ``plait runs prune`` removed 10 of 13 runs and the file stayed
    8.0 MB. Now the pages they held go back to the file system."""
    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path)
    run_ids = await _fill(store, 13)
    full = _db_bytes(path)
    assert full > 7_000_000
    for run_id in run_ids[:10]:
        assert await store.delete_run(run_id) == 2
    assert _db_bytes(path) < full * 0.4
    for run_id in run_ids[10:]:  # what stays reads back
        assert len(await store.get_blobs(run_id, await store.blob_hashes(run_id))) == 3
    await store.aclose()


@pytest.mark.anyio
async def test_a_database_made_without_auto_vacuum_shrinks_after_a_prune_and_keeps_its_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path)
    run_ids = await _fill(store, 13)
    latest = {run_id: await store.latest(run_id) for run_id in run_ids[10:]}
    await store.aclose()
    with sqlite3.connect(path, isolation_level=None) as conn:  # as a database made before
        conn.execute("PRAGMA auto_vacuum=NONE")
        conn.execute("VACUUM")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    full = _db_bytes(path)
    store = SqliteCheckpointStore(path)
    for run_id in run_ids[:10]:
        await store.delete_run(run_id)
    assert _db_bytes(path) < full * 0.4
    for run_id, checkpoint in latest.items():
        assert await store.latest(run_id) == checkpoint
        assert len(await store.get_blobs(run_id, await store.blob_hashes(run_id))) == 3
    # converted once: from now on a prune vacuums incrementally
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
    await store.aclose()


@pytest.mark.anyio
async def test_a_writer_waits_out_the_one_time_vacuum_within_its_bound(tmp_path: Path) -> None:
    """The VACUUM that converts a database made without auto_vacuum holds SQLite's write
    lock; another connection's saves wait for it (within their ``timeout``) and land."""
    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path)
    run_ids = await _fill(store, 13)
    await store.aclose()
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("PRAGMA auto_vacuum=NONE")
        conn.execute("VACUUM")
    conn.close()
    pruning, writer = SqliteCheckpointStore(path), SqliteCheckpointStore(path, timeout=10)
    live = new_run_id()
    written = [make_checkpoint(live, step) for step in range(20)]

    async def write() -> None:
        for checkpoint in written:
            await writer.save(checkpoint)

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        for run_id in run_ids[:10]:
            await pruning.delete_run(run_id)
    assert [c.checkpoint_id for c in await writer.list(live)] == [c.checkpoint_id for c in written]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
    await pruning.aclose()
    await writer.aclose()
