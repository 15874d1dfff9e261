"""The file store's blob packs: what a save writes, what a crash or damage leaves, what
prune keeps, and the one-file-per-blob layout of earlier releases, still read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import plait_stores._file
import pytest
from plait_durable import (
    BlobWriter,
    Checkpoint,
    CorruptCheckpointError,
    blob_hash,
    blob_refs,
    externalize_state,
    load_blob,
    resolve_state,
)
from plait_stores import FileCheckpointStore
from plait_stores._filepack import (
    MERGE_LIMIT,
    encode_pack,
    merge_plan,
    pack_seq,
    parse_index,
    read_blobs,
)
from plait_testing.stores import make_checkpoint, new_run_id

pytestmark = pytest.mark.anyio


def _item(i: int) -> str:
    return f"item {i}: " + "lorem ipsum " * 40  # above the blob threshold: a blob each


def _state(items: int) -> dict[str, Any]:
    return {
        "kind": "full",
        "pending": {},
        "router_state": {},
        "requests": [],
        "executor_state": {},
        "shared": {"transcript": [_item(i) for i in range(items)]},
        "outputs": [],
        "visits": {},
    }


async def _grow(
    store: FileCheckpointStore, run_id: str, steps: int, writer: BlobWriter
) -> list[Checkpoint]:
    """``steps`` full checkpoints of a transcript growing by one item each, with blobs."""
    saved = []
    for step in range(steps):
        state = externalize_state(_state(step + 1), writer)
        checkpoint = make_checkpoint(run_id, step, state=state)
        await store.save(checkpoint, blobs=writer.take_new())
        writer.settle()
        saved.append(checkpoint)
    return saved


def _blob_dir(root: Path) -> Path:
    (run_dir,) = (root / "blobs").iterdir()
    return run_dir


def _packs(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(_blob_dir(root)) if pack_seq(n) is not None)


async def _resolved(store: FileCheckpointStore, checkpoint: Checkpoint) -> Any:
    return await resolve_state(
        dict(checkpoint.state), store=store, run_id=checkpoint.run_id, where="here"
    )


def test_a_pack_round_trips_and_a_damaged_one_holds_nothing(tmp_path: Path) -> None:
    blobs = {blob_hash(data): data for data in (b'"one"', b"[1,2]", bytes(range(256)))}
    path = tmp_path / "p.pack"
    path.write_bytes(encode_pack(blobs))
    fd = os.open(path, os.O_RDONLY)
    try:
        index = parse_index(fd, path.stat().st_size)
        assert index is not None and set(index) == set(blobs)
        assert read_blobs(fd, index, [*blobs, blob_hash(b"absent")]) == blobs
        assert read_blobs(fd, index, sorted(blobs)[:1]) == {
            sorted(blobs)[0]: blobs[sorted(blobs)[0]]
        }
    finally:
        os.close(fd)
    # a flipped byte in the index fails its CRC-32: the pack holds nothing
    data = bytearray(path.read_bytes())
    data[len(b"PLAITPACK1\n") + 8 + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert parse_index(fd, path.stat().st_size) is None
    finally:
        os.close(fd)
    # a truncated pack keeps the entries whose bytes are all there
    whole = encode_pack(blobs)
    path.write_bytes(whole[:-1])
    fd = os.open(path, os.O_RDONLY)
    try:
        index = parse_index(fd, path.stat().st_size)
        assert index is not None and len(index) == len(blobs) - 1
    finally:
        os.close(fd)


def test_merging_keeps_the_number_of_packs_logarithmic() -> None:
    sizes: list[int] = []
    rewritten = 0
    for _ in range(1000):
        count = merge_plan(sizes, 100)
        merged = sum(sizes[len(sizes) - count :]) if count else 0
        rewritten += merged
        sizes = [*sizes[: len(sizes) - count], merged + 100]
        assert len(sizes) <= 11  # log2(1000) + 1
    assert rewritten <= 100 * 1000 * 11  # each byte rewritten about log2(n) times
    assert merge_plan([MERGE_LIMIT], 100) == 0  # a pack at the limit is never rewritten


async def test_a_save_writes_one_pack_and_resume_reads_a_few(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    saved = await _grow(store, run_id, 64, BlobWriter())
    names = os.listdir(_blob_dir(tmp_path))
    assert not [n for n in names if pack_seq(n) is None]  # packs only, no leftovers
    assert len(names) <= 7  # log2(64) + 1
    assert (await _resolved(store, saved[-1]))["shared"]["transcript"] == [
        _item(i) for i in range(64)
    ]
    hashes = await store.blob_hashes(run_id)
    assert len(hashes) == len(set(hashes)) and len(hashes) >= 64
    assert set(await store.get_blobs(run_id, hashes)) == set(hashes)


async def test_a_torn_pack_leaves_no_checkpoint_and_the_next_save_writes_its_blobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileCheckpointStore(tmp_path, stale_after=0.0)
    run_id = new_run_id()
    writer = BlobWriter()
    kept = await _grow(store, run_id, 3, writer)
    real_write = plait_stores._file._write_atomic

    def torn(dir_fd: int, name: str, data: bytes) -> None:
        if pack_seq(name) is not None:  # killed half-way through the pack's bytes
            fd = os.open(".plait-torn.tmp", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=dir_fd)
            os.write(fd, data[: len(data) // 2])
            os.close(fd)
            raise OSError("killed")
        real_write(dir_fd, name, data)

    monkeypatch.setattr(plait_stores._file, "_write_atomic", torn)
    state = externalize_state(_state(4), writer)
    lost = make_checkpoint(run_id, 3, state=state)
    blobs = writer.take_new()
    with pytest.raises(Exception, match="killed"):
        await store.save(lost, blobs=blobs)
    monkeypatch.setattr(plait_stores._file, "_write_atomic", real_write)
    # no checkpoint names the torn pack's blobs; readers ignore the temporary file
    assert [i.checkpoint_id for i in await store.list(run_id)] == [c.checkpoint_id for c in kept]
    assert (await _resolved(store, kept[-1]))["shared"]["transcript"] == [
        _item(i) for i in range(3)
    ]
    # the save again writes the blobs the torn pack held, and resolves
    await store.save(lost, blobs=blobs)
    assert (await _resolved(store, lost))["shared"]["transcript"] == [_item(i) for i in range(4)]
    # prune removes the torn leftover (stale at once here)
    await store.prune(run_id, keep_last=1)
    assert ".plait-torn.tmp" not in os.listdir(_blob_dir(tmp_path))


async def test_a_damaged_pack_is_a_corrupt_checkpoint_naming_the_hash(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    (checkpoint,) = await _grow(store, run_id, 1, BlobWriter())
    (pack,) = _packs(tmp_path)
    path = _blob_dir(tmp_path) / pack
    data = bytearray(path.read_bytes())
    data[len(b"PLAITPACK1\n") + 8 + 5] ^= 0xFF  # inside the index: its CRC-32 fails
    path.write_bytes(bytes(data))
    (digest,) = blob_refs(checkpoint.state)
    with pytest.raises(CorruptCheckpointError, match=digest):
        await _resolved(store, checkpoint)


async def test_prune_rewrites_packs_and_leaves_no_unreferenced_blob(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    writer = BlobWriter()
    await _grow(store, run_id, 10, writer)
    # a checkpoint with values of its own, then one without them: prune drops those
    other = externalize_state(
        {**_state(10), "shared": {"x": [_item(100 + i) for i in range(8)]}}, writer
    )
    await store.save(make_checkpoint(run_id, 10, state=other), blobs=writer.take_new())
    writer.settle()
    last = externalize_state(_state(10), BlobWriter())
    kept = make_checkpoint(run_id, 11, state=last)
    await store.save(kept)
    before = set(await store.blob_hashes(run_id))
    packs_before = set(_packs(tmp_path))
    await store.prune(run_id, keep_last=1)
    left = set(await store.blob_hashes(run_id))
    remaining = [await store.load(i.checkpoint_id) for i in await store.list(run_id)]
    reached = await _reached(store, run_id, remaining)
    assert left == reached < before  # nothing unreferenced is left, nothing needed went
    packs_after = set(_packs(tmp_path))
    assert len(packs_after) == 1 and not packs_after & packs_before  # rewritten
    assert (await _resolved(store, kept))["shared"]["transcript"] == [_item(i) for i in range(10)]
    await store.delete_run(run_id)
    assert not (tmp_path / "blobs" / _blob_dir_name(run_id)).exists()


async def _reached(
    store: FileCheckpointStore, run_id: str, checkpoints: list[Checkpoint]
) -> set[str]:
    """The hashes ``checkpoints`` reach through the run's blobs."""
    reached: set[str] = set()
    frontier = set().union(*(blob_refs(c.state) for c in checkpoints))
    while frontier:
        got = await store.get_blobs(run_id, sorted(frontier))
        reached |= frontier
        frontier = set().union(*(blob_refs(load_blob(data)) for data in got.values()))
        frontier -= reached
    return reached


def _blob_dir_name(run_id: str) -> str:
    return plait_stores._file._fs_name(run_id, "run id")


async def test_blobs_in_files_of_their_own_are_read_kept_and_swept(tmp_path: Path) -> None:
    """Stores written before packs hold ``blobs/<run>/<hash>``, a file per blob."""
    store = FileCheckpointStore(tmp_path)
    run_id = new_run_id()
    writer = BlobWriter()
    state = externalize_state(_state(4), writer)
    old = make_checkpoint(run_id, 0, state=state)
    await store.save(old)  # the checkpoint alone; its blobs as the old layout kept them
    folder = tmp_path / "blobs" / _blob_dir_name(run_id)
    folder.mkdir(parents=True)
    old_blobs = writer.take_new()
    writer.settle()
    for digest, data in old_blobs.items():
        (folder / digest).write_bytes(data)
    orphan = f'"{_item(999)}"'.encode()  # a blob nothing references (a killed save's)
    (folder / blob_hash(orphan)).write_bytes(orphan)
    assert (await _resolved(store, old))["shared"]["transcript"] == [_item(i) for i in range(4)]
    assert set(await store.blob_hashes(run_id)) == {*old_blobs, blob_hash(orphan)}
    # a new save writes only what the files lack, in a pack
    new_state = externalize_state(_state(6), writer)
    new = make_checkpoint(run_id, 1, state=new_state)
    await store.save(new, blobs={**old_blobs, **writer.take_new()})
    (pack,) = _packs(tmp_path)
    fd = os.open(folder / pack, os.O_RDONLY)
    try:
        index = parse_index(fd, (folder / pack).stat().st_size)
    finally:
        os.close(fd)
    assert index is not None and index and not set(index) & set(old_blobs)
    assert (await _resolved(store, new))["shared"]["transcript"] == [_item(i) for i in range(6)]
    # prune sweeps the file nothing references and keeps those the checkpoints reach
    await store.prune(run_id, keep_last=1)
    assert sorted(os.listdir(folder)) == sorted({*old_blobs, pack})
    await store.delete(old.checkpoint_id)
    assert (await _resolved(store, new))["shared"]["transcript"] == [_item(i) for i in range(6)]
    await store.delete_run(run_id)
    assert not folder.exists()
