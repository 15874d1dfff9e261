"""A blob tree read in one call of the store's worker thread (``get_blob_closure`` of the
file and SQLite stores, :func:`plait_stores._common.blob_closure`): what it walks, what
it leaves to the reader, and that the reader still rebuilds and checks everything."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import CheckpointNotFoundError, CorruptCheckpointError, blob_hash, resolve_state
from plait_durable._blobs import pack_blob
from plait_stores import FileCheckpointStore, SqliteCheckpointStore
from plait_stores._common import WALK_LIMIT, blob_closure
from plait_testing.stores import make_checkpoint, new_run_id

pytestmark = pytest.mark.anyio


def _blob(value: str) -> tuple[str, bytes]:
    data = value.encode()
    return blob_hash(data), data


def _ref(digest: str) -> str:
    return f'{{"__plait__":"blob","h":"{digest}"}}'


def test_blob_closure_walks_a_level_at_a_time_and_never_a_large_blob() -> None:
    leaf_hash, leaf = _blob('"' + "leaf " * 100 + '"')
    below_big_hash, below_big = _blob('"' + "under the big one " * 20 + '"')
    # a large blob naming another: returned, not parsed (compressed or not)
    big_hash, big = _blob(f'[{_ref(below_big_hash)},"{"x" * WALK_LIMIT}"]')
    big_packed_hash, big_packed = _blob(f'[{_ref(below_big_hash)},"{"y" * WALK_LIMIT}"]')
    node_hash, node = _blob(f"[{_ref(leaf_hash)},{_ref(big_hash)},{_ref(big_packed_hash)}]")
    missing = blob_hash(b'"absent"')
    top_hash, top = _blob(f"[{_ref(node_hash)},{_ref(missing)},{_ref(node_hash)}]")
    garbage_hash = blob_hash(b"garbage")
    held = {
        top_hash: top,
        node_hash: node,
        leaf_hash: leaf,
        big_hash: big,
        big_packed_hash: pack_blob(big_packed),
        below_big_hash: below_big,
        garbage_hash: b"\x00not json",
    }
    asked: list[list[str]] = []

    def read(hashes: Collection[str]) -> dict[str, bytes]:
        asked.append(sorted(hashes))
        return {digest: held[digest] for digest in hashes if digest in held}

    got = blob_closure(read, [top_hash, garbage_hash])
    assert set(got) == {top_hash, garbage_hash, node_hash, leaf_hash, big_hash, big_packed_hash}
    assert below_big_hash not in got  # what a large blob reaches is left to the reader
    # a level a call, each hash asked once, the missing one too
    assert asked == [
        sorted([top_hash, garbage_hash]),
        sorted([node_hash, missing]),
        sorted([leaf_hash, big_hash, big_packed_hash]),
    ]


@pytest.fixture(params=["file", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "file":
        opened: Any = FileCheckpointStore(tmp_path / "files")
    else:
        opened = SqliteCheckpointStore(tmp_path / "runs.db")
    yield opened
    await opened.aclose()


async def test_the_reader_fetches_what_a_closure_leaves_out_and_checks_it(store: Any) -> None:
    run_id = new_run_id()
    text = "under a large dict " * 30
    child_hash, child = _blob(f'"{text}"')
    large = '{"big":"' + "z" * WALK_LIMIT + f'","more":{_ref(child_hash)}}}'
    large_hash, large_data = _blob(large)
    state = {"kind": "full", "shared": {"k": {"__plait__": "blob", "h": large_hash}}}
    checkpoint = make_checkpoint(run_id, state=state)
    await store.save(checkpoint, blobs={large_hash: pack_blob(large_data), child_hash: child})
    got = await store.get_blob_closure(run_id, [large_hash])
    assert set(got) == {large_hash}  # the large blob is not walked in the store's thread
    resolved = await resolve_state(dict(state), store=store, run_id=run_id, where="here")
    assert resolved["shared"]["k"] == {"big": "z" * WALK_LIMIT, "more": text}

    # a blob left out and missing is still named, with the checkpoint
    other = new_run_id()
    await store.save(make_checkpoint(other, state=state), blobs={large_hash: large_data})
    with pytest.raises(CorruptCheckpointError, match=f"here is corrupt: blob {child_hash}"):
        await resolve_state(dict(state), store=store, run_id=other, where="here")


async def test_load_and_latest_with_blobs_read_a_checkpoint_and_its_tree_in_one_call(
    store: Any,
) -> None:
    run_id = new_run_id()
    leaf_hash, leaf = _blob('"' + "a leaf of the tree " * 20 + '"')
    node_hash, node = _blob(f'[{_ref(leaf_hash)},"beside it"]')
    state = {"kind": "full", "shared": {"k": {"__plait__": "blob", "h": node_hash}}}
    checkpoint = make_checkpoint(run_id, state=state)
    await store.save(checkpoint, blobs={node_hash: node, leaf_hash: pack_blob(leaf)})
    hops = _count_hops(store)
    loaded, blobs = await store.load_with_blobs(checkpoint.checkpoint_id)
    assert loaded == await store.load(checkpoint.checkpoint_id)
    assert dict(blobs) == {node_hash: node, leaf_hash: pack_blob(leaf)}
    latest, blobs = await store.latest_with_blobs(run_id)
    assert latest == loaded and set(blobs) == {node_hash, leaf_hash}
    assert hops == [1, 1, 1]  # load_with_blobs, load, latest_with_blobs: one hop each
    # a run without checkpoints, a checkpoint without references, an unknown id
    assert await store.latest_with_blobs(new_run_id()) == (None, {})
    plain = make_checkpoint(run_id, 1, state={"kind": "full", "shared": {"k": 1}})
    await store.save(plain)
    assert await store.load_with_blobs(plain.checkpoint_id) == (plain, {})
    with pytest.raises(CheckpointNotFoundError):
        await store.load_with_blobs("no-such-checkpoint")


def _count_hops(store: Any) -> list[int]:
    """Count the calls of the store's worker thread (one entry per store call)."""
    hops: list[int] = []
    run = store._run

    async def counted(*args: Any) -> Any:
        hops.append(1)
        return await run(*args)

    store._run = counted
    return hops


@executor(id="grow")
async def _grow(items: list[str], ctx: WorkflowContext[list[str], int]) -> None:
    grown = [*items, f"item {len(items)}: " + "words " * 60]
    if len(grown) >= 24:
        await ctx.yield_output(len(grown))
    else:
        await ctx.send_message(grown)


async def test_a_resume_reads_its_checkpoint_and_values_in_the_hops_an_inline_one_takes(
    store: Any,
) -> None:
    builder = WorkflowBuilder("grow", max_supersteps=30).add_executor(_grow)
    wf = builder.add_edge(_grow, _grow).set_start(_grow).build()
    result = await wf.run([], checkpoint=store)
    target = (await store.list(result.run_id))[-2]
    base = target.base_id
    calls: list[str] = []
    names = ("load", "latest", "get_blobs", "get_blob_closure")
    for name in (*names, "load_with_blobs", "latest_with_blobs"):
        method = getattr(store, name)

        async def recorded(*args: Any, _name: str = name, _method: Any = method) -> Any:
            calls.append(f"{_name}(base)" if args == (base,) else _name)
            return await _method(*args)

        setattr(store, name, recorded)
    again = await wf.resume(target.checkpoint_id, checkpoint=store)
    assert again.outputs == [24]
    # the checkpoint and its whole tree in one call each (no run is named by the id), and
    # a delta's base as any checkpoint: its blobs are the delta's, read already
    assert calls == ["latest_with_blobs", "load_with_blobs", *(["load(base)"] if base else [])]


async def test_a_blob_read_with_the_checkpoint_is_checked_like_any_other(store: Any) -> None:
    run_id = new_run_id()
    digest, _ = _blob('"' + "the value as written " * 20 + '"')
    state = {"kind": "full", "shared": {"k": {"__plait__": "blob", "h": digest}}}
    checkpoint = make_checkpoint(run_id, state=state)
    await store.save(checkpoint, blobs={digest: b'"' + b"tampered " * 40 + b'"'})
    loaded, blobs = await store.load_with_blobs(checkpoint.checkpoint_id)
    assert set(blobs) == {digest}
    where = f"run {run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
    with pytest.raises(CorruptCheckpointError, match=f"{where} is corrupt: blob {digest} does"):
        await resolve_state(loaded.state, store=store, run_id=run_id, where=where, read=blobs)
