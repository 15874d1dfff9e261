"""Queued runs in the run listings of ``plait runs`` and ``plait ui`` (the
``plait_pending_runs`` hook): a run on the queue that no worker has checkpointed yet has no
checkpoint for a listing to read, so the queue says it is there.

One read of each queue per listing, within :data:`LIST_TIMEOUT` seconds; a queue that
cannot be read raises, and the listing shows a warning and the runs it has.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from plait_durable import RunInfo

from ._client import queued_runs
from ._queue import DEFAULT_QUEUE, METADATA_KEY, QueueError, queue_url

__all__ = ["LIST_TIMEOUT", "LISTED", "pending_runs"]

#: Seconds a listing waits for one queue before it warns and goes on without it.
LIST_TIMEOUT = 5.0
#: The queue states a listing shows (a ``done`` job's run is listed from its checkpoints).
LISTED = ("queued", "running", "stopping", "cancelled", "aborted", "refused")


async def pending_runs(store: str, queues: Sequence[str] = ()) -> list[RunInfo]:
    """The runs on the default queue and on ``queues`` of the store ``store`` as a listing
    shows them: ``status`` the queue's state, ``workflow`` the submitted target (its name
    is known once a worker loads it), ``created_at``/``updated_at`` when it was queued,
    ``error`` why a worker refused it.

    :raises QueueError: a queue did not answer within :data:`LIST_TIMEOUT` seconds or
        cannot be reached, naming it and the store.
    """
    found: dict[str, RunInfo] = {}
    names = list(dict.fromkeys([DEFAULT_QUEUE, *queues]))
    for at, name in enumerate(names):
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                if at == 0 and not await _has_queues(store):
                    return []
                runs = await queued_runs(store=store, queue=name, states=LISTED)
        except TimeoutError:
            raise QueueError(
                f"queue {name!r} at {store} did not answer within {LIST_TIMEOUT:g} s; queued "
                "runs are not listed"
            ) from None
        for run in runs:
            found.setdefault(
                run.run_id,
                RunInfo(
                    run_id=run.run_id,
                    workflow=run.target,
                    status=run.state,
                    superstep=0,
                    pending_requests=0,
                    error=run.error,
                    created_at=run.queued_at,
                    updated_at=run.queued_at,
                    # (as a worker's checkpoints record it: the queue column reads it)
                    metadata={METADATA_KEY: {"target": run.target, "queue": name}},
                ),
            )
    return list(found.values())


async def _has_queues(store: str) -> bool:
    """Whether the server of ``store`` may hold queued runs: on PostgreSQL, whether saq's
    tables exist (opening a queue creates them, which a listing must not do to a database
    no worker or submit has used); on Redis, always (opening a queue writes nothing)."""
    url = queue_url(store)
    if not url.startswith("postgres"):
        return True
    import psycopg

    try:
        async with await psycopg.AsyncConnection.connect(url) as conn:
            cursor = await conn.execute("SELECT to_regclass('saq_jobs') IS NOT NULL")
            row = await cursor.fetchone()
    except psycopg.Error as exc:
        raise QueueError(f"cannot reach the queues at {store}: {exc}") from exc
    return bool(row and row[0])
