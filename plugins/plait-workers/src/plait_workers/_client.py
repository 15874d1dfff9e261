"""What a program (or ``plait submit``, ``plait cancel``, ``plait answer``) does to the
queue: put a run on it, take it off, answer a run that waits, list what is queued.

Each returns at once: none of them runs a workflow. A worker (:mod:`plait_workers._worker`)
does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._jobs import CANCEL_META
from ._queue import (
    DEFAULT_QUEUE,
    METADATA_KEY,
    QueueError,
    RunOrder,
    job_for,
    open_queue,
    queue_url,
)

__all__ = ["CANCELLED", "QueuedRun", "answer", "cancel", "queued_runs", "submit", "submit_many"]

#: The error a cancelled run's job finishes with (``plait queue`` shows it as cancelled).
CANCELLED = "cancelled"
#: Runs :func:`submit_many` puts on the queue in one transaction.
_BATCH = 500


def _target_text(target: str, format: str | None) -> str:
    """``target`` as a worker in another folder names it: a document's absolute path (it
    must exist now), or ``module:attr`` / ``file.py:attr`` as given (a ``.py`` path made
    absolute).

    :raises QueueError: naming the target and what is wrong with it.
    """
    from plait_cli import TargetError, parse_target

    try:
        parsed = parse_target(target, format=format)
    except TargetError as exc:
        raise QueueError(str(exc)) from exc
    return str(parsed.absolute())


async def submit(
    target: str,
    input: Any = None,
    *,
    store: str,
    queue: str = DEFAULT_QUEUE,
    run_id: str | None = None,
    format: str | None = None,
) -> str:
    """Put a run of the workflow ``target`` on ``input`` on the queue; return its id at once.

    A worker (``plait worker --checkpoint STORE``) takes it, runs it with checkpoints in
    ``store`` and its lease there, and loads ``target`` only as its own grants allow.

    :param target: a workflow document's path, or ``module:attr`` / ``path/file.py:attr``
        naming a :class:`plait.Workflow` (as ``plait run`` takes it).
    :param input: the run's first message (JSON-ready).
    :param store: the checkpoint store's URL, on PostgreSQL or Redis; the queue lives there.
    :param queue: the queue's name.
    :param run_id: the run's id (default: a new one); a run already queued or running under
        this id is an error.
    :param format: a document's format, when its suffix does not say.
    :raises QueueError: the store is not on PostgreSQL or Redis, the target is not a
        workflow, or ``run_id`` is on the queue already.
    """
    queue_url(store)  # the store's kind is checked before anything is read
    order = RunOrder(
        run_id=run_id or uuid.uuid4().hex,
        target=_target_text(target, format),
        format=format,
        input=input,
    )
    async with open_queue(store, queue, client=True) as opened:
        await _enqueue(opened, order, store, queue)
    return order.run_id


async def submit_many(
    target: str,
    inputs: Iterable[Any],
    *,
    store: str,
    queue: str = DEFAULT_QUEUE,
    format: str | None = None,
) -> list[str]:
    """Put a run of ``target`` on the queue for each of ``inputs``, over one connection to
    the queue; return their ids, in the order of ``inputs``. What :func:`submit` does for
    each, without a connection per run, in batches (on PostgreSQL one transaction of one
    round trip each).

    :raises QueueError: as :func:`submit`; the runs before the one that failed are queued.
    """
    queue_url(store)
    text = _target_text(target, format)
    orders = [
        RunOrder(run_id=uuid.uuid4().hex, target=text, format=format, input=value)
        for value in inputs
    ]
    async with open_queue(store, queue, client=True) as opened:
        ours: Any = opened  # (a RunQueue of plait_workers._redis or ._postgres)
        for start in range(0, len(orders), _BATCH):
            batch = orders[start : start + _BATCH]
            queued = await ours.enqueue_many([job_for(order, queue=opened) for order in batch])
            for order, job in zip(batch, queued):
                if job is None:
                    raise QueueError(
                        f"run {order.run_id} is already on queue {queue!r} at {store} "
                        "(queued or running); one job per run"
                    )
    return [order.run_id for order in orders]


async def _enqueue(opened: Any, order: RunOrder, store: str, queue: str) -> None:
    if await opened.enqueue(job_for(order, queue=opened)) is None:
        raise QueueError(
            f"run {order.run_id} is already on queue {queue!r} at {store} (queued or "
            "running); one job per run"
        )


async def _latest(store: str, run_id: str) -> Any:
    from plait_durable import opened_store

    async with opened_store(store) as opened:
        return await opened.latest(run_id)


async def answer(
    run_id: str,
    responses: Mapping[str, Any],
    *,
    store: str,
    queue: str = DEFAULT_QUEUE,
) -> None:
    """Answer requests of the run ``run_id``, which waits for them, and put it back on the
    queue: a worker resumes it with ``responses`` (what ``plait answer`` does).

    The run held no worker while it waited; the worker that takes it checks each answer
    against the request's type (a wrong one leaves the request pending).

    :param responses: answers by request id (JSON values).
    :raises QueueError: the run has no checkpoint in ``store``, does not wait for answers,
        was not started by a worker, or is on the queue already.
    """
    if not responses:
        raise QueueError(f"run {run_id}: no answers given")
    latest = await _latest(store, run_id)
    if latest is None:
        raise QueueError(f"no run {run_id!r} in {store}")
    if latest.status != "idle_with_pending_requests":
        raise QueueError(
            f"run {run_id} in {store} is {latest.status}, not waiting for answers; only a "
            "run waiting for requests is answered"
        )
    record = latest.metadata.get(METADATA_KEY)
    if not isinstance(record, Mapping):
        raise QueueError(
            f"run {run_id} in {store} was not started by a worker; answer it with "
            "plait resume TARGET RUN_ID --respond REQUEST_ID=JSON"
        )
    order = RunOrder.from_json({**record, "run_id": run_id, "responses": dict(responses)})
    async with open_queue(store, queue, client=True) as opened:
        if await opened.enqueue(job_for(order, queue=opened)) is None:
            raise QueueError(f"run {run_id} is already on queue {queue!r} at {store}")


async def cancel(run_id: str, *, store: str, queue: str = DEFAULT_QUEUE) -> str:
    """Stop the run ``run_id``: a queued run never starts; a running one stops at its next
    superstep boundary, once that superstep is checkpointed, and its lease is given back;
    its worker then records the cancellation in its checkpoints (``failed``, with a
    ``RunCancelled`` error: see docs/workers.md).

    :returns: ``"queued"`` or ``"running"``: what the run was when cancelled.
    :raises QueueError: the run is not queued or running on ``queue``.
    """
    from saq.job import Status

    async with open_queue(store, queue, client=True) as opened:
        job = await opened.job(run_id)
        if job is None or job.status not in (Status.QUEUED, Status.ACTIVE):
            state = "not on the queue" if job is None else _state(job)
            raise QueueError(
                f"run {run_id} is {state} on queue {queue!r} at {store}: only a queued or "
                "running run can be cancelled"
            )
        was = "queued" if job.status == Status.QUEUED else "running"
        # a queued run ends cancelled at once (also one waiting to be delivered again);
        # a running run's worker stops it at a boundary and records the cancellation
        await opened.abort(job, CANCELLED)
    return was


@attrs.frozen
class QueuedRun:
    """A run as the queue knows it.

    :param run_id: the run's id.
    :param state: ``queued``, ``running``, ``done`` (its job ended: the checkpoints say
        how), ``cancelled``, ``refused`` (a worker would not load its workflow) or
        ``stopping`` (cancelled, finishing its superstep).
    :param target: the workflow it runs.
    :param worker: the worker running it, if one is.
    :param deliveries: how many times a worker took it.
    :param error: why a refused run was refused.
    :param queued_at: when it was put on the queue (seconds since the epoch).
    """

    run_id: str
    state: str
    target: str
    worker: str | None = None
    deliveries: int = 0
    error: str | None = None
    queued_at: float = 0.0


def _refusal(error: str | None) -> str | None:
    """Why a worker refused a run, out of the traceback the queue keeps."""
    if not error:
        return None
    marker = "RefusedRunError: "
    at = error.rfind(marker)
    return error[at + len(marker) :].strip() if at >= 0 else error.strip().splitlines()[-1]


def _state(job: Any) -> str:
    from saq.job import Status

    if job.status == Status.ABORTING or (
        job.status == Status.QUEUED and (job.meta or {}).get(CANCEL_META)
    ):
        return "stopping"  # (or handed on, cancelled, from a worker that died stopping it)
    if job.status == Status.ABORTED:
        # only plait cancel aborts a run's job (the sweep hands on what it takes)
        return "cancelled" if job.error in (CANCELLED, "abort") else "aborted"
    if job.status == Status.FAILED:
        return "refused"
    if job.status == Status.COMPLETE:
        return "done"
    return "running" if job.status == Status.ACTIVE else "queued"


async def queued_runs(
    *, store: str, queue: str = DEFAULT_QUEUE, states: tuple[str, ...] = ()
) -> list[QueuedRun]:
    """The runs on ``queue`` (those whose job the queue still keeps), oldest first.

    :param states: only these states (default: all).
    """
    found: list[tuple[int, QueuedRun]] = []
    async with open_queue(store, queue, client=True) as opened:
        async for job in opened.iter_jobs():
            if job.function != "plait.run":
                continue
            order = (job.kwargs or {}).get("order") or {}
            state = _state(job)
            if states and state not in states:
                continue
            error = _refusal(job.error) if state == "refused" else None
            target = order.get("target") if isinstance(order, Mapping) else None
            found.append(
                (
                    job.queued,
                    QueuedRun(
                        run_id=job.key,
                        state=state,
                        target=str(target) if target else "?",
                        worker=job.worker_id if state in ("running", "stopping") else None,
                        deliveries=job.attempts,
                        error=error,
                        queued_at=job.queued / 1000,  # (saq keeps milliseconds)
                    ),
                )
            )
    return [run for _, run in sorted(found, key=lambda item: (item[0], item[1].run_id))]
