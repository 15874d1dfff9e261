"""Copying a run between stores under a new run id, its values content-addressed again
in the target's blobs: how a replay keeps a re-recorded run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["copy_run"]


async def copy_run(
    source: Any,
    run_id: str,
    target: Any,
    new_run_id: str,
    metadata: Mapping[str, Any] | None = None,
) -> int:
    """Copy every checkpoint of ``run_id`` in ``source`` to ``target`` as run
    ``new_run_id`` (new checkpoint ids, parents kept in order, ``metadata`` added to each
    checkpoint's); return how many were copied."""
    from plait_durable import opened_store, resolve_state

    from ._bundle import write_run

    async with opened_store(source) as reading, opened_store(target) as writing:
        read = []
        for info in await reading.list(run_id):
            checkpoint = await reading.load(info.checkpoint_id)
            where = f"run {run_id!r}, checkpoint {info.checkpoint_id!r}"
            state = await resolve_state(
                dict(checkpoint.state), store=reading, run_id=run_id, where=where
            )
            read.append((checkpoint, state))
        return await write_run(writing, new_run_id, read, metadata)
