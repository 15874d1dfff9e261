"""Content-addressed checkpoint values (plait_durable._blobs): the rewrite round-trips any JSON,
shares what is unchanged, and refuses stored data that does not add up."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Collection, Mapping
from functools import partial
from typing import Any

import anyio
import plait_durable._blobs
import pytest
import zstandard
from hypothesis import given, settings, strategies as st
from plait_durable import CorruptCheckpointError
from plait_durable._blobs import (
    BUNDLE,
    BUNDLE_ITEM,
    THRESHOLD,
    BlobWriter,
    MapTree,
    blob_hash,
    blob_refs,
    child_refs,
    externalize_state,
    has_blobs,
    load_blob,
    pack_blob,
    resolve_state,
    unpack_blob,
    unreferenced,
)


class DictBlobs:
    """Blobs in a dict, recording every ``get_blobs`` call."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.asked: list[list[str]] = []

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        self.asked.append(sorted(hashes))
        return {h: self.blobs[h] for h in hashes if h in self.blobs}


def _state(value: Any) -> dict[str, Any]:
    return {"kind": "full", "pending": {"a": [value]}, "shared": {"k": value}, "outputs": []}


def _round_trip(value: Any, writer: BlobWriter, store: DictBlobs) -> tuple[Any, dict[str, Any]]:
    stored = externalize_state(_state(value), writer)
    store.blobs.update(writer.take_new())
    writer.settle()
    back = anyio.run(
        lambda: resolve_state(json.loads(json.dumps(stored)), store=store, run_id="r", where="w")
    )
    return stored, back


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=8), inner, max_size=12)
    ),
    max_leaves=200,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(0, 400))
def test_any_json_value_comes_back_as_it_was(value: Any, padding: int) -> None:
    big = {"pad": "p" * padding, "value": value, "list": [value, "q" * padding] * 3}
    _stored, back = _round_trip(big, BlobWriter(), DictBlobs())
    assert back == _state(big)
    assert json.dumps(back["shared"]["k"]) == json.dumps(big)  # key order too


def test_small_values_stay_inline() -> None:
    writer = BlobWriter()
    value = {"n": 1, "text": "short", "items": [1, 2, 3]}
    assert writer.externalize(value) == value
    assert writer.take_new() == {}


def test_long_text_growing_at_its_end_rewrites_its_last_pieces_only() -> None:
    writer, store = BlobWriter(), DictBlobs()
    text = ""
    written = []
    for step in range(40):
        text += f"[{step}]" + "z" * 500
        stored, back = _round_trip(text, writer, store)
        assert back["shared"]["k"] == text
        written.append(sum(len(unpack_blob(b)) for b in store.blobs.values()))
    growth = [b - a for a, b in zip(written, written[1:])]
    assert max(growth[10:]) < 4 * 1024  # about one piece and a node, never the whole text
    assert stored["shared"]["k"]["__plait__"] == "text"


def test_a_list_that_grows_costs_about_its_new_item() -> None:
    writer, store = BlobWriter(), DictBlobs()
    items: list[Any] = []
    totals = []
    for step in range(200):
        items = [*items, {"role": "assistant", "turn": step, "text": "w" * 400}]
        stored, back = _round_trip(items, writer, store)
        totals.append(sum(len(unpack_blob(b)) for b in store.blobs.values()))
    steps = [b - a for a, b in zip(totals, totals[1:])]
    # the item (about 440 bytes) and, amortised, one node of references
    assert sum(steps[10:]) / len(steps[10:]) < 800
    # at a power of two, a node per level; when a node's items come to BUNDLE bytes, a bundle
    # of them (written once: the steps after it are small again)
    large = [size for size in steps[10:] if size >= 3000]
    assert len(large) <= 1 and all(size < 2 * BUNDLE for size in large)
    assert back["pending"]["a"][0] == items
    assert len(json.dumps(stored)) < 2000  # a checkpoint holds at most log2(n) peaks


def test_the_same_value_in_many_places_is_one_blob() -> None:
    writer = BlobWriter()
    value = "v" * 1000
    writer.externalize({"a": value, "b": [value, value], "c": {"d": value}})
    new = writer.take_new()
    assert [unpack_blob(b) for b in new.values()].count(json.dumps(value).encode()) == 1
    assert len(new) == 2  # the value, and the dict of its four references


def test_a_value_only_an_older_checkpoint_reached_is_written_again() -> None:
    writer = BlobWriter()
    writer.externalize("x" * 1000)
    writer.take_new()
    writer.settle()
    writer.externalize("y" * 1000)
    writer.take_new()
    writer.settle()
    # "x" only the checkpoint before last reached: a prune may have swept it since
    again = writer.externalize(["x" * 1000, "y" * 1000])
    assert [unpack_blob(b) for b in writer.take_new().values()] == [json.dumps("x" * 1000).encode()]
    assert len(blob_refs(again)) == 2


# -- a dict kept from checkpoint to checkpoint (executor states, visit counts) --------------


def _map_round_trip(tree: MapTree, writer: BlobWriter, store: DictBlobs) -> tuple[Any, int]:
    """``tree`` as a checkpoint holds it, read back; and what it cost (its JSON and the
    blobs it added)."""
    stored = tree.tree(writer)
    store.blobs.update(new := writer.take_new())
    writer.settle()
    back = anyio.run(partial(resolve_state, {"v": stored}, store=store, run_id="r", where="w"))
    return back["v"], len(json.dumps(stored)) + sum(len(b) for b in new.values())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([f"e{i}" for i in range(40)]),
            st.none()  # remove the key
            | st.integers(-5, 5)
            | st.text(max_size=3)
            | st.integers(60, 600).map(lambda n: {"v": "s" * n}),  # a blob
        ),
        min_size=1,
        max_size=120,
    ),
    st.integers(1, 12),
)
def test_a_map_tree_reads_back_as_the_dict_it_holds(ops: list[Any], every: int) -> None:
    tree, writer, store = MapTree(), BlobWriter(), DictBlobs()
    model: dict[str, Any] = {}
    for i, (key, value) in enumerate(ops):
        if value is None:  # remove
            tree.remove(key)
            model.pop(key, None)
        else:
            tree.set(key, value)
            model[key] = value
        if i % every == 0 or i == len(ops) - 1:
            back, _ = _map_round_trip(tree, writer, store)
            assert back == model and list(back) == list(model)  # the keys' order kept


def test_a_map_tree_that_changes_a_key_costs_about_that_key() -> None:
    tree, writer, store = MapTree(), BlobWriter(), DictBlobs()
    model = {f"executor{i}": {"seen": 1, "note": f"n{i}"} for i in range(1000)}
    for key, value in model.items():
        tree.set(key, value)
    back, first = _map_round_trip(tree, writer, store)
    assert back == model and first > 8_000  # (compressed)
    costs = []
    for step in range(50):
        key = f"executor{step * 17 % 1000}"
        model[key] = tree_value = {"seen": step + 2, "note": "changed"}
        tree.set(key, tree_value)
        back, cost = _map_round_trip(tree, writer, store)
        assert back == model
        costs.append(cost)
    # the changed item's leaf and the nodes above it (about 1 KiB each, compressed), and
    # the peaks' references: a fifth of the whole map (8.6 KB compressed, 30 KB of JSON)
    assert max(costs) < first / 5, (first, costs)


def _stored_with(blobs: dict[str, bytes], state: Any) -> Any:
    store = DictBlobs()
    store.blobs.update(blobs)
    return anyio.run(lambda: resolve_state(state, store=store, run_id="r", where="run 'r', cp"))


def test_a_missing_blob_names_the_checkpoint_and_the_hash() -> None:
    digest = blob_hash(b'"gone"')
    with pytest.raises(CorruptCheckpointError, match=f"run 'r', cp is corrupt: blob {digest}"):
        _stored_with({}, {"v": {"__plait__": "blob", "h": digest}})


def test_an_altered_blob_does_not_match_its_hash() -> None:
    digest = blob_hash(b'"original"')
    with pytest.raises(CorruptCheckpointError, match="does not match its hash"):
        _stored_with({digest: b'"altered"'}, {"v": {"__plait__": "blob", "h": digest}})


def test_a_blob_is_stored_compressed_when_that_pays_and_keyed_by_its_plain_json() -> None:
    writer = BlobWriter()
    text = " ".join(f"sentence {i} of a page about checkpoints." for i in range(60))
    stored = writer.externalize({"text": text, "n": 1})
    new = writer.take_new()
    plain = json.dumps(text).encode()
    # a Zstandard frame (its magic number first)
    assert new[blob_hash(plain)].startswith(b"\x28\xb5\x2f\xfd")
    assert len(new[blob_hash(plain)]) * 3 < len(plain)
    assert unpack_blob(new[blob_hash(plain)]) == plain
    store = DictBlobs()
    store.blobs.update(new)
    back = anyio.run(lambda: resolve_state({"v": stored}, store=store, run_id="r", where="w"))
    assert back == {"v": {"text": text, "n": 1}}
    # what compressing would not shrink is kept as it is
    noise = random.Random(0).randbytes(300)
    assert pack_blob(noise) == noise and pack_blob(b'"short"') == b'"short"'


def test_shared_state_that_gains_keys_costs_about_its_new_keys() -> None:
    writer, store = BlobWriter(), DictBlobs()
    shared: dict[str, Any] = {}
    sizes = []
    for step in range(60):
        shared = {**shared, f"steps.out/page[{step}]/gate@{step}": {"n": step, "v": "g" * 300}}
        state = {"kind": "full", "pending": {}, "shared": shared, "outputs": []}
        stored = externalize_state(state, writer)
        store.blobs.update(new := writer.take_new())
        writer.settle()
        sizes.append(len(json.dumps(stored)) + sum(len(unpack_blob(b)) for b in new.values()))
        back = anyio.run(partial(resolve_state, stored, store=store, run_id="r", where="w"))
        assert back == state and list(back["shared"]) == list(shared)  # order kept
    assert stored["shared"]["__plait__"] == "map"
    # the new key's value and key, and amortised a node: never the whole shared state
    assert max(sizes[20:]) < 4 * 1024 and sum(sizes[20:]) / 40 < 2 * 1024


@pytest.mark.parametrize("items", [[["a", 1], ["b"]], [["a", 1], [2, 2]], [["a", 1], ["a", 2]]])
def test_a_malformed_map_is_corrupt(items: list[Any]) -> None:
    with pytest.raises(CorruptCheckpointError, match="'map' structure"):
        _stored_with({}, {"v": {"__plait__": "map", "n": 2, "p": [items]}})


def _zstd(data: bytes, *, sized: bool = True) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=sized).compress(data)


def test_blobs_compressed_with_zlib_before_zstandard_still_load() -> None:
    leaf = json.dumps("w" * 3000).encode()
    digest = blob_hash(leaf)
    stored = zlib.compress(leaf)
    assert _stored_with({digest: stored}, {"v": {"__plait__": "blob", "h": digest}}) == {
        "v": "w" * 3000
    }
    assert load_blob(stored) == "w" * 3000


def test_blobs_stored_before_compression_still_load() -> None:
    # what a Plait without compression stored: the canonical JSON as it is
    inner = json.dumps(["k" * 300, "l" * 300]).encode()
    leaf = json.dumps("v" * 400).encode()
    outer = json.dumps([{"__plait__": "blob", "h": blob_hash(leaf)}, 1]).encode()
    blobs = {blob_hash(inner): inner, blob_hash(leaf): leaf, blob_hash(outer): outer}
    state = {"a": {"__plait__": "blob", "h": blob_hash(inner)}}
    state["b"] = {"__plait__": "blob", "h": blob_hash(outer)}
    assert _stored_with(blobs, state) == {"a": ["k" * 300, "l" * 300], "b": ["v" * 400, 1]}
    assert unreferenced([{"b": state["b"]}], blobs) == {blob_hash(inner)}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (zlib.compress(b'"' + b"0" * (1 << 22) + b'"'), "inflates to more than"),
        (zlib.compress(b'"' + b"a" * 5000 + b'"')[:-9], "truncated"),
        (zlib.compress(b'"' + b"a" * 5000 + b'"') + b"tail", "followed by others"),
        (b"x\x9cnot a zlib stream", "do not inflate"),
        (_zstd(b'"' + b"0" * (1 << 22) + b'"'), "inflates to more than"),
        (_zstd(b'"' + b"a" * 5000 + b'"')[:-9], "truncated"),
        (_zstd(b'"' + b"a" * 5000 + b'"') + b"tail", "followed by others"),
        (b"\x28\xb5\x2f\xfdnot a zstd frame", "do not inflate"),
        # a frame that does not state its size is not one this Plait wrote
        (_zstd(b'"' + b"a" * 5000 + b'"', sized=False), "does not state its size"),
    ],
)
def test_a_compressed_blob_that_does_not_inflate_within_bounds_is_corrupt(
    data: bytes, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plait_durable._blobs, "MAX_BLOB", 1 << 20)  # a bomb: 4 MiB from 4 KiB
    digest = blob_hash(b'"whatever it claims"')
    with pytest.raises(CorruptCheckpointError, match=f"blob {digest}: .*{error}"):
        _stored_with({digest: data}, {"v": {"__plait__": "blob", "h": digest}})
    with pytest.raises(ValueError, match=error):
        load_blob(data)
    assert child_refs(data) == []  # a store's sweep reads nothing from it


def test_child_refs_reads_through_compression() -> None:
    writer = BlobWriter()
    writer.externalize([f"{i}:" + "c" * 300 for i in range(16)])
    parents = [data for data in writer.take_new().values() if data.startswith(b"\x28\xb5\x2f\xfd")]
    assert parents and any(child_refs(data) for data in parents)


@pytest.mark.parametrize(
    "tree",
    [
        {"__plait__": "seq", "n": 3, "p": [["a", "b"]]},  # 3 items need two peaks
        {"__plait__": "seq", "n": 2, "p": [["a"]]},  # a node that is not a pair
        {"__plait__": "seq", "n": 1 << 50, "p": [[]]},  # more items than any run holds
        {"__plait__": "seq", "n": -1, "p": []},
        {"__plait__": "seq", "n": 2, "p": [["a", "b"]], "x": 1},
        {"__plait__": "text", "n": 2, "p": [["a", 5]]},  # a piece that is not text
    ],
)
def test_a_malformed_tree_is_corrupt(tree: Any) -> None:
    with pytest.raises(CorruptCheckpointError, match="run 'r', cp is corrupt"):
        _stored_with({}, {"v": tree})


def test_a_tree_that_expands_exponentially_is_refused() -> None:
    # each level names the one below twice: 2**40 leaves from 40 tiny blobs
    leaf = b'"' + b"x" * 100 + b'"'
    digest = blob_hash(leaf)
    blobs = {digest: leaf}
    for _ in range(40):
        node = json.dumps([{"__plait__": "blob", "h": digest}] * 2).encode()
        digest = blob_hash(node)
        blobs[digest] = node
    state = {"v": {"__plait__": "seq", "n": 1 << 40, "p": [{"__plait__": "blob", "h": digest}]}}
    with pytest.raises(CorruptCheckpointError, match="expand beyond"):
        _stored_with(blobs, state)


def test_a_resume_reads_only_the_blobs_its_checkpoint_reaches() -> None:
    writer, store = BlobWriter(), DictBlobs()
    old = externalize_state(_state("o" * 2000), writer)
    store.blobs.update(writer.take_new())
    new = externalize_state(_state(["n" * 500] * 8 + ["m" * 500]), writer)
    store.blobs.update(writer.take_new())
    anyio.run(lambda: resolve_state(new, store=store, run_id="r", where="w"))
    asked = {h for call in store.asked for h in call}
    assert asked and not (asked & blob_refs(old))
    assert set(store.blobs) - asked == blob_refs(old)


def test_unreferenced_follows_references_through_blobs() -> None:
    writer = BlobWriter()
    kept = writer.externalize(["k" * 300] * 4 + ["j" * 300])
    kept_blobs = writer.take_new()
    writer.externalize("g" * 500)
    gone = writer.take_new()
    assert unreferenced([kept], {**kept_blobs, **gone}) == set(gone)


def test_unreferenced_sweeps_nothing_when_a_reached_blob_does_not_parse() -> None:
    writer = BlobWriter()
    kept = writer.externalize([f"{i}:" + "k" * 300 for i in range(16)])
    blobs = writer.take_new()
    writer.externalize("g" * 500)
    blobs.update(writer.take_new())
    assert unreferenced([kept], blobs)  # the "g" string
    sealed = {h: b"PLAITSB1\nkey\n" + data for h, data in blobs.items()}  # encrypted
    assert unreferenced([kept], sealed) == set()


def test_a_store_without_blob_methods_keeps_values_inline() -> None:
    class Plain:
        pass

    assert not has_blobs(Plain()) and has_blobs(DictBlobs())
    with pytest.raises(CorruptCheckpointError, match="keeps no blobs"):
        anyio.run(
            lambda: resolve_state(
                {"v": {"__plait__": "blob", "h": "0" * 64}}, store=Plain(), run_id="r", where="w"
            )
        )
    assert THRESHOLD >= 64


class ClosureBlobs(DictBlobs):
    """A store that returns a whole closure in one call, or (``partial``) only part of it."""

    def __init__(self, partial: bool) -> None:
        super().__init__()
        self.partial = partial
        self.closures = 0

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        self.closures += 1
        found: dict[str, bytes] = {}
        frontier = set(hashes)
        while frontier:
            digest = frontier.pop()
            if digest in self.blobs and digest not in found:
                found[digest] = self.blobs[digest]
                if not self.partial:
                    frontier |= blob_refs(load_blob(self.blobs[digest]))
        return found


@pytest.mark.parametrize("partial", [False, True])
def test_a_closure_fetch_reads_a_tree_in_one_call_and_falls_back_for_the_rest(
    partial: bool,
) -> None:
    writer, store = BlobWriter(), ClosureBlobs(partial)
    value = [f"{i}:" + "c" * 400 for i in range(64)]
    stored = externalize_state(_state(value), writer)
    store.blobs.update(writer.take_new())
    back = anyio.run(lambda: resolve_state(stored, store=store, run_id="r", where="w"))
    assert back == _state(value) and store.closures == 1
    assert (store.asked == []) is not partial  # the rest level by level, only if needed


# -- bundles: a large tree's complete nodes as one blob each, their items inline --------------


def _turn(i: int) -> dict[str, Any]:
    """A transcript item of about 2 KB, distinct for each ``i``."""
    return {"role": "assistant", "turn": i, "text": f"turn {i}: " + "words " * 340}


def _checkpoint(value: Any, writer: BlobWriter, store: DictBlobs) -> tuple[Any, dict[str, bytes]]:
    """A checkpoint of ``value`` written to ``store``: its state and the blobs it added."""
    stored = json.loads(json.dumps(externalize_state(_state(value), writer)))
    new = writer.take_new()
    store.blobs.update(new)
    writer.settle()
    return stored, new


def _resume(stored: Any, store: DictBlobs) -> tuple[BlobWriter, Any]:
    """What a resume does: read the checkpoint's blobs, then a writer that trusts them."""
    read: set[str] = set()
    strings: dict[int, tuple[str, str]] = {}
    back = anyio.run(
        lambda: resolve_state(
            stored, store=store, run_id="r", where="w", seen=read, strings=strings
        )
    )
    writer = BlobWriter(strings)
    writer.known |= read
    return writer, back


def _read(stored: Any, store: DictBlobs) -> Any:
    return anyio.run(partial(resolve_state, stored, store=store, run_id="r", where="w"))


def _bundles(blobs: Mapping[str, bytes]) -> dict[str, Any]:
    """The blobs that are bundles: a node (nested pairs) holding no reference."""
    found = {}
    for digest, data in blobs.items():
        value = load_blob(data)
        if type(value) is list and len(value) == 2 and not blob_refs(value):
            found[digest] = value
    return found


def _leaves(node: Any, level: int) -> list[Any]:
    if level == 0:
        return [node]
    return [*_leaves(node[0], level - 1), *_leaves(node[1], level - 1)]


def test_a_large_list_is_stored_as_bundles_of_its_items_inline() -> None:
    writer, store = BlobWriter(), DictBlobs()
    items = [_turn(i) for i in range(100)]
    stored, new = _checkpoint(items, writer, store)
    # about 2 KB an item: 32 items pass BUNDLE (two halves of 16 do not), so 3 bundles of 32
    bundles = _bundles(new)
    assert len(bundles) == 3
    assert sorted(leaves[0]["turn"] for leaves in (_leaves(p, 5) for p in bundles.values())) == [
        0,
        32,
        64,
    ]
    assert all(
        _leaves(p, 5) == items[leaves[0]["turn"] : leaves[0]["turn"] + 32]
        for p in bundles.values()
        for leaves in [_leaves(p, 5)]
    )
    store.asked.clear()
    back = anyio.run(lambda: resolve_state(stored, store=store, run_id="r", where="w"))
    assert back == _state(items)
    assert json.dumps(back["pending"]["a"][0]) == json.dumps(items)
    # the 3 bundles, the last 4 items' texts and a node or two: not a blob per item
    assert len({h for asked in store.asked for h in asked}) < 12


small_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=8,
)


def test_items_above_bundle_item_keep_blobs_of_their_own() -> None:
    writer, store = BlobWriter(), DictBlobs()
    # 40 items of 5 KB: a node of 16 passes BUNDLE, but its items are shared values
    # (kept as their own blobs) rather than bundled a second time
    items = [{"head": f"page {i}: " + "prose " * 420, "rest": "more " * 500} for i in range(40)]
    assert all(BUNDLE_ITEM < len(json.dumps(item)) < BUNDLE for item in items)
    stored, new = _checkpoint(items, writer, store)
    assert not _bundles(new)
    texts = [blob_hash(json.dumps(item["head"]).encode()) for item in items]
    assert all(digest in new for digest in texts)
    assert _read(stored, store) == _state(items)


@settings(max_examples=60, deadline=None)
@given(st.lists(small_json_values, min_size=4, max_size=24), st.integers(0, 24))
def test_bundles_of_any_json_items_come_back_as_they_were(items: list[Any], cut: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plait_durable._blobs, "BUNDLE", 64)  # bundles of a few small items
        writer, store = BlobWriter(), DictBlobs()
        # one writer (so one cache of bundles) for a list, a longer one, and the same
        # items as JSON of other types that Python holds equal (1, 1.0, True)
        for value in (items[:cut], items, [*items, *items], _retyped(items)):
            stored, _new = _checkpoint(value, writer, store)
            back = _read(stored, store)
            assert json.dumps(back) == json.dumps(_state(value))


def _retyped(value: Any) -> Any:
    """``value`` with its numbers as other JSON types that Python holds equal to them."""
    if type(value) is list:
        return [_retyped(item) for item in value]
    if type(value) is dict:
        return {key: _retyped(item) for key, item in value.items()}
    if type(value) is int:
        return float(value) if abs(value) < 2**53 else value
    if type(value) is float and value.is_integer() and abs(value) < 2**53:
        return bool(value) if value in (0, 1) else int(value)
    return value


def test_a_resumed_run_writes_what_changed_not_its_bundles_again() -> None:
    writer, store = BlobWriter(), DictBlobs()
    items: list[Any] = []
    for i in range(95):
        items = [*items, _turn(i)]
        stored, new = _checkpoint(items, writer, store)
    assert len(_bundles(store.blobs)) == 2
    # resume after resume: each first checkpoint after a resume costs the new item and
    # a node or two, whether or not it completes a bundle
    for _round in range(3):
        writer, back = _resume(stored, store)
        items = [*back["pending"]["a"][0], _turn(len(items))]
        stored, new = _checkpoint(items, writer, store)
        completes = len(items) % 32 == 0
        assert len(_bundles(new)) == (1 if completes else 0)
        assert len(new) <= (4 if completes else 3), len(new)
        assert _read(stored, store) == _state(items)
    assert len(items) == 98 and len(_bundles(store.blobs)) == 3


def test_a_run_written_before_bundles_resumes_and_stays_o_of_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, store = BlobWriter(), DictBlobs()
    monkeypatch.setattr(plait_durable._blobs, "BUNDLE", 1 << 40)  # the layout before bundles
    items = [_turn(i) for i in range(70)]
    stored, _new = _checkpoint(items, writer, store)
    assert not _bundles(store.blobs) and len(store.blobs) > 70
    monkeypatch.undo()
    writer, back = _resume(stored, store)
    items = [*back["pending"]["a"][0], _turn(70)]
    stored, new = _checkpoint(items, writer, store)
    # the first checkpoint writes the two bundles its tree now has (once), nothing per item
    assert len(_bundles(new)) == 2 and len(new) <= 5
    for i in (71, 72):
        writer, back = _resume(stored, store)
        items = [*back["pending"]["a"][0], _turn(i)]
        stored, new = _checkpoint(items, writer, store)
        assert not _bundles(new) and len(new) <= 3
    back = anyio.run(lambda: resolve_state(stored, store=store, run_id="r", where="w"))
    assert back == _state(items)


def test_a_bundle_replaces_the_blobs_of_its_items_for_prune() -> None:
    writer, store = BlobWriter(), DictBlobs()
    items: list[Any] = []
    for i in range(40):
        items = [*items, _turn(i)]
        stored, _new = _checkpoint(items, writer, store)
    # the first 32 items' own blobs are superseded by their bundle: only older checkpoints
    # reach them, so a prune that keeps the newest one sweeps them
    swept = unreferenced([stored], store.blobs)
    assert len(swept) >= 32
    for digest in swept:
        del store.blobs[digest]
    back = anyio.run(lambda: resolve_state(stored, store=store, run_id="r", where="w"))
    assert back == _state(items)


@pytest.mark.parametrize("damage", ["altered", "truncated", "missing"])
def test_a_damaged_bundle_is_corrupt_naming_its_hash(damage: str) -> None:
    writer, store = BlobWriter(), DictBlobs()
    items = [_turn(i) for i in range(40)]
    stored, new = _checkpoint(items, writer, store)
    [digest] = _bundles(new)
    if damage == "altered":
        leaves = _leaves(load_blob(store.blobs[digest]), 5)
        leaves[7] = {**leaves[7], "turn": -1}
        while len(leaves) > 1:
            leaves = [[leaves[i], leaves[i + 1]] for i in range(0, len(leaves), 2)]
        store.blobs[digest] = pack_blob(json.dumps(leaves[0], separators=(",", ":")).encode())
        expected = f"run 'r', cp is corrupt: blob {digest} does not match its hash"
    elif damage == "truncated":
        store.blobs[digest] = store.blobs[digest][:-9]
        expected = f"run 'r', cp is corrupt: blob {digest}: its compressed bytes are truncated"
    else:
        del store.blobs[digest]
        expected = f"run 'r', cp is corrupt: blob {digest} it references is missing"
    with pytest.raises(CorruptCheckpointError, match=expected):
        anyio.run(lambda: resolve_state(stored, store=store, run_id="r", where="run 'r', cp"))


def test_blobs_read_with_the_checkpoint_are_used_first_and_checked() -> None:
    writer, store = BlobWriter(), DictBlobs()
    value = [f"{i}:" + "r" * 400 for i in range(8)]
    stored = externalize_state(_state(value), writer)
    store.blobs.update(writer.take_new())
    read = {h: store.blobs[h] for h in blob_refs(stored)}  # the first level only
    back = anyio.run(partial(resolve_state, stored, store=store, run_id="r", where="w", read=read))
    assert back == _state(value)
    assert store.asked and not set(read).intersection(*store.asked)  # the rest, not those
    digest = min(read)
    altered = {**read, digest: pack_blob(b'"not what was written"')}
    with pytest.raises(CorruptCheckpointError, match=f"w is corrupt: blob {digest} does not"):
        anyio.run(partial(resolve_state, stored, store=store, run_id="r", where="w", read=altered))


def test_a_resume_reads_blobs_with_its_checkpoint_only_through_the_store_itself() -> None:
    from plait_durable._resume import _with_blobs

    class Store(DictBlobs):
        async def load_with_blobs(self, checkpoint_id: str) -> Any:
            raise AssertionError("not called here")

    class Passing:  # a wrapper that passes what it does not define on to the store
        def __init__(self, store: Any) -> None:
            self.store = store

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

    class NoBlobs:
        async def load_with_blobs(self, checkpoint_id: str) -> Any:
            raise AssertionError("not called here")

    store = Store()
    assert _with_blobs(store, "load_with_blobs") == store.load_with_blobs  # type: ignore[arg-type]
    assert _with_blobs(store, "latest_with_blobs") is None  # type: ignore[arg-type]
    # a wrapper's own get_blobs (decrypting, counting) must not be gone round
    assert _with_blobs(Passing(store), "load_with_blobs") is None  # type: ignore[arg-type]
    assert _with_blobs(NoBlobs(), "load_with_blobs") is None  # type: ignore[arg-type]


def test_a_resumed_run_does_not_encode_the_bundles_it_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer, store = BlobWriter(), DictBlobs()
    items = [_turn(i) for i in range(70)]
    stored, _ = _checkpoint(items, writer, store)
    assert len(_bundles(store.blobs)) == 2
    encoded: list[int] = []
    pairs = plait_durable._blobs._pairs

    def counted(raw: list[Any], start: int, level: int) -> Any:
        encoded.append(level)
        return pairs(raw, start, level)

    monkeypatch.setattr(plait_durable._blobs, "_pairs", counted)
    for handed in (False, True):
        nodes: list[Any] = []
        back = anyio.run(
            partial(resolve_state, stored, store=store, run_id="r", where="w", nodes=nodes)
        )
        assert {digest for digest, _, _ in nodes} == set(_bundles(store.blobs))
        resumed = BlobWriter(nodes=nodes if handed else ())
        resumed.known |= set(store.blobs)
        encoded.clear()
        again, new = _checkpoint([*back["pending"]["a"][0], _turn(70)], resumed, store)
        # the bundles are found by their items, not encoded and hashed again
        assert (encoded == []) is handed and not _bundles(new)
        assert _read(again, store) == _state([*items, _turn(70)])


#: Resolves a forged checkpoint in a child process whose address space is capped at
#: 2 GiB (a crash or a MemoryError there fails the test, never this process); prints the
#: error it raised.
_FORGERY = """
import json, resource, sys, anyio, zstandard
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from plait_durable import CorruptCheckpointError
from plait_durable._blobs import blob_hash, resolve_state

class Store:
    def __init__(self, blobs):
        self.blobs = blobs
    async def get_blobs(self, run_id, hashes):
        return {h: self.blobs[h] for h in hashes if h in self.blobs}

kind = sys.argv[1]
if kind == "references":  # one 0.74 MB blob, referenced 1,500 times
    data = json.dumps([0] * 370_000, separators=(",", ":")).encode()
    stored = data
    refs = 1500
else:  # one 256 MiB blob of empty lists, stored compressed (a few KB)
    data = b"[" + b"[]," * ((256 << 20) // 3 - 1) + b"[]]"
    stored = zstandard.ZstdCompressor().compress(data)
    refs = 1
digest = blob_hash(data)
store = Store({digest: stored})
del data
state = {"v": [{"__plait__": "blob", "h": digest}] * refs}
try:
    anyio.run(lambda: resolve_state(state, store=store, run_id="r", where="run 'r', cp"))
except CorruptCheckpointError as exc:
    print(exc)
else:
    print("resolved")
"""


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("references", "expand beyond 536870912 bytes .*PLAIT_CHECKPOINT_MAX_EXPANSION"),
        ("large", "more than 67108864 bytes .*PLAIT_CHECKPOINT_MAX_BLOB"),
    ],
)
def test_a_forged_checkpoint_is_refused_before_it_takes_all_memory(kind: str, error: str) -> None:
    """Issue 34, N2: a ~140 KB forgery, one 0.74 MB blob referenced 1,500 times, made a
    resume hit a bare MemoryError at 4 GiB after 22 s (each reference rebuilt the list;
    the stored bytes stayed below the 2 GiB budget). N5: a 256 MiB blob crashed orjson
    under a memory cap. Now each rebuilt list counts at every reference, and no blob
    over the bound reaches the decoder."""
    import re
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FORGERY, kind], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(f"run 'r', cp is corrupt: .*{error}", done.stdout), done.stdout


def test_the_bounds_are_set_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from plait import CheckpointError
    from plait_durable._blobs import max_blob, max_expansion

    assert (max_blob(), max_expansion()) == (64 << 20, 512 << 20)
    monkeypatch.setenv("PLAIT_CHECKPOINT_MAX_BLOB", "2G")
    monkeypatch.setenv("PLAIT_CHECKPOINT_MAX_EXPANSION", "3221225472")
    assert (max_blob(), max_expansion()) == (2 << 30, 3 << 30)
    data = json.dumps([0] * 1000).encode()
    state = {"v": [{"__plait__": "blob", "h": blob_hash(data)}] * 100}
    monkeypatch.setenv("PLAIT_CHECKPOINT_MAX_EXPANSION", "100K")
    with pytest.raises(CorruptCheckpointError, match="PLAIT_CHECKPOINT_MAX_EXPANSION"):
        _stored_with({blob_hash(data): data}, state)
    monkeypatch.setenv("PLAIT_CHECKPOINT_MAX_EXPANSION", "2M")
    assert _stored_with({blob_hash(data): data}, state)["v"] == [[0] * 1000] * 100
    monkeypatch.setenv("PLAIT_CHECKPOINT_MAX_BLOB", "lots")
    with pytest.raises(CheckpointError, match="PLAIT_CHECKPOINT_MAX_BLOB='lots' is not a size"):
        max_blob()
