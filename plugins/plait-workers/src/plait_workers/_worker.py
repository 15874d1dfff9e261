"""``plait worker``: take runs from the queue and run them, with checkpoints and leases.

The queue (saq) delivers a run's job to one worker at a time and, through each job's
heartbeat and the sweep every live worker takes part in, hands the job of a worker that
died to another. Plait's lease stays the guarantee of one writer: a worker that is handed
a run whose lease a live worker still holds gives the job back and is handed it again a
moment later, until the lease is free (released, expired after ``lease_ttl``, or held by a
process of this host that is gone).

A worker loads a run's workflow only as its own command line grants (``--allow``,
``--trust``, ``--allow-imports``): a job is data from the queue, and data never grants.

SIGTERM (or SIGINT) drains the worker: every run it holds stops at its next superstep
boundary once that superstep is checkpointed, gives its lease back and goes back on the
queue for another worker; then the worker exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Mapping
from typing import Any

import anyio
import attrs
from plait import PlaitError, RunStatus

from ._cancel import record_cancel
from ._client import CANCELLED
from ._jobs import CANCEL_META, owned
from ._queue import (
    DEFAULT_QUEUE,
    FUNCTION,
    HEARTBEAT,
    METADATA_KEY,
    QueueError,
    RunOrder,
    open_queue,
)

__all__ = ["RefusedRunError", "Worker", "WorkerSettings"]

logger = logging.getLogger("plait_workers")

#: Seconds between a worker's tries of a run whose lease another (live or just dead)
#: worker holds: the takeover comes at most this long after the lease is free.
LEASE_RETRY = 0.5


class RefusedRunError(PlaitError):
    """A worker will not run a queued run: its workflow needs a capability the worker was
    not granted, names Python code the worker may not import, or is not a workflow. The
    message names the run, the target and the grant that is missing."""


class _Drained(Exception):
    """The run stopped at a superstep boundary because its worker drains: back on the queue."""


class _LeaseHeld(Exception):
    """Another live worker holds the run's lease: back on the queue, tried again later."""


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """How a worker runs.

    :param store: the checkpoint store's URL (PostgreSQL or Redis; the queue lives there).
    :param queue: the queue's name.
    :param concurrency: runs at once in this worker (a waiting run holds none).
    :param allow_imports: the worker may import Python code a run names (``module:attr``
        targets, and documents' ``ref:``s).
    :param grants: the capabilities workflow documents are granted
        (:class:`plait_documents.Grants`; default: none).
    :param lease_ttl: seconds a run's lease lives without renewal; another worker takes a
        dead worker's run over after this long at most.
    :param sweep: seconds between the queue's sweeps for jobs whose worker stopped beating
        (one worker of the queue sweeps at a time; a sweep hands each such job on at once).
    """

    store: str
    queue: str = DEFAULT_QUEUE
    concurrency: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    allow_imports: bool = False
    grants: Any = None
    lease_ttl: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))
    sweep: int = attrs.field(default=1, validator=attrs.validators.ge(1))


class Worker:
    """A worker process's loop: :meth:`serve` takes runs until :meth:`drain`.

    :param settings: how it runs.
    """

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        #: this worker's name on the queue (host and process id)
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        # by run id and delivery: a delivery handed on from this worker (thought dead under
        # load) may still be stopping when the next delivery of the run comes here
        self._stops: dict[tuple[str, int], anyio.Event] = {}
        #: the deliveries the heartbeat beats for: the job, its run's stop, why it stopped
        self._beating: dict[tuple[str, int], tuple[Any, anyio.Event, list[str]]] = {}
        self._draining = False
        # jobs between saq's before_process and after_process: a drained run's job is
        # back on the queue only once saq has retried it (after_process comes after)
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._store: Any = None
        self._saq: Any = None
        self._drained = asyncio.Event()

    @property
    def running(self) -> list[str]:
        """The ids of the runs this worker runs now."""
        return sorted({run_id for run_id, _ in self._stops})

    async def serve(self, *, handle_signals: bool = True) -> None:
        """Take runs and run them until :meth:`drain` (or SIGTERM/SIGINT with
        ``handle_signals``); return once every run this worker held is checkpointed and
        back on the queue."""
        from plait_durable import opened_store
        from saq import Worker as SaqWorker
        from saq.types import Context, PartialTimersDict

        class _SaqWorker(SaqWorker[Context]):
            SIGNALS: list[signal.Signals] = []  # this worker drains on its own signals

        timers: PartialTimersDict = {
            "sweep": self.settings.sweep,
            "abort": 1,
            "schedule": 1,
            "worker_info": 10,
        }
        loop = asyncio.get_running_loop()
        if handle_signals:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self.drain)
        try:
            async with (
                opened_store(self.settings.store) as store,
                open_queue(self.settings.store, self.settings.queue) as queue,
            ):
                self._store = store
                # hand a silent worker's runs on after a third of the lease (at least the
                # job's heartbeat: four beats missed): a dead worker's run is delivered again
                # before its lease (last renewed at most a third of it before the death)
                # expires, and taken over as soon as it does
                ours: Any = queue  # (a RunQueue of plait_workers._redis or ._postgres)
                ours.stuck_after = max(float(HEARTBEAT), self.settings.lease_ttl / 3)
                self._saq = _SaqWorker(
                    queue,
                    [(FUNCTION, self._run_job)],
                    id=self.name,
                    concurrency=self.settings.concurrency,
                    timers=timers,
                    before_process=self._taken,
                    after_process=self._handled,
                )
                started = asyncio.create_task(self._saq.start())
                beating = asyncio.create_task(self._heartbeat(queue))
                await self._drained.wait()
                self._saq.event.set()  # saq starts no new take from the queue
                await self._idle.wait()  # every run stopped at a boundary, checkpointed, requeued
                await self._saq.stop()
                for task in (started, beating):
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        pass
        finally:
            if handle_signals:
                for signum in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(signum)

    def drain(self) -> None:
        """Stop taking runs; stop every run this worker holds at its next superstep
        boundary (checkpointed, lease given back, back on the queue); then :meth:`serve`
        returns."""
        if self._draining:
            return
        logger.info("worker %s drains %d run(s)", self.name, len(self._stops))
        self._draining = True
        for stop in self._stops.values():
            stop.set()
        self._drained.set()

    async def _taken(self, ctx: Any) -> None:
        self._in_flight += 1
        self._idle.clear()

    async def _handled(self, ctx: Any) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self._idle.set()

    def _load(self, order: RunOrder) -> Any:
        from plait_cli import TargetError, load_target, parse_target

        try:
            target = parse_target(order.target, format=order.format)
        except TargetError as exc:
            raise RefusedRunError(f"run {order.run_id}: {exc}") from exc
        if target.imports and not self.settings.allow_imports:
            raise RefusedRunError(
                f"run {order.run_id}: TARGET {order.target!r} names Python code, and this "
                "worker may not import code a queued run names; start it with "
                "--allow-imports (or --trust) to run Python workflows"
            )
        try:
            return load_target(
                target, allow_imports=self.settings.allow_imports, allow=self.settings.grants
            )
        except TargetError as exc:
            raise RefusedRunError(
                f"run {order.run_id} refused by worker {self.name}: {exc}"
            ) from exc

    async def _heartbeat(self, queue: Any) -> None:
        """Tell the queue this worker still runs its jobs, a few times per heartbeat, all
        in one round (on PostgreSQL one transaction: a beat per job would queue for the
        pool's few connections and come late under load). When a job is cancelled
        (``plait cancel``), stop its run at its next boundary and beat on while it stops;
        when the queue handed a job on (it believed this worker dead) or it ended, stop
        its run at its next boundary and beat for it no more."""
        from saq.job import Status

        while True:
            await anyio.sleep(HEARTBEAT / 4)
            beating = dict(self._beating)
            if not beating:
                continue
            try:
                found = await queue.beat_many([job for job, _, _ in beating.values()])
            except Exception:  # the next round tries again; the sweep decides
                logger.warning("heartbeat of %d run(s) failed", len(beating), exc_info=True)
                continue
            for delivery, (job, stop, why) in beating.items():
                status = found.get(job.key)
                if status is None:
                    why.append("handed on")
                    stop.set()
                    self._beating.pop(delivery, None)
                elif status == Status.ABORTING and not why:
                    why.append(CANCELLED)
                    stop.set()

    async def _run_job(self, ctx: Mapping[str, Any], *, order: Mapping[str, Any]) -> Any:
        """The saq function of a run's job: start or resume the run, here."""
        from saq.job import Status

        job = ctx["job"]
        stored = await job.get_queue().job(job.key)
        if not owned(stored, job) or stored.status not in (Status.ACTIVE, Status.ABORTING):
            # cancelled, or handed on, before this worker's first word was written: not
            # this worker's (what saq writes after this is dropped: not the job's owner)
            logger.info("run %s: its job is not this worker's delivery; not run", job.key)
            return {"status": "not taken"}
        logger.info("run %s: attempt %d taken", job.key, job.attempts)
        try:
            run_order = RunOrder.from_json(order)
        except QueueError as exc:
            job.retries = 0  # a malformed job is never delivered again
            raise RefusedRunError(str(exc)) from exc
        if stored.status == Status.ABORTING or stored.meta.get(CANCEL_META):
            # cancelled before it started here, or while a worker that died was stopping it
            await self._cancelled(job, run_order)
        if self._draining:
            raise _Drained(f"worker {self.name} drains; run {run_order.run_id} goes back")
        try:
            workflow = self._load(run_order)
        except RefusedRunError:
            job.retries = 0
            raise
        stop = anyio.Event()
        delivery = (run_order.run_id, job.attempts)
        self._stops[delivery] = stop
        why: list[str] = []
        self._beating[delivery] = (job, stop, why)
        try:
            result = await self._run(workflow, run_order, stop, job)
            if why and not self._draining and result.get("status") == "running":
                if why[0] == CANCELLED:
                    await self._cancelled(job, run_order)
                job.retry_delay = 0.0
                raise _Drained(f"run {run_order.run_id} stopped: its job was handed on")
            return result
        finally:
            self._beating.pop(delivery, None)
            del self._stops[delivery]

    async def _cancelled(self, job: Any, order: RunOrder) -> None:
        """The run was cancelled (``plait cancel``) and has stopped, or never started
        here: record the cancellation in its checkpoints (:func:`record_cancel`), mark the
        job cancelled, and wait for saq's abort upkeep (every second) to cancel this task
        and end the job ``aborted``."""
        from plait_durable import RunLeaseError

        try:
            await _to_the_end(
                record_cancel(
                    self._store, order.run_id, by=self.name, lease_ttl=self.settings.lease_ttl
                )
            )
        except RunLeaseError as exc:
            # the worker the job was handed on from still stops the run: again, later,
            # still marked cancelled
            job.meta[CANCEL_META] = CANCELLED
            raise self._lease_held(job, exc) from exc
        await job.get_queue().abort(job, CANCELLED)
        await anyio.sleep(60)  # cancelled by saq's upkeep well before this ends
        raise _Drained(f"run {order.run_id}: its cancellation was not taken up; again")

    async def _run(self, workflow: Any, order: RunOrder, stop: anyio.Event, job: Any) -> Any:
        from plait_durable import RunLeaseError

        latest = await self._store.latest(order.run_id)
        options: dict[str, Any] = {
            "stop": stop,
            "raise_on_failure": False,
            "lease_ttl": self.settings.lease_ttl,
            "checkpoint_metadata": {
                METADATA_KEY: {
                    "target": order.target,
                    "format": order.format,
                    "queue": self.settings.queue,
                },
                "cli": {"target": order.target, "allow_imports": self.settings.allow_imports},
            },
        }
        if latest is None:
            if order.responses:
                job.retries = 0
                raise RefusedRunError(f"run {order.run_id} has no checkpoint to answer")
            coroutine = workflow.run(
                order.input, run_id=order.run_id, checkpoint=self._store, **options
            )
        elif latest.status == RunStatus.RUNNING.value or order.responses:
            coroutine = workflow.resume(
                order.run_id, self._store, responses=dict(order.responses), **options
            )
        else:
            return {"status": latest.status}  # done, failed or waiting already: nothing to do
        running = asyncio.ensure_future(coroutine)
        try:
            result = await asyncio.shield(running)
        except asyncio.CancelledError:
            # plait cancel (saq's abort upkeep cancels this task): stop at the next
            # boundary, checkpointed, record the cancellation, and let the queue end the job
            stop.set()
            try:
                await _to_the_end(running)
                stored = await _to_the_end(job.get_queue().job(job.key))
                if stored is not None and stored.error == CANCELLED:
                    await _to_the_end(
                        record_cancel(
                            self._store,
                            order.run_id,
                            by=self.name,
                            lease_ttl=self.settings.lease_ttl,
                        )
                    )
            except (Exception, asyncio.CancelledError):
                logger.warning("run %s: cancellation not recorded", order.run_id, exc_info=True)
            logger.info("run %s stopped (%s)", order.run_id, CANCELLED)
            raise
        except RunLeaseError as exc:
            raise self._lease_held(job, exc) from exc
        if isinstance(result.error, RunLeaseError):
            raise self._lease_held(job, result.error)
        if result.status is RunStatus.RUNNING and self._draining:
            job.retry_delay = 0.0
            raise _Drained(f"run {order.run_id} stopped at superstep {result.supersteps}")
        return {"status": result.status.value, "supersteps": result.supersteps}

    def _lease_held(self, job: Any, error: Exception) -> _LeaseHeld:
        """The job goes back on the queue, to be tried again shortly: another worker holds
        its run's lease (a live one, or one that died and whose lease has not expired)."""
        job.retry_delay = min(self.settings.lease_ttl / 4, LEASE_RETRY)
        again = job.retry_delay
        logger.info("run %s: attempt %d, lease held; again in %.2f s", job.key, job.attempts, again)
        return _LeaseHeld(str(error))


async def _to_the_end(awaitable: Any) -> Any:
    """Await ``awaitable`` to its end even when this task is cancelled meanwhile; its
    result. A cancellation that came meanwhile is raised once it has ended (saq cancels an
    aborted job's task once: it must not be lost)."""
    future = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(future)
            break
        except asyncio.CancelledError:
            if future.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
