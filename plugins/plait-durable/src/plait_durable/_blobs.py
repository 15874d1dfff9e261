"""Content-addressed values: what makes a checkpoint cost what changed.

A checkpoint's values (messages, executor and shared state, outputs, request payloads)
are encoded JSON (:mod:`plait_durable.codec`). Before a checkpoint is written to a store that
keeps blobs (:func:`has_blobs`), :class:`BlobWriter` rewrites each value bottom-up:

- a string, list or dict whose compact JSON is above :data:`THRESHOLD` bytes is stored
  once, as a *blob* keyed by the SHA-256 of its JSON bytes, and replaced by a reference
  ``{"__plait__": "blob", "h": "<sha256 hex>"}``: the same value in many messages, or in
  every checkpoint of a run, is stored once;
- a list above the threshold becomes a Merkle mountain range
  ``{"__plait__": "seq", "n": N, "p": [peaks]}``: the items, in order, are the leaves of
  perfect binary trees of sizes the binary digits of ``N`` (largest first); a tree of
  ``2**k`` leaves is a JSON pair ``[left, right]`` of trees of ``2**(k-1)``, and any
  tree above the threshold is itself a blob. The tree over the first ``2**k`` items
  never changes when items are appended, so a list that grows by one item costs the
  item plus (amortised) one small node, and the checkpoint holds at most ``log2 N``
  peaks;
- in a tree whose items come to :data:`BUNDLE` bytes or more, the smallest nodes whose
  items do, if none is above :data:`BUNDLE_ITEM` bytes, are each one blob holding the
  items themselves, as nested pairs (a *bundle*): a node never changes once complete,
  so a bundle is written once, and a resume reads one blob per :data:`BUNDLE` bytes of
  items instead of one per item (the items' own blobs, written while the node was not
  complete, are left to the next prune);
- a string longer than :data:`CHUNK` x 4 characters becomes the same structure over
  :data:`CHUNK`-character pieces, ``{"__plait__": "text", "n": pieces, "p": [...]}``: a
  string that grows at its end rewrites its last piece only.

A dict's keys are kept in place and its large values become references, so a dict
that differs in a few keys rewrites the references of its values, not the values. The
run's shared state is the exception (:meth:`BlobWriter.externalize_map`): a workflow
adds keys to it superstep after superstep (a steps front-end keeps every step's output
there), so when it is large it becomes the same structure over its ``[key, value]``
items in order, ``{"__plait__": "map", "n": items, "p": [...]}``, and a checkpoint holds
the whole shared state for what its new keys cost.

Why this scheme and not content-defined chunking over the encoded bytes: chunking the
bytes keeps a flat list of chunk hashes in every checkpoint (quadratic again, in hashes)
unless the list is chunked in turn, and a chunk boundary inside an item re-stores
bytes around every append. Hashing whole encoded values keeps each item one blob, the
same in a message, in shared state and in every checkpoint, and the mountain range
makes appends O(item + log n) (measured in ``tests/benchmarks/bench_checkpoint_growth.py``).

A blob is stored compressed when that pays (:func:`pack_blob`): its bytes are then a
Zstandard frame (RFC 8878, which starts with the bytes ``28 b5 2f fd``, where compact JSON
never does) of the canonical JSON, and its key is still the SHA-256 of the canonical
JSON, so the same value has the same key however it was stored, and blobs written before
compression, or compressed with zlib as before Zstandard (a stream that starts with the
byte ``x``), load as they are. Text compresses three to four times; a blob too small to
gain stays as it is. Why Zstandard (the ``zstandard`` bindings; ``compression.zstd`` in
the standard library from Python 3.14 is the same format): on the 2 KB messages of the
growth benchmark it inflates three times faster than zlib and compresses ten times
faster, to slightly fewer bytes, and a resume inflates every blob its checkpoint names.
Compression happens before a store wrapper seals or encrypts the bytes.

Reading is bounded, so a hostile store cannot make a small checkpoint take all memory:
no blob is inflated or decoded if it holds more than :func:`max_blob` bytes (a frame
must state its size, which is checked before anything is inflated; a blob stored as it
is is checked by its length), and what one checkpoint's values come to is counted
against :func:`max_expansion` as they are read and rebuilt: each blob's bytes at every
reference to it, and each list and dict rebuilt at its size in memory (an estimate:
64 bytes and 8 a slot), so a blob referenced many times counts many times. Both are
set in the environment (:data:`MAX_BLOB_VARIABLE`, :data:`MAX_EXPANSION_VARIABLE`),
which a :class:`~plait_durable.CorruptCheckpointError` past them names.

Reading (:func:`resolve_state`) is the inverse, done before anything decodes a value:
references are fetched from the checkpoint's own run, level by level (a few round
trips, only the blobs the checkpoint names), each blob is inflated if it was compressed
and checked against its hash, and
the JSON it stood for is rebuilt. A blob that is missing or does not match its hash is a
:class:`~plait_durable.CorruptCheckpointError` naming the checkpoint and the hash. The structures
only rebuild JSON: the codec's decoding rules and type allowlist apply afterwards,
unchanged.

Blobs belong to a run: a reference never points outside the run of the checkpoint that
holds it (a fork copies what it needs into the new run), so deleting or pruning one run
never touches another's values. Pruning removes the blobs that no kept checkpoint
reaches (:func:`unreferenced`, mark and sweep over the run's blobs).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, NoReturn, cast

import zstandard
from plait import CheckpointError

from ._errors import CorruptCheckpointError
from ._format import decode_checkpoint, load_json

_orjson: Any
try:  # as the kernel's checkpoint JSON: orjson when it is installed
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is installed with the workspace
    _orjson = None

__all__ = [
    "CHUNK",
    "THRESHOLD",
    "BlobWriter",
    "MapTree",
    "blob_hash",
    "blob_refs",
    "child_refs",
    "externalize_state",
    "has_blobs",
    "has_refs",
    "load_blob",
    "max_blob",
    "max_expansion",
    "pack_blob",
    "resolve_state",
    "unpack_blob",
    "unreferenced",
    "unreferenced_by",
]

TAG = "__plait__"  # the codec's tag key (plait_durable.codec.TAG; the codec is a layer above)
#: Values whose compact JSON is above this many bytes are stored as blobs. Below it a
#: reference (91 bytes) and a row cost about what the value does.
THRESHOLD = 256
#: Characters per piece of a long string (:data:`THRESHOLD` x 4 and up are chunked).
CHUNK = 1024
_LONG_TEXT = CHUNK * 4
#: Inside a tree, a node stays inline in its parent up to this many bytes of compact
#: JSON (not :data:`THRESHOLD`), so a tree is stored in blobs of about this size, which
#: compress, where nodes of a few hundred bytes would hardly compress and each cost a
#: reference. A tree's peaks (what the value holding the tree keeps) are blobs above
#: :data:`THRESHOLD`, as any value, so a checkpoint stays small. Measured: the README
#: demo stores 9% less; the 2 KB-append loop the same bytes (0.5% less at 1,000 steps).
_NODE = 1024
#: Lists with fewer items are stored as one blob, not as a tree.
_SEQ_MIN = 4
#: A tree node whose items come to this many bytes of compact JSON or more, and whose two
#: halves each come to less, is one blob with its items inline (a *bundle*; see
#: :meth:`BlobWriter._bundle`): a resume reads one blob for that many bytes of items, not
#: a blob per item. Measured on the 1,000-step append loop of
#: ``tests/benchmarks/bench_checkpoint_growth.py`` (``--resume-ab``).
BUNDLE = 64 * 1024
#: A node holding an item larger than this is not a bundle: such an item costs a resume
#: more in bytes than in the overhead of a blob of its own, and a blob of its own is
#: shared with the same value elsewhere (a page's text in a message and in shared state),
#: where a bundle would store it a second time.
BUNDLE_ITEM = 4 * 1024
#: A reference's size in compact JSON (what a value costs once it is a blob).
_REF_SIZE = 91
#: The default bound on what one checkpoint's values come to as they are read and
#: rebuilt (:func:`max_expansion`): blob bytes counted at every reference, and lists and
#: dicts at their estimated size in memory, so a hostile store cannot make a small
#: checkpoint rebuild a value larger than memory.
EXPANSION_LIMIT = 512 << 20
#: The environment variable that sets :func:`max_expansion` (bytes; ``K``, ``M``, ``G``
#: suffixes are powers of 1024).
MAX_EXPANSION_VARIABLE = "PLAIT_CHECKPOINT_MAX_EXPANSION"
#: The environment variable that sets :func:`max_blob`.
MAX_BLOB_VARIABLE = "PLAIT_CHECKPOINT_MAX_BLOB"
#: What a rebuilt list or dict is counted at (bytes, estimated): its object, and a slot
#: per item.
_CONTAINER, _SLOT = 64, 8
#: Blobs whose canonical JSON is this size or more are compressed when that pays.
COMPRESS_MIN = 64
#: Zstandard's compression level for blobs (its default: on JSON text within a few
#: percent of the best ratio, and as fast as any level that gets near it).
_LEVEL = 3
#: How a compressed blob starts: the magic number of a Zstandard frame (compact JSON
#: starts with ``{``, ``[`` or ``"``, never with ``(``).
_ZSTD = b"\x28\xb5\x2f\xfd"
#: How a blob compressed before Zstandard starts: the first byte of a zlib stream with a
#: 32 KiB window. Such blobs are read, never written.
_ZLIB = b"x"
#: Each thread's Zstandard contexts (a context is not safe to share between threads; a
#: store may read blobs in a worker thread).
_contexts = threading.local()
#: The default bound on what one blob holds (inflated) for a reader to decode it
#: (:func:`max_blob`); larger canonical JSON is written uncompressed (and read only with
#: a higher bound). A value this large is rare: long lists and strings are trees of
#: small blobs; a dict with a great many small keys is one blob.
MAX_BLOB = 64 << 20
#: Bound on ``n`` of a tree: more items than any process holds.
_MAX_ITEMS = 1 << 40

_BLOB, _SEQ, _TEXT, _MAP = "blob", "seq", "text", "map"
_SCALARS = frozenset({int, float, bool, type(None)})

#: ``(hash, node, height)`` of a tree node a resume read from a blob of
#: :data:`BUNDLE` bytes or more: a bundle, if its items hold no reference.
ReadNode = tuple[str, Any, int]

#: ``(run id, hashes, strings, nodes)`` of the blobs a resume read: the store holds them
#: (the checkpoint it resumed reaches them), so the resumed run's writer need not write
#: them again; ``strings`` maps ``id(s)`` to ``(s, hash)`` for each string read from a
#: blob, so the writer need not hash those strings again either, and ``nodes`` are the
#: large tree nodes read (:data:`ReadNode`), so it need not encode and hash the bundles
#: among them again. :func:`plait_durable._resume.load_run` returns it with the state it
#: read, and the resumed run's checkpointer is given it.
ResumedBlobs = tuple[str, frozenset[str], dict[int, tuple[str, str]], list[ReadNode]]


def _dumps(value: Any) -> bytes | None:
    """A blob's bytes: compact JSON, or None for a value orjson cannot write (an integer
    beyond 64 bits), which then stays inline: orjson would read it back as a float, and
    blobs are read with orjson when it is installed."""
    if _orjson is None:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    try:
        data: bytes = _orjson.dumps(value)
    except TypeError:
        return None
    return data


def _limit(variable: str, default: int) -> int:
    """A size in bytes from the environment (``1073741824``, ``512M``, ``2G``), else
    ``default``."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    scale = 1
    unit = raw[-1:].upper()
    if unit in _UNITS:
        raw, scale = raw[:-1], _UNITS[unit]
    try:
        value = int(raw) * scale
    except ValueError:
        value = 0
    if value <= 0:
        raise CheckpointError(
            f"{variable}={os.environ[variable]!r} is not a size in bytes (like 1073741824, "
            "512M or 2G)"
        )
    return value


_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def max_blob() -> int:
    """The most bytes one blob, inflated, may hold for a reader to decode it:
    ``PLAIT_CHECKPOINT_MAX_BLOB`` (bytes; ``K``, ``M``, ``G`` suffixes), else
    :data:`MAX_BLOB` (64 MiB). Stores apply it to what they read whole, too (a
    checkpoint file, a pack's entry).

    :raises CheckpointError: the variable is not a size.

    .. versionadded:: 0.1
    """
    return _limit(MAX_BLOB_VARIABLE, MAX_BLOB)


def max_expansion() -> int:
    """The most one checkpoint's values may come to as they are read and rebuilt (blob
    bytes at every reference, lists and dicts at their estimated size in memory):
    ``PLAIT_CHECKPOINT_MAX_EXPANSION`` (bytes; ``K``, ``M``, ``G`` suffixes), else
    :data:`EXPANSION_LIMIT` (512 MiB).

    :raises CheckpointError: the variable is not a size.

    .. versionadded:: 0.1
    """
    return _limit(MAX_EXPANSION_VARIABLE, EXPANSION_LIMIT)


def blob_hash(data: bytes) -> str:
    """The key of ``data`` as a blob: its SHA-256, in hex (``data`` is the canonical JSON,
    before :func:`pack_blob`)."""
    return hashlib.sha256(data).hexdigest()


def pack_blob(data: bytes) -> bytes:
    """A blob's canonical JSON ``data`` as a store keeps it: compressed (a Zstandard
    frame) when that makes it smaller, else ``data`` itself. :func:`unpack_blob` is the inverse.
    """
    if len(data) < COMPRESS_MIN or len(data) > MAX_BLOB:
        return data
    try:
        compressor = _contexts.compressor
    except AttributeError:
        compressor = _contexts.compressor = zstandard.ZstdCompressor(level=_LEVEL)
    packed: bytes = compressor.compress(data)  # the frame states its size (checked on read)
    return packed if len(packed) < len(data) else data


def unpack_blob(data: bytes, limit: int | None = None) -> bytes:
    """A stored blob's canonical JSON: ``data`` inflated if it is compressed
    (:func:`pack_blob`), else ``data`` as it is (blobs written before compression).

    :param limit: the most bytes it may hold, inflated (:func:`max_blob` if not given).
    :raises ValueError: a compressed blob is truncated, altered, has bytes after its end,
        or inflates to more than ``limit`` bytes; a blob stored as it is holds more.
    """
    if limit is None:
        limit = max_blob()
    if data[:4] == _ZSTD:
        return _unzstd(data, limit)
    if data[:1] != _ZLIB:
        if len(data) > limit:  # checked before anything decodes it
            raise ValueError(f"it holds more than {limit} bytes")
        return data
    inflater = zlib.decompressobj()
    cap = max(limit, 1)  # zlib reads a max_length of 0 as no bound at all
    try:
        plain = inflater.decompress(data, cap)
    except zlib.error as exc:
        raise ValueError(f"its compressed bytes do not inflate: {exc}") from None
    if inflater.unconsumed_tail or len(plain) > limit or (not inflater.eof and len(plain) >= cap):
        raise ValueError(f"it inflates to more than {limit} bytes")
    if not inflater.eof:
        raise ValueError("its compressed bytes are truncated")
    if inflater.unused_data:
        raise ValueError("its compressed bytes are followed by others")
    return plain


def _unzstd(data: bytes, limit: int) -> bytes:
    """A Zstandard frame inflated, after checking the size it states against ``limit``."""
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        raise ValueError(
            "its compressed bytes do not inflate: the frame header is unreadable"
        ) from None
    if size < 0:  # this Plait always writes the size; a frame without it is not ours
        raise ValueError("its compressed bytes do not inflate: the frame does not state its size")
    if size > limit:
        raise ValueError(f"it inflates to more than {limit} bytes")
    try:
        decompressor = _contexts.decompressor
    except AttributeError:
        decompressor = _contexts.decompressor = zstandard.ZstdDecompressor()
    try:
        plain: bytes = decompressor.decompress(data, allow_extra_data=False)
    except zstandard.ZstdError as exc:
        if "unused data" in str(exc):
            raise ValueError("its compressed bytes are followed by others") from None
        if "full frame" in str(exc):
            raise ValueError("its compressed bytes are truncated") from None
        raise ValueError(f"its compressed bytes do not inflate: {exc}") from None
    if len(plain) != size:
        raise ValueError("its compressed bytes do not inflate to the size their frame states")
    return plain


def load_blob(data: bytes) -> Any:
    """A stored blob's JSON value (inflated if it is compressed; not checked against its
    hash: :func:`resolve_state` does that).

    :raises ValueError: it does not inflate (:func:`unpack_blob`) or is not JSON.
    """
    return load_json(unpack_blob(bytes(data)))


def has_blobs(store: Any) -> bool:
    """Whether ``store`` keeps blobs: it has ``get_blobs(run_id, hashes)`` and its
    ``save`` (and ``save_many``, if it has one) accept ``blobs=``. A wrapper that keeps
    blobs only when the store it wraps does says so with ``supports_blobs``."""
    if not callable(getattr(store, "get_blobs", None)):
        return False
    return getattr(store, "supports_blobs", True) is not False


def _ref(digest: str) -> dict[str, str]:
    return {TAG: _BLOB, "h": digest}


def _ref_of(value: Any) -> str | None:
    """The hash a reference names, or None if ``value`` is not a reference."""
    if type(value) is dict and value.get(TAG) == _BLOB and len(value) == 2:
        digest = value.get("h")
        if isinstance(digest, str):
            return digest
    return None


class BlobWriter:
    """Rewrites encoded values into references and blobs, for one run's checkpoints.

    It remembers which blobs it has handed out (:attr:`known`), so each blob goes to the
    store once per process; :meth:`take_new` returns the ones the last values made.
    """

    def __init__(
        self,
        strings: Mapping[int, tuple[str, str]] | None = None,
        nodes: Iterable[ReadNode] = (),
    ) -> None:
        #: hashes the store holds for sure: what the checkpoints a prune keeps reach (see
        #: :meth:`settle`); any other blob is handed to the store again when used
        self.known: set[str] = set()
        #: hashes the values since the last :meth:`take_new` reach
        self.touched: set[str] = set()
        self._new: dict[str, bytes] = {}
        # id(str) -> (the str, its hash): messages carry the same string objects from
        # step to step, and a string is immutable, so its hash is computed once (the
        # cache holds the string, so its id cannot be reused while it is cached)
        self._strings: dict[int, tuple[str, str]] = dict(strings or {})
        # a bundle's items (their keys, _freeze) -> its hash, or None if it cannot be one
        # blob: a bundle never changes once written, so its items are encoded, hashed and
        # compressed once per process, not at every checkpoint that holds the tree
        self._bundles: dict[tuple[Any, ...], str | None] = {}
        # tree nodes a resume read (ReadNode): the bundles among them are filed in
        # _bundles when a bundle is first looked up, so the first checkpoint after a
        # resume does not encode and hash them again (a resume that ends at once files none)
        self._read_nodes = list(nodes)

    def take_new(self) -> dict[str, bytes]:
        """The blobs made since the last call (hash -> bytes), to save with the checkpoint."""
        new, self._new = self._new, {}
        return new

    def settle(self) -> set[str]:
        """After a checkpoint: trust only the blobs it reaches from now on, and return them.

        A prune keeps the newest checkpoint, so a blob it reaches stays in the store; a blob
        only an older checkpoint reached may have been swept by a prune running meanwhile,
        so it is written again if a value needs it again.
        """
        touched, self.touched = self.touched, set()
        self.known = touched.copy()
        return touched

    def externalize(self, value: Any) -> Any:
        """``value`` (encoded JSON) with its large parts replaced by references."""
        cls = type(value)
        if cls in _SCALARS or (cls is str and len(value) < THRESHOLD - 2):
            return value  # the common case, without a call
        return self._ext(value)[0]

    def externalize_map(self, value: dict[str, Any]) -> Any:
        """``value`` (an encoded dict that grows by keys: the shared state) with its large
        values replaced by references and, when it is large, its items as a tree, so
        that a dict that gained a few keys costs those keys."""
        if not value or TAG in value:
            return self.externalize(value)
        if len(value) >= _SEQ_MIN:
            pairs = [[key, item] for key, item in value.items()]
            plan = _plan(pairs)
            if plan is not None:
                return self._tree(_MAP, _Leaves(pairs, self._ext_pair, plan))[0]
        items = []
        size = 2
        for key, item in value.items():
            encoded, item_size = self._ext(item)
            items.append(([key, encoded], len(key) + 5 + item_size))
            size += len(key) + 4 + item_size
        if size <= THRESHOLD or len(items) < _SEQ_MIN:
            return {pair[0]: pair[1] for pair, _ in items}
        return self._tree(_MAP, _Leaves(items))[0]

    # -- the rewrite ----------------------------------------------------------------------

    def _put(self, value: Any, size: int) -> tuple[Any, int]:
        data = _dumps(value)
        if data is None:
            return value, size
        return _ref(self._put_data(data)), _REF_SIZE

    def _put_data(self, data: bytes) -> str:
        """Hand the blob ``data`` (canonical JSON) to the store unless it holds it; its hash."""
        digest = blob_hash(data)
        self.touched.add(digest)
        if digest not in self.known:
            self.known.add(digest)
            self._new[digest] = pack_blob(data)
        return digest

    def _ext_pair(self, pair: list[Any]) -> tuple[Any, int]:
        """A ``[key, value]`` item of a map tree, its value rewritten."""
        encoded, size = self._ext(pair[1])
        return [pair[0], encoded], len(pair[0]) + 5 + size

    def _ext(self, value: Any) -> tuple[Any, int]:
        cls = type(value)
        if cls is str:
            size = len(value) + 2
            if size <= THRESHOLD:
                return value, size
            if len(value) > _LONG_TEXT:
                return self._text(value)
            cached = self._strings.get(id(value))
            if cached is not None and cached[0] is value:
                digest = cached[1]
                if digest in self.known:
                    self.touched.add(digest)
                    return _ref(digest), _REF_SIZE
            ref = self._put(value, size)
            if ref[0] is value:  # not JSON orjson writes (a lone surrogate): inline
                return ref
            if len(self._strings) > 100_000:
                self._strings.clear()
            self._strings[id(value)] = (value, ref[0]["h"])
            return ref
        if cls is list:
            if len(value) >= _SEQ_MIN:
                plan = _plan(value)
                if plan is not None:  # large enough to hold a bundle: items encoded on demand
                    return self._tree(_SEQ, _Leaves(value, self._ext, plan))
            items = [self._ext(item) for item in value]
            size = 2 + sum(s for _, s in items) + len(items)
            if size <= THRESHOLD:
                return [o for o, _ in items], size
            if len(items) >= _SEQ_MIN:
                return self._tree(_SEQ, _Leaves(items))
            return self._put([o for o, _ in items], size)
        if cls is dict:
            out: dict[str, Any] = {}
            size = 2
            for key, item in value.items():
                encoded, item_size = self._ext(item)
                out[key] = encoded
                size += len(key) + 4 + item_size
            if size <= THRESHOLD:
                return out, size
            return self._put(out, size)
        return value, 8 if cls is not float else 24

    def _text(self, text: str) -> tuple[Any, int]:
        pieces = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
        plan = _plan(pieces)
        if plan is not None:
            return self._tree(_TEXT, _Leaves(pieces, self._ext, plan))
        return self._tree(_TEXT, _Leaves([self._ext(piece) for piece in pieces]))

    def _tree(self, kind: str, leaves: _Leaves) -> tuple[Any, int]:
        peaks: list[Any] = []
        size = 30
        start = 0
        node_of = self._node if leaves.offsets is None else self._bundled_node
        for level in _levels(len(leaves)):
            node, node_size = node_of(leaves, start, level)
            if level and node_size > THRESHOLD and _ref_of(node) is None:
                node, node_size = self._put(node, node_size)  # a peak: as any value
            peaks.append(node)
            size += node_size + 1
            start += 1 << level
        return {TAG: kind, "n": len(leaves), "p": peaks}, size

    def _node(self, leaves: _Leaves, start: int, level: int) -> tuple[Any, int]:
        if level == 0:
            return leaves[start]
        half = 1 << (level - 1)
        left, left_size = self._node(leaves, start, level - 1)
        right, right_size = self._node(leaves, start + half, level - 1)
        size = left_size + right_size + 3
        if size <= _NODE:
            return [left, right], size
        return self._put([left, right], size)

    def _bundled_node(self, leaves: _Leaves, start: int, level: int) -> tuple[Any, int]:
        """:meth:`_node` for a tree large enough to hold bundles: the smallest nodes of at
        least :data:`BUNDLE` bytes are bundles, the nodes above them pairs as in any tree, and
        the nodes below :data:`BUNDLE` not inside a bundle (the newest items, or the small
        half beside a half too large to bundle) are as in any tree."""
        offsets = leaves.offsets
        assert offsets is not None
        end = start + (1 << level)
        if level == 0 or offsets[end] - offsets[start] < BUNDLE:
            return self._node(leaves, start, level)
        mid = start + (1 << (level - 1))
        if offsets[mid] - offsets[start] < BUNDLE and offsets[end] - offsets[mid] < BUNDLE:
            bundled = self._bundle(leaves, start, level)
            return bundled if bundled is not None else self._node(leaves, start, level)
        left, left_size = self._bundled_node(leaves, start, level - 1)
        right, right_size = self._bundled_node(leaves, mid, level - 1)
        size = left_size + right_size + 3
        if size <= _NODE:
            return [left, right], size
        return self._put([left, right], size)

    def _bundle(self, leaves: _Leaves, start: int, level: int) -> tuple[Any, int] | None:
        """The node of ``2**level`` items from ``start`` as one blob holding the items as
        they are (nested pairs, as an inline node), or None if it is not one (an item is
        above :data:`BUNDLE_ITEM` bytes, or orjson cannot write one).

        Its items are never rewritten into references, so the blobs a bundle's items were
        stored in while the node was not complete yet are not needed by it (a prune
        removes them), and a process that resumed from a bundle, and so never hashed its
        items, stores nothing new for them: the bundle is encoded again (once) and found
        among the blobs the resume read.
        """
        assert leaves.keys is not None
        key = tuple(leaves.keys[start : start + (1 << level)])
        if self._read_nodes:
            self._file_read_nodes()
        cached = self._bundles.get(key, "")
        if cached is None:
            return None
        if cached and cached in self.known:
            self.touched.add(cached)
            return _ref(cached), _REF_SIZE
        if len(self._bundles) > 10_000:
            self._bundles.clear()
        offsets = leaves.offsets
        assert offsets is not None
        end = start + (1 << level)
        small = all(offsets[i + 1] - offsets[i] <= BUNDLE_ITEM for i in range(start, end))
        data = _dumps(_pairs(leaves.raw, start, level)) if small else None
        if data is None:
            self._bundles[key] = None
            return None
        digest = self._bundles[key] = self._put_data(data)
        return _ref(digest), _REF_SIZE

    def _file_read_nodes(self) -> None:
        """File the bundles among the nodes a resume read under their items' keys, as
        :meth:`_bundle` files those it writes: a node of nested pairs whose items hold no
        reference is the blob :meth:`_bundle` would write for those items."""
        for digest, node, level in self._read_nodes:
            items = _unpair(node, level)
            if items is None or has_refs(items):
                continue
            keys = []
            for item in items:
                frozen = (item, 0) if type(item) is str else _freeze(item)
                if frozen is None:
                    break
                keys.append(frozen[0])
            else:
                self._bundles.setdefault(tuple(keys), digest)
        self._read_nodes = []


class MapTree:
    """A dict a run changes a few keys of at a time (its executors' states, their visit
    counts), kept as the structure :meth:`BlobWriter.externalize_map` writes for it and
    rebuilt only along the paths of the keys set since the last :meth:`tree`: a
    checkpoint holds it whole for what those keys cost, in bytes and in time.

    Keys keep the order they were first set in, as a dict's do; a value set again stays
    in its place. Removing a key (rare: an executor whose state was emptied) rebuilds the
    nodes after it.
    """

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._keys: list[str] = []
        self._values: list[Any] = []
        #: each item encoded as a ``[key, value]`` leaf and its size; None until encoded
        self._leaves: list[tuple[Any, int] | None] = []
        self._size = 0  # the encoded leaves' sizes, summed
        self._changed: set[int] = set()
        #: ``(start, height, peak) -> (node, size, hashes it names)`` of the tree's nodes
        #: and peaks built, kept while no item under them changes
        self._nodes: dict[tuple[int, int, bool], tuple[Any, int, frozenset[str]]] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value`` (encoded JSON, not changed afterwards)."""
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self._keys)
            self._keys.append(key)
            self._values.append(value)
            self._leaves.append(None)
        else:
            self._values[index] = value
        self._changed.add(index)

    def remove(self, key: str) -> None:
        """Remove ``key``, if it is there."""
        index = self._index.pop(key, None)
        if index is None:
            return
        del self._keys[index], self._values[index], self._leaves[index]
        for moved in range(index, len(self._keys)):
            self._index[self._keys[moved]] = moved
            self._leaves[moved] = None
            self._changed.add(moved)
        self._changed.discard(len(self._keys))
        self._nodes = {
            key: node for key, node in self._nodes.items() if key[0] + (1 << key[1]) <= index
        }

    def tree(self, writer: BlobWriter) -> Any:
        """The dict as ``writer`` writes a large one that grows by keys (its values
        rewritten into references, its items a tree when it is large), its new blobs handed
        to ``writer``."""
        if not self._keys:  # no executor keeps a state, or none counts its visits
            return {}
        for index in self._changed:
            leaf = self._leaves[index]
            if leaf is not None:
                self._size -= leaf[1]
            leaf = self._leaves[index] = writer._ext_pair([self._keys[index], self._values[index]])
            self._size += leaf[1]
            for height in range(len(self._keys).bit_length()):
                start = index >> height << height
                self._nodes.pop((start, height, False), None)
                self._nodes.pop((start, height, True), None)
        self._changed.clear()
        leaves = cast("list[tuple[Any, int]]", self._leaves)
        if len(leaves) < _SEQ_MIN or self._size + 2 <= THRESHOLD:
            out = {}
            for pair, _ in leaves:
                out[pair[0]] = pair[1]
                writer.touched.update(blob_refs(pair[1]))
            return out
        peaks = []
        start = 0
        for height in _levels(len(leaves)):
            peaks.append(self._peak(writer, leaves, start, height))
            start += 1 << height
        return {TAG: _MAP, "n": len(leaves), "p": peaks}

    def _peak(
        self, writer: BlobWriter, leaves: list[tuple[Any, int]], start: int, height: int
    ) -> Any:
        """A peak of the tree: a node, and a blob when it is above :data:`THRESHOLD` (as
        :meth:`BlobWriter._tree` makes it)."""
        cached = self._nodes.get((start, height, True))
        if cached is None:
            node, size, names = self._node(writer, leaves, start, height)
            if height and size > THRESHOLD and _ref_of(node) is None:
                node, size = writer._put(node, size)
                if _ref_of(node) is not None:
                    names = frozenset((node["h"],))
            cached = self._nodes[start, height, True] = (node, size, names)
        else:
            writer.touched.update(cached[2])
        return cached[0]

    def _node(
        self, writer: BlobWriter, leaves: list[tuple[Any, int]], start: int, height: int
    ) -> tuple[Any, int, frozenset[str]]:
        """The node over ``2**height`` items from ``start`` (as :meth:`BlobWriter._node`
        makes it), its size and the hashes it names directly."""
        cached = self._nodes.get((start, height, False))
        if cached is not None:
            writer.touched.update(cached[2])
            return cached
        if height == 0:
            pair, size = leaves[start]
            made = (pair, size, frozenset(blob_refs(pair)))
        else:
            half = 1 << (height - 1)
            left, left_size, left_names = self._node(writer, leaves, start, height - 1)
            right, right_size, right_names = self._node(writer, leaves, start + half, height - 1)
            size = left_size + right_size + 3
            if size <= _NODE:
                made = ([left, right], size, left_names | right_names)
            else:
                node, size = writer._put([left, right], size)
                names = left_names | right_names  # (not JSON orjson writes: inline)
                if _ref_of(node) is not None:
                    names = frozenset((node["h"],))
                made = (node, size, names)
        self._nodes[start, height, False] = made
        return made


class _Leaves:
    """A tree's items, encoded (:meth:`BlobWriter._ext`) when first asked for: the items
    inside a bundle never are. ``keys`` and ``offsets`` (from :func:`_plan`) are None for a
    tree too small to hold a bundle, whose items come encoded."""

    __slots__ = ("encode", "encoded", "keys", "offsets", "raw")

    def __init__(
        self,
        raw: list[Any],
        encode: Callable[[Any], tuple[Any, int]] | None = None,
        plan: tuple[list[Any], list[int]] | None = None,
    ) -> None:
        self.raw = raw
        self.encode = encode
        self.keys: list[Any] | None = None
        self.offsets: list[int] | None = None
        if plan is not None:
            self.keys, self.offsets = plan
        self.encoded: list[tuple[Any, int] | None] = (
            [None] * len(raw) if encode is not None else list(raw)
        )

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        leaf = self.encoded[index]
        if leaf is None:
            assert self.encode is not None
            leaf = self.encoded[index] = self.encode(self.raw[index])
        return leaf


#: :func:`_freeze`'s tags: the first item of the tuple standing for a non-string value
_LIST, _DICT, _INT, _FLOAT, _BOOL = range(5)


def _freeze(value: Any) -> tuple[Any, int] | None:
    """A hashable key that equals another value's key exactly when the two values are
    the same JSON (so ``1``, ``1.0`` and ``true`` differ), with the value's size as
    :meth:`BlobWriter._ext` estimates it; None for a value that is not encoded JSON."""
    cls = type(value)
    if cls is str:
        return value, len(value) + 2
    if value is None:
        return None, 4
    if cls is list:
        parts: list[Any] = [_LIST]
        size = 2 + len(value)
        for item in value:
            frozen = _freeze(item)
            if frozen is None:
                return None
            parts.append(frozen[0])
            size += frozen[1]
        return tuple(parts), size
    if cls is dict:
        parts = [_DICT]
        size = 2
        for key, item in value.items():
            frozen = _freeze(item)
            if frozen is None or type(key) is not str:
                return None
            parts += (key, frozen[0])
            size += len(key) + 4 + frozen[1]
        return tuple(parts), size
    if cls is int:
        return (_INT, value), 8
    if cls is float:
        return (_FLOAT, repr(value)), 24
    if cls is bool:
        return (_BOOL, value), 5
    return None


def _plan(raw: list[Any]) -> tuple[list[Any], list[int]] | None:
    """For a tree over ``raw``: each item's key (:func:`_freeze`) and the running total of
    their sizes (``offsets[i]`` before item ``i``), or None if the items come to less
    than :data:`BUNDLE` bytes (no node can be a bundle) or one is not encoded JSON."""
    keys: list[Any] = []
    offsets = [0]
    total = 0
    for item in raw:
        if type(item) is str:
            keys.append(item)
            total += len(item) + 2
        else:
            frozen = _freeze(item)
            if frozen is None:
                return None
            keys.append(frozen[0])
            total += frozen[1]
        offsets.append(total)
    return (keys, offsets) if total >= BUNDLE else None


def _pairs(raw: list[Any], start: int, level: int) -> Any:
    """The ``2**level`` items of ``raw`` from ``start`` as a tree node: nested pairs."""
    if level == 0:
        return raw[start]
    half = 1 << (level - 1)
    return [_pairs(raw, start, level - 1), _pairs(raw, start + half, level - 1)]


def _unpair(node: Any, level: int) -> list[Any] | None:
    """The ``2**level`` items of a tree node (nested pairs, as :func:`_pairs` makes it),
    or None if it is not that shape."""
    nodes = [node]
    for _height in range(level):
        below: list[Any] = []
        for pair in nodes:
            if type(pair) is not list or len(pair) != 2:
                return None
            below += pair
        nodes = below
    return nodes


def _levels(n: int) -> Iterator[int]:
    """The tree heights of a mountain range of ``n`` leaves, largest first."""
    for level in range(n.bit_length() - 1, -1, -1):
        if n >> level & 1:
            yield level


# -- a checkpoint's values ------------------------------------------------------------------


def externalize_state(state: dict[str, Any], writer: BlobWriter) -> dict[str, Any]:
    """A checkpoint state (:mod:`plait_durable._layout`) with its values rewritten by
    ``writer``; its kind, ids and request fields stay inline, so listings read them
    without blobs.

    The sections that grow as a run goes on are trees when they are large, so that a
    checkpoint holds them whole for what changed since the last one costs: the shared
    state, the executor states and the visit counts (dicts that gain keys,
    :meth:`BlobWriter.externalize_map`), and the outputs (a list that gains items).
    """
    out = dict(state)
    ext = writer.externalize
    pending = out.get("pending")
    if pending and type(pending) is dict:
        out["pending"] = {
            eid: [ext(m) for m in msgs] if type(msgs) is list else msgs
            for eid, msgs in pending.items()
        }
    router_state = out.get("router_state")
    if router_state and type(router_state) is dict:
        out["router_state"] = {key: ext(value) for key, value in router_state.items()}
    for section in ("executor_state", "shared", "visits"):
        values = out.get(section)
        if type(values) is dict and TAG not in values:
            if values:
                out[section] = writer.externalize_map(values)
        elif section in out:
            out[section] = ext(values)
    outputs = out.get("outputs")
    if outputs and type(outputs) is list:
        out["outputs"] = ext(outputs)
    requests = out.get("requests")
    if requests and type(requests) is list:
        out["requests"] = [
            {**r, "request": ext(r["request"])} if type(r) is dict and "request" in r else r
            for r in requests
        ]
    return out


def _walk_refs(value: Any, found: set[str]) -> None:
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        cls = type(item)
        if cls is list:
            extend(item)
        elif cls is dict:
            # _ref_of, inlined: this walk runs over every blob a resume reads
            if len(item) == 2 and item.get(TAG) == _BLOB and type(digest := item.get("h")) is str:
                found.add(digest)
            else:
                extend(item.values())


def blob_refs(value: Any) -> set[str]:
    """The hashes ``value`` (a checkpoint's state, or a blob's JSON) names directly."""
    found: set[str] = set()
    _walk_refs(value, found)
    return found


def child_refs(data: bytes) -> list[str]:
    """The hashes a stored blob names directly, sorted (empty if it does not parse: an
    encrypted blob, say). A store that keeps them beside the blob can return a blob's
    whole closure in one round trip (``get_blob_closure``)."""
    try:
        return sorted(blob_refs(load_blob(data)))
    except (ValueError, TypeError, RecursionError):
        return []


def has_refs(value: Any) -> bool:
    """Whether ``value`` holds a reference or a tree (what :func:`resolve_state` rebuilds;
    a tree whose nodes are all small holds no reference)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            if item.get(TAG) in (_BLOB, _SEQ, _TEXT, _MAP):
                return True
            stack.extend(item.values())
    return False


def unreferenced(states: Iterable[Any], blobs: Mapping[str, bytes]) -> set[str]:
    """The hashes of ``blobs`` (one run's, hash -> bytes) that none of ``states`` (the
    states of the checkpoints that stay) reaches, directly or through other blobs: what
    a prune may delete. If a blob they reach does not parse (an encrypted one: a sealed
    store's), what it reaches is unknown, so nothing is: a blob kept too long is an
    orphan, never a dangling reference."""
    reached: set[str] = set()
    frontier: set[str] = set()
    for state in states:
        _walk_refs(state, frontier)
    while frontier:
        digest = frontier.pop()
        if digest in reached or digest not in blobs:
            continue
        reached.add(digest)
        try:
            parsed = load_blob(blobs[digest])
        except (ValueError, TypeError, RecursionError):
            return set()
        _walk_refs(parsed, frontier)
    return set(blobs) - reached


def unreferenced_by(stored: Iterable[bytes], blobs: Mapping[str, bytes]) -> set[str]:
    """:func:`unreferenced` for a store's sweep: ``stored`` are the bytes
    (:func:`~plait_durable.encode_checkpoint`) of the run's remaining checkpoints. If one of
    them does not decode, nothing is swept (its references are unknown, and a blob
    kept too long is an orphan, never a dangling reference). A reference in a
    checkpoint's metadata (a pinned document, :mod:`plait_durable._document`) keeps its
    blob as one in its state does."""
    states = []
    for data in stored:
        try:
            decoded = decode_checkpoint(data)
        except CheckpointError:
            return set()
        states.append(decoded.state)
        states.append(decoded.metadata)  # a pinned document's blob is named there
    return unreferenced(states, blobs)


#: ``get_blobs(run_id, hashes) -> {hash: bytes}`` of a store, as :func:`resolve_state`
#: calls it.
Fetch = Callable[[str, Collection[str]], Awaitable[Mapping[str, bytes]]]


async def resolve_state(
    state: dict[str, Any],
    *,
    store: Any,
    run_id: str,
    where: str,
    seen: set[str] | None = None,
    strings: dict[int, tuple[str, str]] | None = None,
    read: Mapping[str, bytes] | None = None,
    nodes: list[ReadNode] | None = None,
) -> dict[str, Any]:
    """``state`` with every reference rebuilt from the blobs of run ``run_id`` in
    ``store``: only the blobs it names, fetched a level at a time, each verified.

    :param where: names the checkpoint in errors (``run 'r1', checkpoint 'c7'``).
    :param seen: if given, the hashes of every blob read are added to it.
    :param strings: if given, ``id(s) -> (s, hash)`` for every string read from a blob
        (what :class:`BlobWriter` caches, so a resumed run does not hash them again).
    :param read: blobs of the run read already (hash -> bytes, as the store keeps them:
        what ``load_with_blobs`` gave with the checkpoint), used before asking the store;
        each is verified like any other, and one that does not check is an error, as if
        the store had returned it.
    :param nodes: if given, every tree node read from a blob of :data:`BUNDLE` bytes or
        more is appended to it (:data:`ReadNode`: what :class:`BlobWriter` takes, so a
        resumed run does not encode those bundles again).
    :raises CorruptCheckpointError: a blob is missing, does not inflate (or inflates
        beyond the bounds), does not match its hash, does not parse, or a structure is
        malformed; or ``state`` names blobs and ``store``
        keeps none.
    """
    if not has_refs(state):
        return state
    frontier = blob_refs(state)
    if frontier and not has_blobs(store):
        raise CorruptCheckpointError(
            f"{where} is corrupt: it references blob {min(frontier)} but the store keeps no blobs"
        )
    fetch: Fetch = store.get_blobs
    # a store that keeps each blob's references (or walks them itself, in its worker
    # thread) fetches what the first ones reach in one round trip; whatever it leaves out
    # is fetched level by level, as from any store
    closure: Fetch | None = getattr(store, "get_blob_closure", None)
    parsed: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    extra: Mapping[str, bytes] = read or {}
    most, blob_limit = max_expansion(), max_blob()
    budget = most  # what the blobs may inflate to, all together
    missing = sorted(frontier.difference(extra))
    if missing and closure is not None:
        more = await closure(run_id, missing)
        extra = {**extra, **more} if extra else more
    while frontier:
        wanted = list(frontier)  # any order: an error names the first problem by hash
        if all(digest in extra for digest in wanted):
            got = extra
        else:
            got = {**extra, **await fetch(run_id, [h for h in wanted if h not in extra])}
        # blob by blob: each inflated, checked, parsed and searched while its bytes are
        # still in the CPU's cache, and dropped before the next is inflated (rather than
        # the whole level inflated first: 2 MB of bundles at once); any problem, and the
        # blobs are checked again one by one, in hash order, to name the first
        frontier = set()
        good = False
        try:
            for digest in wanted:
                data = unpack_blob(bytes(got[digest]), min(blob_limit, budget))
                budget -= len(data)
                if blob_hash(data) != digest:
                    break
                value = parsed[digest] = load_json(data)
                sizes[digest] = len(data)
                cls = type(value)
                if cls is str:
                    if strings is not None:
                        strings[id(value)] = (value, digest)
                elif cls is dict or (cls is list and b"{" in data):
                    # a reference is a JSON object: a list without a "{" byte (a bundle
                    # of strings, say) holds none, and a byte search costs less than the walk
                    _walk_refs(value, frontier)
            else:
                good = True
        except (KeyError, ValueError, TypeError, RecursionError):
            pass
        if not good:
            _first_problem(sorted(wanted), got, where, blob_limit, most)
        frontier -= parsed.keys()
    if seen is not None:
        seen.update(parsed)
    try:
        return _Expander(parsed, sizes, where, nodes, most).value(state)  # type: ignore[no-any-return]
    except RecursionError:
        raise CorruptCheckpointError(f"{where} is corrupt: its values nest too deeply") from None


def _first_problem(
    wanted: list[str], got: Mapping[str, Any], where: str, blob_limit: int, most: int
) -> NoReturn:
    """Raise for the first of ``wanted`` (sorted) that is missing from ``got``, is too
    large, does not match its hash or does not parse."""
    for digest in wanted:
        data = got.get(digest)
        if data is None:
            raise CorruptCheckpointError(
                f"{where} is corrupt: blob {digest} it references is missing from its run's blobs"
            )
        try:
            data = unpack_blob(bytes(data), blob_limit)
        except ValueError as exc:
            raise CorruptCheckpointError(
                f"{where} is corrupt: blob {digest}: {exc} (the most a blob may hold is "
                f"{blob_limit} bytes; set {MAX_BLOB_VARIABLE} to read a larger one)"
            ) from None
        if blob_hash(data) != digest:
            raise CorruptCheckpointError(
                f"{where} is corrupt: blob {digest} does not match its hash"
            )
        try:
            load_json(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise CorruptCheckpointError(
                f"{where} is corrupt: blob {digest} does not parse: {exc}"
            ) from exc
    # each blob checks alone: together they inflate beyond the checkpoint's budget
    raise CorruptCheckpointError(
        f"{where} is corrupt: its blobs inflate beyond {most} bytes (set "
        f"{MAX_EXPANSION_VARIABLE} to read a larger checkpoint)"
    )


class _Expander:
    """Rebuilds JSON from references and trees, with the blobs already fetched."""

    def __init__(
        self,
        parsed: Mapping[str, Any],
        sizes: Mapping[str, int],
        where: str,
        nodes: list[ReadNode] | None = None,
        most: int = EXPANSION_LIMIT,
    ) -> None:
        self.parsed, self.sizes, self.where = parsed, sizes, where
        self.most = self.budget = most
        self.nodes = nodes  # large tree nodes read from blobs, if asked (resolve_state)

    def bad(self, what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"{self.where} is corrupt: {what}")

    def too_large(self) -> CorruptCheckpointError:
        return self.bad(
            f"its values expand beyond {self.most} bytes (each blob counted at every "
            f"reference to it; set {MAX_EXPANSION_VARIABLE} to read a larger checkpoint)"
        )

    def deref(self, digest: str) -> Any:
        self.budget -= self.sizes[digest]
        if self.budget < 0:
            raise self.too_large()
        return self.parsed[digest]

    def value(self, value: Any) -> Any:
        cls = type(value)
        if cls is list:
            # counted before it is built: a list rebuilt at every reference to its blob
            self.budget -= _CONTAINER + _SLOT * len(value)
            if self.budget < 0:
                raise self.too_large()
            return [self.value(item) for item in value]
        if cls is not dict:
            return value
        kind = value.get(TAG)
        if kind == _BLOB:
            digest = _ref_of(value)
            if digest is None:
                raise self.bad("a blob reference has the wrong shape")
            return self.value(self.deref(digest))
        if kind in (_SEQ, _TEXT, _MAP):
            return self.tree(value, kind)
        self.budget -= _CONTAINER + 4 * _SLOT * len(value)  # a dict's slot: key, value, hash
        if self.budget < 0:
            raise self.too_large()
        return {key: self.value(item) for key, item in value.items()}

    def tree(self, value: dict[str, Any], kind: str) -> Any:
        n, peaks = value.get("n"), value.get("p")
        if (
            len(value) != 3
            or type(n) is not int
            or not 0 <= n <= _MAX_ITEMS
            or type(peaks) is not list
            or len(peaks) != bin(n).count("1")
        ):
            raise self.bad(f"a {kind!r} structure has the wrong shape")
        self.budget -= _CONTAINER + _SLOT * n
        if self.budget < 0:
            raise self.too_large()
        leaves: list[Any] = []
        for peak, level in zip(peaks, _levels(n)):
            self.node(peak, level, leaves)
        if kind == _SEQ:
            return leaves
        if kind == _MAP:
            if not all(
                type(item) is list and len(item) == 2 and type(item[0]) is str for item in leaves
            ):
                raise self.bad("an item of a 'map' structure is not a [key, value] pair")
            mapping = dict(leaves)
            if len(mapping) != len(leaves):
                raise self.bad("a 'map' structure repeats a key")
            return mapping
        if not all(type(piece) is str for piece in leaves):
            raise self.bad("a piece of a 'text' structure is not a string")
        return "".join(leaves)

    def node(self, node: Any, level: int, leaves: list[Any]) -> None:
        """Append the items of tree ``node`` of height ``level`` to ``leaves``, in order.

        A level at a time rather than a call per node: a bundle (a blob holding 2**k items
        inline) is many nodes, and a resume reads every one.
        """
        nodes = [node]
        for height in range(level, 0, -1):
            below: list[Any] = []
            for pair in nodes:
                if type(pair) is dict:
                    digest = _ref_of(pair)
                    if digest is not None:
                        pair = self.deref(digest)
                        if self.nodes is not None and self.sizes[digest] >= BUNDLE:
                            self.nodes.append((digest, pair, height))
                if type(pair) is not list or len(pair) != 2:
                    raise self.bad(f"a tree node of height {height} is not a pair")
                below += pair
            nodes = below
        append, value = leaves.append, self.value
        for item in nodes:
            cls = type(item)
            if cls is str:
                append(item)
                continue
            if cls is dict and len(item) == 2 and item.get(TAG) == _BLOB:
                digest = item.get("h")
                if type(digest) is str:  # a leaf in a blob of its own
                    item = self.deref(digest)
                    append(item if type(item) is str else value(item))
                    continue
            append(value(item))
