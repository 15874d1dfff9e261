"""The file store: the contract, atomic writes and what crashes leave behind."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import plait_stores._fileindex
import pytest
from plait_durable import (
    Checkpoint,
    CheckpointNotFoundError,
    CheckpointStore,
    CorruptCheckpointError,
    StoreUnavailableError,
    encode_checkpoint,
    list_runs,
)
from plait_stores import FileCheckpointStore
from plait_testing.conformance import CrashConformance, LeaseConformance
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


class TestFileStore(
    CheckpointStoreContract, EventJournalContract, CrashConformance, LeaseConformance
):
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
    # five checkpoints, five id entries, the run index and its lock file
    assert len(every_file) == 12, every_file
    assert {"runs.index", "runs.index.lock"} <= set(every_file)
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


# -- the run index (runs.index) ------------------------------------------------------------


async def _listed(store: FileCheckpointStore, **query: Any) -> list[tuple[str, str]]:
    page = await list_runs(store, **query)
    return [(r.run_id, r.status) for r in page.runs]


async def test_list_runs_pages_from_the_index_alone(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    ids = [new_run_id(f"r{i}") for i in range(5)]
    for run_id in ids:
        await store.save(make_checkpoint(run_id, 0))
        await store.save(make_checkpoint(run_id, 1, status="idle"))
    expected = [(r, "idle") for r in reversed(ids)]
    assert await _listed(store) == expected
    # the run directories gone: a page still comes, from runs.index alone
    (tmp_path / "runs").rename(tmp_path / "elsewhere")
    other = FileCheckpointStore(tmp_path)  # a new process's view reads the whole log
    assert await _listed(other) == expected
    page = await list_runs(other, limit=2)
    assert [r.run_id for r in page.runs] == ids[::-1][:2] and page.next_cursor is not None
    rest = await list_runs(other, limit=10, cursor=page.next_cursor)
    assert [r.run_id for r in rest.runs] == ids[::-1][2:]


async def test_a_missing_or_damaged_index_is_rebuilt_and_never_trusted(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    first, second = new_run_id("a"), new_run_id("b")
    await store.save(make_checkpoint(first, 0, status="failed"))
    await store.save(make_checkpoint(second, 0))
    expected = [(second, "running"), (first, "failed")]
    assert await _listed(store) == expected
    index = tmp_path / "runs.index"
    index.unlink()
    assert await _listed(FileCheckpointStore(tmp_path)) == expected
    assert index.exists(), "the index was not rebuilt"
    for damage in (
        b"not json\n",
        b'{"s": 1, "row": [{"__class__": "os.system"}], "full": true}\n',
        b'{"s": 1, "row": ["x", null, "idle", "1", 0, null, 0, 0, null, null], "full": true}\n',
        b'{"s": true, "gone": "x"}\n',
    ):
        with index.open("ab") as file:
            file.write(damage)
        assert await _listed(FileCheckpointStore(tmp_path)) == expected, damage
        assert damage not in index.read_bytes()


async def test_runs_written_before_the_index_are_indexed_on_the_next_save(
    tmp_path: Path,
) -> None:
    store = FileCheckpointStore(tmp_path)
    old = new_run_id("old")
    await store.save(make_checkpoint(old, 0, status="idle"))
    (tmp_path / "runs.index").unlink()  # as a directory written by an older plait-stores
    new = new_run_id("new")
    await FileCheckpointStore(tmp_path).save(make_checkpoint(new, 0))
    assert await _listed(FileCheckpointStore(tmp_path)) == [(new, "running"), (old, "idle")]


async def test_deletes_and_prunes_update_the_index(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id("d")
    kept = make_checkpoint(run_id, 0)
    last = make_checkpoint(run_id, 1, status="failed")
    await store.save(kept)
    await store.save(last)
    assert await _listed(store) == [(run_id, "failed")]
    await store.delete(last.checkpoint_id)
    assert await _listed(store) == [(run_id, "running")]
    await store.delete_run(run_id)
    assert await _listed(store) == []
    assert await _listed(FileCheckpointStore(tmp_path)) == []


async def test_the_index_log_is_compacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plait_stores._fileindex, "COMPACT_SLACK", 20)
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id("busy")
    parent = None
    for superstep in range(40):
        checkpoint = make_checkpoint(run_id, superstep, parent_id=parent)
        parent = checkpoint.checkpoint_id
        await store.save(checkpoint)
    await list_runs(store)  # reading a long log compacts it
    lines = (tmp_path / "runs.index").read_bytes().splitlines()
    assert len(lines) < 10, len(lines)
    (summary,) = (await list_runs(FileCheckpointStore(tmp_path))).runs
    assert summary.superstep == 39


async def test_a_rebuilt_index_pages_runs_saved_at_the_same_time(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    ids = [new_run_id(f"same{i}") for i in range(5)]
    for run_id in ids:
        checkpoint = attrs.evolve(make_checkpoint(run_id), created_at=1_700_000_000.0)
        await store.save(checkpoint)
    (tmp_path / "runs.index").unlink()
    fresh = FileCheckpointStore(tmp_path)
    seen: list[str] = []
    cursor = None
    while True:
        page = await list_runs(fresh, limit=2, cursor=cursor)
        seen.extend(r.run_id for r in page.runs)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == sorted(ids) and len(seen) == 5


async def test_processes_saving_at_once_all_reach_the_index(tmp_path: Path) -> None:
    import sys

    import anyio

    script = (
        "import anyio, sys\n"
        "from plait_stores import FileCheckpointStore\n"
        "from plait_testing.stores import make_checkpoint\n"
        "async def main():\n"
        "    store = FileCheckpointStore(sys.argv[1])\n"
        "    for i in range(20):\n"
        "        await store.save(make_checkpoint(f'{sys.argv[2]}-{i}'))\n"
        "anyio.run(main)\n"
    )
    codes: list[int] = []

    async def write(label: str) -> None:
        done = await anyio.run_process(
            [sys.executable, "-c", script, str(tmp_path), label], check=False
        )
        codes.append(done.returncode)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tasks:
            for n in range(3):
                tasks.start_soon(write, f"p{n}")
    assert codes == [0, 0, 0]
    page = await list_runs(FileCheckpointStore(tmp_path), limit=100)
    assert len({r.run_id for r in page.runs}) == 60, "a save's index line was lost"
