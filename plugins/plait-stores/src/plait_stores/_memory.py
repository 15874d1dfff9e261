"""``memory://NAME``: checkpoints in this process's memory, shared by name.

The store keeps the bytes :func:`~plait.checkpoint.encode_checkpoint` makes, not the
objects, so every load decodes and checks integrity exactly as a durable store does:
a test that passes on ``memory://`` exercises the same encoding a real run uses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

import anyio.lowlevel
from plait.checkpoint import (
    Checkpoint,
    CheckpointInfo,
    RunInfo,
    check_keep_last,
    check_runs_limit,
    decode_checkpoint,
    encode_checkpoint,
    prune_plan,
)
from plait.errors import CheckpointNotFoundError
from plait.leases import Lease, LeaseHolder, lost_error, released
from plait.stores import CheckpointStoreBase, duplicate_error, run_info, take_lease, where

__all__ = ["MemoryCheckpointStore"]


class _Entry:
    __slots__ = ("data", "info", "seq")

    def __init__(self, info: CheckpointInfo, data: bytes, seq: int) -> None:
        self.info = info
        self.data = data
        self.seq = seq  # the space's save counter: newest first across runs


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

    .. versionadded:: 0.1
    """

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

    async def save(self, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        """Store ``checkpoint`` (saving the same checkpoint again does nothing); with
        ``lease``, only while it is the run's current lease."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        data = encode_checkpoint(checkpoint)
        space = self._space
        with space.lock:
            if lease is not None:
                current = space.leases.get(checkpoint.run_id)
                if current is None or current[0] != lease.token:
                    raise lost_error(lease, self.url, current[1] if current else None)
            existing = space.entries.get(checkpoint.checkpoint_id)
            if existing is not None:
                if existing.data != data:
                    raise duplicate_error(checkpoint, self.url)
                return
            space.saved += 1
            space.entries[checkpoint.checkpoint_id] = _Entry(checkpoint.info, data, space.saved)
            space.runs.setdefault(checkpoint.run_id, {})[checkpoint.checkpoint_id] = None

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Decode and return the checkpoint ``checkpoint_id``."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        with self._space.lock:
            entry = self._space.entries.get(checkpoint_id)
        if entry is None:
            raise CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in {self.url}")
        return decode_checkpoint(
            entry.data,
            where=where(entry.info.run_id, checkpoint_id),
            expect_run=entry.info.run_id,
            expect_id=checkpoint_id,
        )

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            ids = space.runs.get(run_id, {})
            return [space.entries[i].info for i in ids]

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The checkpoint of ``run_id`` saved last, or ``None``."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            ids = space.runs.get(run_id)
            if not ids:
                return None
            last = next(reversed(ids))
            entry = space.entries[last]
        return decode_checkpoint(
            entry.data, where=where(run_id, last), expect_run=run_id, expect_id=last
        )

    async def runs(self, *, limit: int | None = None) -> Sequence[RunInfo]:
        """Every run, newest first (by its latest checkpoint), at most ``limit``."""
        check_runs_limit(limit)
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            found = [
                (space.entries[next(reversed(ids))], space.entries[next(iter(ids))].info)
                for ids in space.runs.values()
                if ids
            ]
        found.sort(key=lambda pair: pair[0].seq, reverse=True)
        out = []
        for entry, first in found[:limit]:
            info = entry.info
            listed = run_info(
                entry.data,
                run_id=info.run_id,
                checkpoint_id=info.checkpoint_id,
                url=self.url,
                created_at=first.created_at,
            )
            out.append(listed)
        return out

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            entry = space.entries.pop(checkpoint_id, None)
            if entry is not None:
                self._unindex(entry.info.run_id, [checkpoint_id])

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went."""
        check_keep_last(keep_last)
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            infos = [space.entries[i].info for i in space.runs.get(run_id, {})]
            doomed = prune_plan(infos, keep_last)
            for checkpoint_id in doomed:
                del space.entries[checkpoint_id]
            self._unindex(run_id, doomed)
            return len(doomed)

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id``; return how many went."""
        return await self.prune(run_id, keep_last=0)

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :mod:`plait.leases`)."""
        await anyio.lowlevel.checkpoint()
        self._check_open()
        space = self._space
        with space.lock:
            lease = take_lease(run_id, space.leases.get(run_id), holder, ttl, self.url)
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
                raise lost_error(lease, self.url, current[1] if current else None)
            renewed = Lease(lease.run_id, lease.token, lease.holder, time.time() + ttl)
            space.leases[lease.run_id] = (lease.token, lease.holder, renewed.expires_at)
            return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give ``lease`` up; its token stays used."""
        released(lease)
        self._check_open()
        space = self._space
        with space.lock:
            current = space.leases.get(lease.run_id)
            if current is not None and current[0] == lease.token:
                space.leases[lease.run_id] = (lease.token, None, 0.0)

    def _unindex(self, run_id: str, checkpoint_ids: Sequence[str]) -> None:
        ids = self._space.runs.get(run_id)
        if ids is None:
            return
        for checkpoint_id in checkpoint_ids:
            ids.pop(checkpoint_id, None)
        if not ids:
            del self._space.runs[run_id]
