"""Where a replay runs: a store that keeps its checkpoints in this process, values
inline (no blobs: nothing to content-address in a run that is read back at once), and
hands each saved checkpoint to the comparison as it is, with no read back."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from plait_durable import Checkpoint, CheckpointInfo, Lease, LeaseHolder

__all__ = ["ScratchStore"]


class ScratchStore:
    """A checkpoint store over a ``memory://`` one that keeps what is saved
    (:attr:`saved`) and no blobs (``supports_blobs``)."""

    #: values stay inline (plait_durable.has_blobs)
    supports_blobs = False

    def __init__(self, url: str) -> None:
        from plait_durable import open_store

        self.url = url
        self.inner = open_store(url)
        #: every checkpoint saved, in order
        self.saved: builtins.list[Checkpoint] = []

    async def save(self, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        await self.inner.save(checkpoint, lease=lease)
        self.saved.append(checkpoint)

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        return await self.inner.acquire_lease(run_id, ttl=ttl, holder=holder)

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        return await self.inner.renew_lease(lease, ttl=ttl)

    async def release_lease(self, lease: Lease) -> None:
        await self.inner.release_lease(lease)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        return await self.inner.load(checkpoint_id)

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        return await self.inner.list(run_id)

    async def latest(self, run_id: str) -> Checkpoint | None:
        return await self.inner.latest(run_id)

    async def delete_run(self, run_id: str) -> int:
        return await self.inner.delete_run(run_id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def read_back(self) -> builtins.list[tuple[Checkpoint, Any]]:
        """Each checkpoint saved with its state (inline: nothing to read back)."""
        return [(checkpoint, checkpoint.state) for checkpoint in self.saved]
