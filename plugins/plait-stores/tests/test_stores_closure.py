"""A blob tree read in one call of the store's worker thread (``get_blob_closure`` of the
file and SQLite stores, :func:`plait_stores._common.blob_closure`): what it walks, what
it leaves to the reader, and that the reader still rebuilds and checks everything."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
from plait import CorruptCheckpointError
from plait_durable import blob_hash, resolve_state
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
