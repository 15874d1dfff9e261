"""The file store stays in its root and cleans up after killed saves; the file and SQLite
stores fail within their time bound when another process holds a lock (issue 14,
findings 4, 8 and 10)."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

import pytest
from plait import CorruptCheckpointError, StoreUnavailableError
from plait_stores import FileCheckpointStore, SqliteCheckpointStore
from plait_testing.stores import make_checkpoint, new_run_id

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("entry", ["../../outside.ckpt", "/etc/passwd", "x/../../y.ckpt"])
async def test_an_id_entry_outside_the_root_is_corrupt_and_never_followed(
    tmp_path: Path, entry: str
) -> None:
    outside = tmp_path / "outside.ckpt"
    outside.write_bytes(b"precious")
    store = FileCheckpointStore(tmp_path / "store")
    checkpoint = make_checkpoint(new_run_id())
    await store.save(checkpoint)
    (tmp_path / "store" / "ids" / checkpoint.checkpoint_id).write_text(entry)
    with pytest.raises(CorruptCheckpointError, match="not a checkpoint file of this store"):
        await store.load(checkpoint.checkpoint_id)
    with pytest.raises(CorruptCheckpointError):
        await store.delete(checkpoint.checkpoint_id)
    assert outside.read_bytes() == b"precious"
    await store.aclose()


async def test_an_id_entry_naming_another_checkpoint_is_corrupt(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    first, second = make_checkpoint(run_id), make_checkpoint(run_id)
    await store.save(first)
    await store.save(second)
    ids = tmp_path / "ids"
    (ids / first.checkpoint_id).write_bytes((ids / second.checkpoint_id).read_bytes())
    with pytest.raises(CorruptCheckpointError):
        await store.delete(first.checkpoint_id)
    assert await store.load(second.checkpoint_id) == second
    await store.aclose()


async def test_leftovers_of_a_killed_save_are_removed_once_stale(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    checkpoint = make_checkpoint(new_run_id())
    await store.save(checkpoint)
    run_dir = next((tmp_path / "runs").iterdir())
    old = time.time() - 3600
    leftovers = [run_dir / ".plait-dead.tmp", tmp_path / "ids" / ".plait-dead.tmp"]
    orphan = tmp_path / "ids" / "orphan"
    orphan.write_text(f"{run_dir.name}/000000000009-0000000000-orphan.ckpt")
    fresh = run_dir / ".plait-inflight.tmp"  # a save in flight: never touched
    for path in [*leftovers, fresh]:
        path.write_bytes(b"partial")
    for path in [*leftovers, orphan]:
        os.utime(path, (old, old))
    assert store.cleanup() == 3
    assert not any(p.exists() for p in [*leftovers, orphan])
    assert fresh.exists()
    assert await store.load(checkpoint.checkpoint_id) == checkpoint
    # prune removes stale temporary files of the run it prunes
    os.utime(fresh, (old, old))
    await store.prune(checkpoint.run_id, keep_last=1)
    assert not fresh.exists()
    await store.aclose()


async def test_a_locked_lease_file_is_store_unavailable_within_the_bound(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path, timeout=0.2)
    run_id = new_run_id()
    lease = await store.acquire_lease(run_id, ttl=30)
    await store.release_lease(lease)
    fd = os.open(next((tmp_path / "leases").iterdir()), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process's exclusive lock, as it were
        with pytest.raises(StoreUnavailableError, match="stayed locked"):
            await store.acquire_lease(run_id, ttl=30)
    finally:
        os.close(fd)
    await store.aclose()


async def test_a_locked_sqlite_database_is_store_unavailable_within_the_bound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path, timeout=0.2)
    await store.save(make_checkpoint(new_run_id()))
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailableError, match="locked"):
            await store.save(make_checkpoint(new_run_id()))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await store.aclose()
