"""A cancelled run's record in its checkpoints: ``plait cancel`` stops a run at its next
superstep boundary, and this says so where ``plait runs`` and ``Workflow.resume`` look.

The record is the run's existing ``failed`` status (the kernel's word for a run that was
cancelled: see :meth:`plait.spi.RunObserver.run_finished`), written as one more
checkpoint of the run under its lease: the same state and superstep as the checkpoint the
run stopped at, its ``metadata["error"]`` naming the cancellation (``plait runs`` shows it
as the run's error: ``RunCancelled: cancelled with plait cancel …``), and
``metadata["workers"]["cancelled"]`` saying when and by which worker. A worker delivered
the run again finds it failed and runs nothing; ``plait resume`` of it resumes from the
superstep it stopped at, if someone wants it after all.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import attrs
from plait import RunStatus

from ._queue import METADATA_KEY

__all__ = ["CANCELLED_ERROR", "cancelled_record", "record_cancel"]

#: The error type a cancelled run's last checkpoint names.
CANCELLED_ERROR = "RunCancelled"


def cancelled_record(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The cancellation a checkpoint's ``metadata`` records (``at``, ``by``,
    ``superstep``), or ``None`` when it records none. Metadata is read from a store:
    anything but the mapping a worker writes reads as none."""
    record = metadata.get(METADATA_KEY)
    found = record.get("cancelled") if isinstance(record, Mapping) else None
    return found if isinstance(found, Mapping) else None


async def record_cancel(store: Any, run_id: str, *, by: str, lease_ttl: float) -> bool:
    """Record that the run ``run_id``, stopped at a superstep boundary, was cancelled:
    a checkpoint like its latest, ``failed`` with a ``RunCancelled`` error, written under
    the run's lease. Nothing is written when the run is not ``running`` (it ended, or its
    cancellation is recorded already). Whether it wrote.

    :param store: the run's opened checkpoint store.
    :param by: who cancelled it (the worker's name).
    :raises plait_durable.RunLeaseError: a live worker holds the run's lease.
    """
    if not await _running(store, run_id):
        return False
    lease = await store.acquire_lease(run_id, ttl=lease_ttl)
    try:
        latest = await store.latest(run_id)  # again, under the lease
        if latest is None or latest.status != RunStatus.RUNNING.value:
            return False
        now = time.time()
        workers = latest.metadata.get(METADATA_KEY)
        cancelled = {"at": now, "by": by, "superstep": latest.superstep}
        metadata = {
            **latest.metadata,
            "error": {
                "type": CANCELLED_ERROR,
                "message": f"cancelled with plait cancel; stopped after superstep "
                f"{latest.superstep} (worker {by})",
                "superstep": latest.superstep,
            },
            METADATA_KEY: {
                **(workers if isinstance(workers, Mapping) else {}),
                "cancelled": cancelled,
            },
        }
        record = attrs.evolve(
            latest,
            checkpoint_id=uuid.uuid4().hex,
            parent_id=latest.checkpoint_id,
            status=RunStatus.FAILED.value,
            created_at=now,
            metadata=metadata,
        )
        await store.save(record, lease=lease)
        return True
    finally:
        await store.release_lease(lease)


async def _running(store: Any, run_id: str) -> bool:
    latest = await store.latest(run_id)
    return latest is not None and latest.status == RunStatus.RUNNING.value
