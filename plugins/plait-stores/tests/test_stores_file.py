"""The file store: the contract, atomic writes and what crashes leave behind."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from plait import CheckpointNotFoundError, CorruptCheckpointError, StoreUnavailableError
from plait.spi import Checkpoint, CheckpointStore, encode_checkpoint
from plait_stores import FileCheckpointStore
from plait_testing.stores import (
    CheckpointStoreContract,
    EventJournalContract,
    flip_byte,
    make_checkpoint,
    new_run_id,
)


def _file_of(store: FileCheckpointStore, checkpoint_id: str) -> Path:
    (path,) = store.directory.glob(f"runs/*/*-{checkpoint_id}.ckpt")
    return path


def _names_of_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file())


class TestFileStore(CheckpointStoreContract, EventJournalContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[FileCheckpointStore]:
        store = FileCheckpointStore.from_url(f"file://{tmp_path / 'checkpoints'}")
        yield store
        await store.aclose()

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        assert isinstance(store, FileCheckpointStore)
        path = _file_of(store, checkpoint_id)
        path.write_bytes(flip_byte(path.read_bytes()))

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        assert isinstance(store, FileCheckpointStore)
        return FileCheckpointStore(store.directory)


pytestmark = pytest.mark.anyio


async def test_a_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    for superstep in range(5):
        await store.save(make_checkpoint(run_id, superstep))
    every_file = _names_of_files(tmp_path)
    assert len(every_file) == 10, every_file  # five checkpoints, five id entries
    assert not [name for name in every_file if name.startswith(".") or "tmp" in name]


async def test_file_names_sort_in_insertion_order(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    saved = [make_checkpoint(run_id, s) for s in (3, 1, 2)]
    for checkpoint in saved:
        await store.save(checkpoint)
    (run_dir,) = (tmp_path / "runs").iterdir()
    names = sorted(os.listdir(run_dir))
    assert names == [
        f"{seq:012d}-{c.superstep:010d}-{c.checkpoint_id}.ckpt"
        for seq, c in enumerate(saved, start=1)
    ]


async def test_a_truncated_file_is_corrupt(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    first, second = make_checkpoint(run_id, 0), make_checkpoint(run_id, 1)
    await store.save(first)
    await store.save(second)
    path = _file_of(store, second.checkpoint_id)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(CorruptCheckpointError, match=second.checkpoint_id) as caught:
        await store.latest(run_id)
    assert run_id in str(caught.value)
    assert await store.load(first.checkpoint_id) == first


async def test_leftovers_of_a_crashed_save_are_ignored(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    kept = make_checkpoint(run_id, 0)
    await store.save(kept)
    run_dir = next((tmp_path / "runs").iterdir())
    # A crash before the rename leaves a temp file; one after the id entry but before the
    # checkpoint's rename leaves an id entry pointing at nothing.
    (run_dir / ".plait-crashed.tmp").write_bytes(b"half a checkpoint")
    (tmp_path / "ids" / "lost").write_bytes(
        f"{run_dir.name}/000000000002-0000000000-lost.ckpt".encode()
    )
    assert [i.checkpoint_id for i in await store.list(run_id)] == [kept.checkpoint_id]
    assert await store.latest(run_id) == kept
    with pytest.raises(CheckpointNotFoundError):
        await store.load("lost")
    retried = make_checkpoint(run_id, 1, checkpoint_id="lost")
    await store.save(retried)  # the dangling entry does not block a retry
    assert await store.load("lost") == retried
    assert await store.delete_run(run_id) == 2
    assert not (tmp_path / "runs" / run_dir.name).exists()


def _rewrite_as_before_base_id(store: FileCheckpointStore, checkpoint: Checkpoint) -> None:
    """Rewrite a saved checkpoint's file header as plait-stores wrote it before headers had
    base_id (the body, the checkpoint's own encoding, is the current format's)."""
    path = _file_of(store, checkpoint.checkpoint_id)
    header_line = path.read_bytes().split(b"\n", 1)[0]
    header = json.loads(header_line[len(b"PLAITFILE1 ") :])
    del header["base_id"]
    body = encode_checkpoint(checkpoint)
    path.write_bytes(b"PLAITFILE1 " + json.dumps(header).encode() + b"\n" + body)


async def test_files_written_before_base_id_list_and_prune_by_their_base(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    c1 = make_checkpoint(run_id, 0)
    c2 = make_checkpoint(run_id, 1, parent_id=c1.checkpoint_id, base_id=c1.checkpoint_id)
    c3 = make_checkpoint(run_id, 2, parent_id=c2.checkpoint_id, base_id=c1.checkpoint_id)
    for checkpoint in (c1, c2, c3):
        await store.save(checkpoint)
        _rewrite_as_before_base_id(store, checkpoint)
        header = _file_of(store, checkpoint.checkpoint_id).read_bytes().split(b"\n", 1)[0]
        assert b"base_id" not in header
    assert list(await store.list(run_id)) == [c1.info, c2.info, c3.info]
    assert await store.prune(run_id, keep_last=1) == 1
    assert [i.checkpoint_id for i in await store.list(run_id)] == [
        c1.checkpoint_id,
        c3.checkpoint_id,
    ]
    assert await store.latest(run_id) == c3
    # an old file whose body is damaged lists without a base rather than failing
    path = _file_of(store, c3.checkpoint_id)
    path.write_bytes(flip_byte(path.read_bytes()))
    assert [i.base_id for i in await store.list(run_id)] == [None, None]


async def test_unusable_directory_is_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    store = FileCheckpointStore.from_url(f"file://{tmp_path / 'a-file' / 'checkpoints'}")
    with pytest.raises(StoreUnavailableError, match="a-file"):
        await store.save(make_checkpoint(new_run_id()))


def test_bad_urls() -> None:
    with pytest.raises(ValueError, match="file://DIR"):
        FileCheckpointStore.from_url("file://")
    with pytest.raises(ValueError, match="unknown option"):
        FileCheckpointStore.from_url("file:///tmp/x?fsync=no")
    assert FileCheckpointStore.from_url("file:///tmp/x%20y").directory == Path("/tmp/x y")
