"""The file store never follows a link planted in its directory (issue 24, finding 3).

Each plant points out of the store at a file or folder the worker's user can write; each
test checks that the outside stays as it was, that the error names the path inside the
store, and that no error quotes what the outside file holds.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest
from plait_durable import CorruptCheckpointError, list_runs
from plait_stores import FileCheckpointStore
from plait_testing.stores import make_checkpoint, new_run_id

pytestmark = pytest.mark.anyio

SECRET = b"SECRET-FIRST-LINE\nrest of the secret\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """An outside folder holding one secret file."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret").write_bytes(SECRET)
    return folder


def _open_and_close_writer(fifo: Path) -> None:
    with contextlib.suppress(OSError):  # no reader waiting: nothing to release
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert (outside / "secret").read_bytes() == SECRET


def _names(error: pytest.ExceptionInfo[CorruptCheckpointError], inside: str) -> None:
    message = str(error.value)
    assert repr(inside) in message, message
    assert "symbolic link" in message, message
    assert "SECRET" not in message, message


async def test_a_lease_file_that_is_a_link_is_refused_and_not_written(
    tmp_path: Path, outside: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    (tmp_path / "store" / "leases").mkdir(parents=True)
    (tmp_path / "store" / "leases" / run_id).symlink_to(outside / "secret")
    with pytest.raises(CorruptCheckpointError) as caught:
        await store.acquire_lease(run_id, ttl=30)
    _names(caught, f"leases/{run_id}")
    _untouched(outside)
    await store.aclose()


async def test_a_lease_file_that_is_a_hard_link_is_refused_and_not_written(
    tmp_path: Path, outside: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    (tmp_path / "store" / "leases").mkdir(parents=True)
    os.link(outside / "secret", tmp_path / "store" / "leases" / run_id)
    with pytest.raises(CorruptCheckpointError, match="a hard link") as caught:
        await store.acquire_lease(run_id, ttl=30)
    assert repr(f"leases/{run_id}") in str(caught.value)
    _untouched(outside)
    await store.aclose()


async def test_an_id_entry_that_is_a_link_is_refused_and_never_quoted(
    tmp_path: Path, outside: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    checkpoint = make_checkpoint(new_run_id())
    await store.save(checkpoint)
    entry = tmp_path / "store" / "ids" / checkpoint.checkpoint_id
    entry.unlink()
    entry.symlink_to(outside / "secret")
    for attempt in (store.load, store.delete):
        with pytest.raises(CorruptCheckpointError) as caught:
            await attempt(checkpoint.checkpoint_id)
        _names(caught, f"ids/{checkpoint.checkpoint_id}")
    with pytest.raises(CorruptCheckpointError) as caught:
        await store.save(checkpoint)
    _names(caught, f"ids/{checkpoint.checkpoint_id}")
    # a fresh process's cleanup leaves the link alone (the operations above refuse it)
    assert FileCheckpointStore(tmp_path / "store", stale_after=0).cleanup() == 0
    assert entry.is_symlink()
    _untouched(outside)
    await store.aclose()


async def test_a_run_directory_that_is_a_link_is_refused_and_never_emptied(
    tmp_path: Path, outside: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    # a checkpoint-shaped file in the outside folder, so a walk that followed the link
    # would find something to list, decode, prune or delete
    decoy = make_checkpoint(run_id)
    await store.save(decoy)
    run_dir = tmp_path / "store" / "runs" / run_id
    (ckpt_name,) = os.listdir(run_dir)
    (outside / ckpt_name).write_bytes((run_dir / ckpt_name).read_bytes())
    (run_dir / ckpt_name).unlink()
    run_dir.rmdir()
    run_dir.symlink_to(outside, target_is_directory=True)
    attempts = [
        store.list(run_id),
        store.latest(run_id),
        store.load(decoy.checkpoint_id),
        store.delete(decoy.checkpoint_id),
        store.prune(run_id, keep_last=0),
        store.delete_run(run_id),
        store.save(make_checkpoint(run_id)),
    ]
    for attempt in attempts:
        with pytest.raises(CorruptCheckpointError) as caught:
            await attempt
        _names(caught, f"runs/{run_id}")
    (listed,) = await store.runs()  # listed as corrupt, never followed
    assert listed.status == "corrupt" and repr(f"runs/{run_id}") in (listed.error or "")
    assert sorted(os.listdir(outside)) == sorted([ckpt_name, "secret"])
    assert (outside / "secret").read_bytes() == SECRET
    FileCheckpointStore(tmp_path / "store", stale_after=0).cleanup()  # never descends
    assert sorted(os.listdir(outside)) == sorted([ckpt_name, "secret"])
    assert (tmp_path / "store" / "runs" / run_id).is_symlink()
    await store.aclose()


async def test_a_checkpoint_file_that_is_a_link_is_refused_and_left_outside(
    tmp_path: Path, outside: Path
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    checkpoint = make_checkpoint(run_id)
    await store.save(checkpoint)
    run_dir = tmp_path / "store" / "runs" / run_id
    (ckpt_name,) = os.listdir(run_dir)
    (run_dir / ckpt_name).unlink()
    (run_dir / ckpt_name).symlink_to(outside / "secret")
    inside = f"runs/{run_id}/{ckpt_name}"
    attempts = [
        store.load(checkpoint.checkpoint_id),
        store.list(run_id),
        store.latest(run_id),
        store.prune(run_id, keep_last=1),
    ]
    for attempt in attempts:
        with pytest.raises(CorruptCheckpointError) as caught:
            await attempt
        _names(caught, inside)
    (listed,) = await store.runs()
    assert listed.status == "corrupt" and repr(inside) in (listed.error or "")
    assert "SECRET" not in (listed.error or "")
    # deleting removes the link itself, never what it points at
    assert await store.delete_run(run_id) == 1
    assert not run_dir.exists()
    _untouched(outside)
    await store.aclose()


async def test_a_fifo_in_place_of_a_checkpoint_file_is_refused_without_hanging(
    tmp_path: Path,
) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    checkpoint = make_checkpoint(run_id)
    await store.save(checkpoint)
    run_dir = tmp_path / "store" / "runs" / run_id
    (ckpt_name,) = os.listdir(run_dir)
    (run_dir / ckpt_name).unlink()
    os.mkfifo(run_dir / ckpt_name)
    # Opening a FIFO to read without O_NONBLOCK waits for a writer forever. Hang guard:
    # after 10 s a writer comes and goes, so a store that waited reads an empty file.
    guard = threading.Timer(10.0, _open_and_close_writer, [run_dir / ckpt_name])
    guard.start()
    try:
        with pytest.raises(CorruptCheckpointError, match="not a regular file") as caught:
            await store.latest(run_id)
    finally:
        guard.cancel()
    assert repr(f"runs/{run_id}/{ckpt_name}") in str(caught.value)
    await store.aclose()


async def test_the_store_creates_its_directories_and_files_private(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path / "store")
    run_id = new_run_id()
    await store.save(make_checkpoint(run_id))
    await store.acquire_lease(run_id, ttl=30)
    root = tmp_path / "store"
    paths = [root, *root.rglob("*")]
    # root, runs, run, ids, leases and three files, the run index and its lock file
    assert len(paths) == 10
    for path in paths:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    await store.aclose()


async def test_a_run_index_that_is_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "store"
    store = FileCheckpointStore(root)
    await store.save(make_checkpoint(new_run_id()))
    (root / "runs.index").unlink()
    (outside / "planted").write_text("{}\n")
    (root / "runs.index").symlink_to(outside / "planted")
    with pytest.raises(CorruptCheckpointError, match="runs.index"):
        await list_runs(store)
    assert (outside / "planted").read_text() == "{}\n"


@pytest.mark.parametrize("folder", ["runs", "ids", "leases"])
async def test_a_top_level_folder_that_is_a_link_is_refused(
    tmp_path: Path, outside: Path, folder: str
) -> None:
    root = tmp_path / "store"
    root.mkdir()
    (root / folder).symlink_to(outside, target_is_directory=True)
    store = FileCheckpointStore(root)
    run_id = new_run_id()
    with pytest.raises(CorruptCheckpointError) as caught:
        if folder == "leases":
            await store.acquire_lease(run_id, ttl=30)
        else:
            await store.save(make_checkpoint(run_id))
    _names(caught, folder)
    _untouched(outside)
    await store.aclose()
