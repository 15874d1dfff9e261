"""Copying a run between stores under a new run id, its values content-addressed again
in the target's blobs: how a replay keeps a re-recorded run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

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
    import uuid

    from plait_durable import (
        BlobWriter,
        externalize_state,
        has_blobs,
        opened_store,
        resolve_state,
    )

    async with opened_store(source) as reading, opened_store(target) as writing:
        infos = await reading.list(run_id)
        keeps_blobs = has_blobs(writing)
        writer = BlobWriter() if keeps_blobs else None
        parent: str | None = None
        for info in infos:
            checkpoint = await reading.load(info.checkpoint_id)
            where = f"run {run_id!r}, checkpoint {info.checkpoint_id!r}"
            state = await resolve_state(
                dict(checkpoint.state), store=reading, run_id=run_id, where=where
            )
            blobs: dict[str, bytes] = {}
            if writer is not None:
                state = externalize_state(state, writer)
                blobs = writer.take_new()
                writer.settle()
            copied = attrs.evolve(
                checkpoint,
                checkpoint_id=uuid.uuid4().hex,
                run_id=new_run_id,
                parent_id=parent,
                state=state,
                metadata={**checkpoint.metadata, **(metadata or {})},
            )
            if blobs:
                await writing.save(copied, blobs=blobs)  # type: ignore[call-arg]
            else:
                await writing.save(copied)
            parent = copied.checkpoint_id
        return len(infos)
