"""``memory://NAME``: checkpoints in this process's memory, shared by name.

The store keeps the bytes :func:`~plait_durable.encode_checkpoint` makes, not the
objects, so every load decodes and checks integrity exactly as a durable store does:
a test that passes on ``memory://`` exercises the same encoding a real run uses.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio.lowlevel
from plait_durable import (
    Checkpoint,
    CheckpointInfo,
    Lease,
    LeaseHolder,
    RunPage,
    RunQuery,
    RunSummary,
)
from plait_durable.kit import CheckpointStoreBase

__all__ = ["MemoryCheckpointStore"]


class _Entry:
    """A stored checkpoint: its listing fields as a row (what a save has at hand; the
    :class:`~plait_durable.CheckpointInfo` is made when it is listed), its bytes and the
    space's save counter (newest first across runs)."""

    __slots__ = ("data", "row", "seq")

    def __init__(self, row: tuple[Any, ...], data: bytes, seq: int) -> None:
        self.row = row
        self.data = data
        self.seq = seq

    @property
    def info(self) -> CheckpointInfo:
        """The listing fields of the checkpoint."""
        return CheckpointInfo(*self.row)


class _Indexed:
    """A run as the run index keeps it: the seq and the record of its latest checkpoint,
    when its first was taken and that first one's metadata. The summary is made when the
    index is read, not at every save (a run saves far more often than it is listed)."""

    __slots__ = ("created_at", "first_metadata", "latest", "seq", "summary")

    def __init__(
        self, seq: int, latest: Checkpoint, created_at: float, first_metadata: Mapping[str, Any]
    ) -> None:
        self.seq = seq
        self.latest = latest
        self.created_at = created_at
        self.first_metadata = first_metadata
        self.summary: RunSummary | None = None

    def summarised(self) -> RunSummary:
        """The run's :class:`~plait_durable.RunSummary` (made once)."""
        if self.summary is None:
            self.summary = RunSummary.from_checkpoints(
                self.latest, created_at=self.created_at, first_metadata=self.first_metadata
            )
        return self.summary


class _Space:
    """One named set of checkpoints. The lock is a thread lock because a space is
    process-wide: stores in different threads (each with its own event loop) share it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, _Entry] = {}
        # run id -> checkpoint ids in insertion order (dicts keep insertion order)
        self.runs: dict[str, dict[str, None]] = {}
        # run id -> (fencing token, holder or None once released, expires at)
        self.leases: dict[str, tuple[int, LeaseHolder | None, float]] = {}
        self.saved = 0
        # the run index: run id -> its latest checkpoint, summarised when listed
        self.summaries: dict[str, _Indexed] = {}
        # run id -> hash -> the blob's bytes (one bytes object, shared by every
        # checkpoint of the run that references it)
        self.blobs: dict[str, dict[str, bytes]] = {}
        # the event journal: run id -> events as stored (seq, JSON text), oldest first
        self.journal: dict[str, list[tuple[int, str]]] = {}


_spaces: dict[str, _Space] = {}
_spaces_lock = threading.Lock()


def _space_named(name: str) -> _Space:
    with _spaces_lock:
        space = _spaces.get(name)
        if space is None:
            space = _spaces[name] = _Space()
        return space


class MemoryCheckpointStore(CheckpointStoreBase):
    """Checkpoints held in this process's memory.

    Stores opened with the same name (``memory://NAME``, or
    ``MemoryCheckpointStore("NAME")``) share their checkpoints within the process, so a run
    and a later ``resume`` in the same process find each other; ``memory://`` is the
    shared space named ``""``. ``MemoryCheckpointStore()`` with no name is private.
    Nothing survives the process: use ``file://`` or ``sqlite://`` for that.
    """

    KIND = "memory"

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.url = "memory://(private)" if name is None else f"memory://{name}"
        self._space = _Space() if name is None else _space_named(name)

    @classmethod
    def from_url(cls, url: str) -> MemoryCheckpointStore:
        """Open ``memory://NAME`` (``memory://`` is the default shared space)."""
        parts = urlsplit(url)
        if parts.scheme.lower() != "memory" or parts.query or parts.fragment:
            raise ValueError(f"not a memory store url: {url!r} (expected memory://NAME)")
        return cls(unquote(parts.netloc + parts.path))

    @classmethod
    def discard(cls, name: str) -> None:
        """Forget the shared space ``name`` and every checkpoint in it."""
        with _spaces_lock:
            _spaces.pop(name, None)

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        events: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """Store the checkpoint, its new ``blobs`` and its journal ``events`` under the
        space's lock: nobody sees one without the others."""
        space = self._space
        with space.lock:
            self._check_lease(checkpoint.run_id, lease)
            existing = space.entries.get(checkpoint.checkpoint_id)
            if existing is not None:
                if existing.data != data:
                    raise self._duplicate(checkpoint)
                return
            if blobs:
                held = space.blobs.setdefault(checkpoint.run_id, {})
                for digest, blob in blobs.items():
                    held.setdefault(digest, bytes(blob))
            space.saved += 1
            row = self._info_row(checkpoint)
            space.entries[checkpoint.checkpoint_id] = _Entry(row, data, space.saved)
            space.runs.setdefault(checkpoint.run_id, {})[checkpoint.checkpoint_id] = None
            _index_saved(space, checkpoint)
            if events:
                _journal_append(space, checkpoint.run_id, events)

    async def _append(self, run_id: str, events: Sequence[str], lease: Lease | None) -> None:
        """Append journal lines of ``run_id`` under the space's lock."""
        await anyio.lowlevel.checkpoint()
        with self._space.lock:
            self._check_lease(run_id, lease)
            _journal_append(self._space, run_id, events)

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The journal lines of ``run_id`` after ``after`` (a binary search)."""
        await anyio.lowlevel.checkpoint()
        with self._space.lock:
            stored = self._space.journal.get(run_id, [])
            start = bisect.bisect_right(stored, after, key=lambda pair: pair[0])
            return stored[start : start + limit]

    def _check_lease(self, run_id: str, lease: Lease | None) -> None:
        """Under the space's lock: refuse a write with a lease that is not current."""
        if lease is not None:
            current = self._space.leases.get(run_id)
            if current is None or current[0] != lease.token:
                raise self._lost(lease, current[1] if current else None)

    async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
        """The run and bytes of ``checkpoint_id``."""
        await anyio.lowlevel.checkpoint()
        with self._space.lock:
            entry = self._space.entries.get(checkpoint_id)
        return None if entry is None else (entry.info.run_id, entry.data)

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (one that is missing is left out)."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        with self._space.lock:
            held = self._space.blobs.get(run_id, {})
            return {digest: held[digest] for digest in hashes if digest in held}

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        with self._space.lock:
            return sorted(self._space.blobs.get(run_id, {}))

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            ids = space.runs.get(run_id, {})
            return [space.entries[i].info for i in ids]

    async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
        """The id and bytes of the checkpoint of ``run_id`` saved last."""
        await anyio.lowlevel.checkpoint()
        space = self._space
        with space.lock:
            ids = space.runs.get(run_id)
            if not ids:
                return None
            last = next(reversed(ids))
            return last, space.entries[last].data

    async def _heads(self, limit: int | None) -> Sequence[tuple[str, str, bytes, float | None]]:
        """Each run's last checkpoint and first time, newest run first."""
        await anyio.lowlevel.checkpoint()
        space = self._space
        with space.lock:
            found = [
                (space.entries[next(reversed(ids))], space.entries[next(iter(ids))].info)
                for ids in space.runs.values()
                if ids
            ]
        found.sort(key=lambda pair: pair[0].seq, reverse=True)
        return [
            (last.info.run_id, last.info.checkpoint_id, last.data, first.created_at)
            for last, first in found[:limit]
        ]

    async def list_runs(self, query: RunQuery) -> RunPage:
        """A page of the run index (:class:`plait_durable.RunIndex`), newest first, from
        the summaries kept as checkpoints are saved (nothing is decoded)."""
        after = self._cursor_position(query.cursor)
        await anyio.lowlevel.checkpoint()
        self._check_open()
        with self._space.lock:
            indexed = sorted(self._space.summaries.values(), key=lambda run: -run.seq)
            listed = [(run.seq, run.summarised()) for run in indexed]
        picked: list[tuple[int, RunSummary]] = []
        for seq, summary in listed:
            if (after is not None and seq >= after) or not query.matches(summary):
                continue
            if len(picked) == query.limit:
                return RunPage([s for _, s in picked], str(picked[-1][0]))
            picked.append((seq, summary))
        return RunPage([s for _, s in picked], None)

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            entry = space.entries.pop(checkpoint_id, None)
            if entry is not None:
                self._unindex(entry.info.run_id, [checkpoint_id])
                self._sweep(entry.info.run_id)

    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went."""
        await anyio.lowlevel.checkpoint()
        space = self._space
        with space.lock:
            infos = [space.entries[i].info for i in space.runs.get(run_id, {})]
            doomed = self._prune_plan(infos, keep_last)
            for checkpoint_id in doomed:
                del space.entries[checkpoint_id]
            self._unindex(run_id, doomed)
            self._sweep(run_id)
            return len(doomed)

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its journal; return how many
        checkpoints went."""
        removed = await self.prune(run_id, keep_last=0)
        with self._space.lock:
            self._space.journal.pop(run_id, None)
        return removed

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :class:`~plait_durable.Lease`)."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            lease = self._take_lease(run_id, space.leases.get(run_id), holder, ttl)
            space.leases[run_id] = (lease.token, lease.holder, lease.expires_at)
            return lease

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now, unless it was taken over."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            current = space.leases.get(lease.run_id)
            if current is None or current[0] != lease.token:
                raise self._lost(lease, current[1] if current else None)
            renewed = Lease(lease.run_id, lease.token, lease.holder, time.time() + ttl)
            space.leases[lease.run_id] = (lease.token, lease.holder, renewed.expires_at)
            return renewed

    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if it is still the run's."""
        space = self._space
        with space.lock:
            current = space.leases.get(lease.run_id)
            if current is not None and current[0] == lease.token:
                space.leases[lease.run_id] = (lease.token, None, 0.0)

    def _sweep(self, run_id: str) -> None:
        """Drop the blobs of ``run_id`` that no remaining checkpoint reaches (under the
        lock)."""
        space = self._space
        held = space.blobs.get(run_id)
        if held is None:
            return
        ids = space.runs.get(run_id, {})
        for digest in self._unreferenced([space.entries[i].data for i in ids], held):
            del held[digest]
        if not held:
            del space.blobs[run_id]

    def _unindex(self, run_id: str, checkpoint_ids: Sequence[str]) -> None:
        ids = self._space.runs.get(run_id)
        if ids is None:
            return
        for checkpoint_id in checkpoint_ids:
            ids.pop(checkpoint_id, None)
        if not ids:
            del self._space.runs[run_id]
        self._reindex(run_id)

    def _reindex(self, run_id: str) -> None:
        """Rebuild the index entry of ``run_id`` after checkpoints of it went (under the
        lock)."""
        space = self._space
        space.summaries.pop(run_id, None)
        ids = space.runs.get(run_id)
        if not ids:
            return
        first = space.entries[next(iter(ids))]
        last = space.entries[next(reversed(ids))]
        decoded = [self._decode(e.data, run_id, e.info.checkpoint_id) for e in (first, last)]
        space.summaries[run_id] = _Indexed(
            last.seq, decoded[1], first.info.created_at, decoded[0].metadata
        )


def _journal_append(space: _Space, run_id: str, stored: Sequence[str]) -> None:
    """Number and keep journal events of ``run_id`` (under the space's lock)."""
    if not stored:
        return
    journal = space.journal.setdefault(run_id, [])
    last = journal[-1][0] if journal else 0
    journal.extend((last + i, text) for i, text in enumerate(stored, start=1))


def _index_saved(space: _Space, checkpoint: Checkpoint) -> None:
    """Index the run of ``checkpoint``, just saved (under the space's lock)."""
    known = space.summaries.get(checkpoint.run_id)
    if known is None:  # the first checkpoint says when the run started, and its origin
        space.summaries[checkpoint.run_id] = _Indexed(
            space.saved, checkpoint, checkpoint.created_at, checkpoint.metadata
        )
    else:
        known.seq, known.latest, known.summary = space.saved, checkpoint, None
