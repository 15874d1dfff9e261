"""saq's Redis queue, with a sweep that hands a dead worker's job on at once and writes
that only a job's owner may make.

saq's Redis sweep, run by every worker in turn, handles each job it finds in the active
list one after another: it aborts the job, waits up to 5 seconds for the job's worker to
confirm, then retries it. Two defects follow, both seen in the soak
(``tests/benchmarks/soak_workers.py``):

- **Slow takeover.** A killed worker confirms nothing, so each of its jobs costs the full
  wait: a worker killed with 25 runs had its last one taken over 140 s later. The sweep's
  lock lives one sweep period (seconds), so other workers' sweeps start on the same
  snapshot meanwhile, and abort jobs that were handed on and are running again.
- **Stale writes.** An abort, a late heartbeat, or the retry or finish of a worker that
  was thought dead each write a whole job over what another delivery wrote since: a job
  ends ``aborted`` while its run is unfinished, or is ``active`` on no list, where no
  sweep finds it (both leave the run stuck). And a job a worker is just taking (its id
  moved to the active list, its status not yet written) is aborted (tobymao/saq#124,
  #277): a run a worker refused ended ``aborted`` rather than ``refused``.

Here (:class:`RunQueue`):

- the sweep hands every stuck job it found on (back at the head of the queued list, at
  once) in one script that moves each job still stored as the sweep read it; it never
  aborts and never waits (one by one, a loaded worker's sweep took seconds per dead
  worker). The job's worker, if alive after all, finds at its next
  beat that the job was handed on and stops the run at its next boundary; Plait's lease
  keeps the run to one writer meanwhile;
- a job found ``queued`` in the active list is handed on only when the previous sweep of
  this queue object found it so too (a worker is taking it; one still so a sweep later
  belongs to a worker that died between the two steps);
- a cancelled running job (``aborting``) stays in the active list: if its worker dies
  while stopping it, the sweep hands it on marked ``cancel``, and the worker that takes it
  records the cancellation;
- a retry or a finish writes only when the stored job is still the writer's delivery (the
  same worker and attempt), in the same kind of transaction;
- :meth:`RunQueue.beat_many`, a worker's heartbeat for all its runs (one read, one
  compare-and-set script), touches each stored job only while it is the beating worker's,
  and keeps the stored status (an abort written meanwhile stands);
- a redelivery goes to the head of the queued list: the sweep's, and a retry's (a lease
  still held, a drain), also once saq's schedule upkeep finds its delay passed.

This module imports saq's Redis client; :func:`plait_workers._queue.open_queue` imports it
only for a ``redis://`` queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import WatchError
from saq.job import Job, Status
from saq.queue.redis import RedisQueue
from saq.utils import now

from ._jobs import handed_on, log_hand_on, owned, stuck, taken_by

__all__ = ["RunQueue"]

logger = logging.getLogger("plait_workers")

# Take the sweep lock (one sweep at a time across every worker of the queue) and read the
# ids of the active list with each job as stored, in one step, so that each status belongs
# to the same moment as the list; nil when another worker holds the lock.
_SNAPSHOT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    return false
end
redis.call('SETEX', KEYS[1], ARGV[1], 1)
local found = {}
for i, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
    found[i] = {id, redis.call('GET', id)}
end
return found
"""

# Hand on the jobs ARGV holds (id, the job as the sweep read it, the job handed on, its
# score in the incomplete set; an empty job handed on: it ended, only off the active list)
# that are still stored as read, at the head of the queued list; the ids handed on.
_HAND_ON = """
local handed = {}
for i = 1, #ARGV, 4 do
    local id = ARGV[i]
    if redis.call('GET', id) == ARGV[i + 1] then
        redis.call('LREM', KEYS[1], 0, id)
        if ARGV[i + 2] ~= '' then
            redis.call('LREM', KEYS[2], 0, id)
            redis.call('ZADD', KEYS[3], ARGV[i + 3], id)
            redis.call('LPUSH', KEYS[2], id)
            redis.call('SET', id, ARGV[i + 2])
        end
        handed[#handed + 1] = id
    end
end
return handed
"""

# Take the schedule lock for ARGV[1] seconds and move every job of the incomplete set due
# by ARGV[2] (a retry after its delay: a redelivery) to the head of the queued list.
_SCHEDULE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    return {}
end
redis.call('SETEX', KEYS[1], ARGV[1], 1)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], 1, ARGV[2])
for _, id in ipairs(due) do
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('LPUSH', KEYS[3], id)
end
return due
"""

# Write each job ARGV holds (id, the job as read, the job to write) that is still stored as
# read; the ids written.
_SWAP = """
local written = {}
for i = 1, #ARGV, 3 do
    if redis.call('GET', ARGV[i]) == ARGV[i + 1] then
        redis.call('SET', ARGV[i], ARGV[i + 2])
        written[#written + 1] = ARGV[i]
    end
end
return written
"""


class RunQueue(RedisQueue):
    """A saq :class:`~saq.queue.redis.RedisQueue` whose sweep hands stuck jobs on at once
    and whose writes hold only for a job's owner (see the module's docstring)."""

    #: seconds without a heartbeat after which the sweep hands a running job on (``None``:
    #: each job's own ``heartbeat``); a worker sets it from its lease's ttl
    stuck_after: float | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._snapshot: Any = None
        self._hand_on_script: Any = None
        self._swap_script: Any = None
        self._schedule_due: Any = None
        #: ids found ``queued`` in the active list by this queue's previous sweep
        self._taking: set[bytes] = set()

    # -- the sweep -------------------------------------------------------------------------

    async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
        """Hand on every job of the active list whose worker is gone: stuck (no heartbeat
        for :attr:`stuck_after` seconds, or its worker a gone process of this host:
        :func:`~._jobs.stuck`), ``queued`` a sweep after it was taken, or missing.
        ``abort`` is not used: nothing waits for a dead worker."""
        if self._snapshot is None:
            self._snapshot = self.redis.register_script(_SNAPSHOT)
        found = await self._snapshot(
            keys=[self._sweep, self._active], args=[lock], client=self.redis
        )
        if found is None:  # another worker holds the sweep lock
            return []
        taking: set[bytes] = set()
        swept: list[bytes] = []
        gone: list[tuple[bytes, bytes, Job]] = []
        for job_id, stored in found:
            job = self.deserialize(stored)
            if job is None:
                swept.append(job_id)
                await self._forget(job_id)
                continue
            if job.status == Status.QUEUED and job_id not in self._taking:
                taking.add(job_id)  # a worker is taking it; if it is still so, next time
                continue
            if job.status in (Status.ACTIVE, Status.ABORTING) and not stuck(job, self.stuck_after):
                continue  # its worker beats (and, if aborting, stops the run)
            gone.append((job_id, stored, job))
        self._taking = taking
        if gone:
            swept += await self._hand_on(gone)
        return [job_id.decode("utf-8") for job_id in swept]

    async def _forget(self, job_id: bytes) -> None:
        """Take the id of a job that no longer exists off the active list."""
        logger.info("sweeping missing job %s", job_id)
        pipe: Any
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self._active, 0, job_id.decode())
            pipe.zrem(self._incomplete, job_id)
            await pipe.execute()

    async def _hand_on(self, gone: list[tuple[bytes, bytes, Job]]) -> list[bytes]:
        """Put each of ``gone`` (id, the job as the sweep read it, the job) back at the head
        of the queued list (or, if it ended, only off the active list), if it is still
        stored as read; all in one script, one round trip however many there are (one by
        one, a loaded worker's sweep took seconds per dead worker). The ids handed on."""
        if self._hand_on_script is None:
            self._hand_on_script = self.redis.register_script(_HAND_ON)
        args: list[Any] = []
        moved: dict[bytes, Job] = {}
        for job_id, stored, job in gone:
            if job.status in (Status.COMPLETE, Status.FAILED, Status.ABORTED):
                args += [job_id, stored, b"", 0]
                continue
            log_hand_on(job)
            moved[job_id] = job = handed_on(job, self.swept_error_message)
            args += [job_id, stored, self.serialize(job), job.scheduled]
        handed: list[bytes] = await self._hand_on_script(
            keys=[self._active, self._queued, self._incomplete], args=args, client=self.redis
        )
        for job_id in handed:
            if job_id in moved:
                await self.notify(moved[job_id])
        return handed

    async def schedule(self, lock: int = 1) -> list[str]:
        """saq's upkeep of retries whose delay has passed, which puts them back at the head
        of the queued list rather than its tail: every retry on a run's queue is a
        redelivery (a lease still held, a drain), and waits behind no run not yet started
        (at the tail, behind thousands, it waited half a minute in the soak)."""
        if self._schedule_due is None:
            self._schedule_due = self.redis.register_script(_SCHEDULE)
        due = await self._schedule_due(
            keys=[self._schedule, self._incomplete, self._queued],
            args=[lock, time.time()],
            client=self.redis,
        )
        return [job_id.decode("utf-8") for job_id in due]

    # -- submitting ------------------------------------------------------------------------

    async def enqueue_many(self, jobs: list[Job]) -> list[Job | None]:
        """saq's :meth:`enqueue` for each of ``jobs`` (one script call each, on one
        connection): each job, or ``None`` where a job of its key is queued or running
        already."""
        return [await self.enqueue(job) for job in jobs]

    # -- writes only an owner makes ----------------------------------------------------------

    async def _transact(
        self, job_id: bytes | str, write: Callable[[Any, Job | None, bytes | None], bool]
    ) -> bool:
        """Read the job ``job_id`` under ``WATCH`` and, if ``write(pipe, job, raw)`` queues
        writes (returns True), apply them in one transaction, again from the read when
        another client changed the job meanwhile. Whether ``write`` wrote."""
        pipe: Any
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(job_id)
                    raw: bytes | None = await pipe.get(job_id)
                    pipe.multi()
                    if not write(pipe, self.deserialize(raw), raw):
                        await pipe.reset()
                        return False
                    await pipe.execute()
                    return True
                except WatchError:
                    continue

    async def _if_owned(self, job: Job, write: Callable[[Any], None]) -> bool:
        def guarded(pipe: Any, stored: Job | None, raw: bytes | None) -> bool:
            if not owned(stored, job):
                logger.info("not writing job %s: another delivery has it", job.key)
                return False
            write(pipe)
            return True

        return await self._transact(job.id, guarded)

    async def _retry(self, job: Job, error: str | None) -> None:
        """saq's retry (back on the queued list, or scheduled after the job's retry delay),
        written only while the stored job is still ``job``'s delivery."""
        job_id = job.id
        delay = job.next_retry_delay()

        def write(pipe: Any) -> None:
            pipe.lrem(self._active, 1, job_id)
            pipe.lrem(self._queued, 1, job_id)
            if delay:
                pipe.zadd(self._incomplete, {job_id: time.time() + delay})
            else:
                pipe.zadd(self._incomplete, {job_id: job.scheduled})
                pipe.lpush(self._queued, job_id)  # (at the head: a redelivery)
            pipe.set(job_id, self.serialize(job))

        if await self._if_owned(job, write):
            await self.notify(job)

    async def _finish(
        self,
        job: Job,
        status: Status,
        *,
        result: Any = None,
        error: str | None = None,
    ) -> None:
        """saq's finish, written only while the stored job is still ``job``'s delivery."""
        job_id = job.id

        def write(pipe: Any) -> None:
            pipe.lrem(self._active, 1, job_id).zrem(self._incomplete, job_id)
            if job.ttl > 0:
                pipe.set(job_id, self.serialize(job), ex=job.ttl)
            elif job.ttl == 0:
                pipe.set(job_id, self.serialize(job))
            else:
                pipe.delete(job_id)

        if await self._if_owned(job, write):
            await self.notify(job)

    async def abort(self, job: Job, error: str, ttl: float = 5) -> None:
        """Abort ``job``: one waiting on the queue (or being taken, its worker's first word
        not yet written) ends ``aborted`` at once; a running one is marked ``aborting`` for
        its worker to stop, and stays in the active list, so that the sweep hands it on
        (marked cancelled) if that worker dies meanwhile. The stored job is marked, not
        ``job`` written over it."""
        job_id = job.id
        outcome: list[Job] = []

        def write(pipe: Any, stored: Job | None, raw: bytes | None) -> bool:
            if stored is None or stored.status not in (
                Status.QUEUED,
                Status.ACTIVE,
                Status.ABORTING,
            ):
                return False
            outcome[:] = [stored, self.copy(stored)]
            stored.status = Status.ABORTING
            stored.error = error
            pipe.lrem(self._queued, 0, job_id).zrem(self._incomplete, job_id)
            pipe.set(job_id, self.serialize(stored))
            pipe.set(job.abort_id, error, ex=int(max(ttl, 1)))
            return True

        if not await self._transact(job_id, write):
            return
        stored, before = outcome
        job.replace(stored)
        await self.notify(stored)
        if before.status == Status.QUEUED:  # no worker runs it
            await self.finish(stored, Status.ABORTED, error=error)
            await self.redis.delete(job.abort_id)

    async def _update(self, job: Job, status: Status | None = None, **kwargs: Any) -> None:
        """saq's update; the first word of a worker that has just taken ``job`` (``active``)
        is written only while the job still waits for it, not over a cancellation or
        another delivery (the worker then finds the job is not its own, and runs nothing)."""
        if status != Status.ACTIVE:
            await super()._update(job, status, **kwargs)
            return

        def write(pipe: Any, stored: Job | None, raw: bytes | None) -> bool:
            if not taken_by(stored, job) or stored is None or stored.status != Status.QUEUED:
                return False
            job.status = Status.ACTIVE
            pipe.set(job.id, self.serialize(job))
            return True

        if await self._transact(job.id, write):
            await self.notify(job)

    async def beat(self, job: Job) -> Status | None:
        """A worker's heartbeat for ``job``: touch the stored job, keeping its status, while
        it is still ``job``'s delivery; its status then (``active``, or ``aborting`` when
        cancelled), or ``None`` when the job was handed on or has ended."""
        return (await self.beat_many([job])).get(job.key)

    async def beat_many(self, jobs: list[Job]) -> dict[str, Status]:
        """:meth:`beat` for each of ``jobs``, in two round trips however many there are
        (one read of them all, one script that writes each still as read; one beaten
        meanwhile is read again): the status of each still its delivery, by job key (a
        job handed on or ended is left out)."""
        if self._swap_script is None:
            self._swap_script = self.redis.register_script(_SWAP)
        found: dict[str, Status] = {}
        pending = {job.id: job for job in jobs}
        for _ in range(5):  # (a job written over five times in a row waits for the next beat)
            if not pending:
                break
            ids = list(pending)
            args: list[Any] = []
            statuses: dict[str, Status] = {}
            touched = now()
            for job_id, raw in zip(ids, await self.redis.mget(ids)):
                stored = self.deserialize(raw)
                job = pending[job_id]
                if not owned(stored, job) or stored is None:
                    continue
                if stored.status not in (Status.ACTIVE, Status.ABORTING):
                    continue
                stored.touched = touched
                statuses[job_id] = stored.status
                args += [job_id, raw, self.serialize(stored)]
            written = await self._swap_script(keys=[], args=args, client=self.redis)
            for job_id in written:
                key = job_id.decode("utf-8") if isinstance(job_id, bytes) else job_id
                found[pending[key].key] = statuses[key]
            # beaten by another write meanwhile (a cancellation, a hand-on): read again
            pending = {
                job_id: pending[job_id]
                for job_id in statuses
                if job_id.encode() not in written and job_id not in written
            }
        return found
