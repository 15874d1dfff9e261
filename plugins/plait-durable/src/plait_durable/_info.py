"""What a store lists about a checkpoint without decoding its state
(:class:`CheckpointInfo`), a name of :mod:`plait_durable.checkpoint` and of
``plait_durable``: made when a store's checkpoints are first listed, so a run that only
saves them never builds the class.
"""

from __future__ import annotations

import attrs

__all__ = ["CheckpointInfo"]


@attrs.frozen
class CheckpointInfo:
    """What a store lists about a checkpoint without decoding its state.

    ``base_id`` is :attr:`Checkpoint.base_id`: the full checkpoint a delta an earlier
    Plait wrote builds on (``None`` for a full one: every checkpoint Plait writes now).
    Prune keeps it while a kept checkpoint names it
    (``plait_durable.kit.CheckpointStoreBase._prune_plan``).
    """

    checkpoint_id: str
    run_id: str
    superstep: int
    parent_id: str | None
    status: str
    created_at: float
    base_id: str | None = None
