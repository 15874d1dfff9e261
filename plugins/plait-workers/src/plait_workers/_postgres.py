"""saq's PostgreSQL queue, with a sweep that hands a dead worker's job on at once and writes
that only a job's owner may make.

saq's PostgreSQL sweep, run by the one worker holding the queue's advisory lock, handles
the stuck jobs it finds one after another: it aborts each, waits up to 5 seconds for the
job's worker to confirm, then retries it. A killed worker confirms nothing, so each of its
jobs costs the full wait: in a 200-run soak with kills, runs a killed worker held were
still waiting to be handed on at the soak's deadline. And saq writes whole jobs: the retry
or finish of a worker thought dead, or a worker's first word after it took a job, lands
over what a later delivery or a cancellation wrote.

Here (:class:`RunQueue`):

- the sweep, in one transaction under a transaction-scoped advisory lock, locks the
  ``active`` and ``aborting`` rows no one else holds (``FOR UPDATE SKIP LOCKED``) and puts
  each stuck one back on the queue at once (a cancelled one marked so, for the worker
  that takes it to record the cancellation); it never aborts and never waits. The job's
  worker, if alive after all, finds at its next beat that the job was handed on, and
  stops the run at its next boundary; Plait's lease keeps the run to one writer meanwhile;
- a retry or a finish writes only while the stored job is still the writer's delivery (the
  same worker and attempt), under the row's lock; so does a worker's first word;
- :meth:`RunQueue.beat`, a worker's heartbeat, touches the stored job under the row's lock
  while it is the beating worker's, keeping its status (a cancellation stands).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from psycopg import AsyncConnection
from psycopg.sql import SQL
from saq.job import Job, Status
from saq.queue.postgres import ENQUEUE, PostgresQueue
from saq.utils import now, now_seconds

from ._jobs import REDELIVERY, handed_on, log_hand_on, stuck

__all__ = ["RunQueue"]

logger = logging.getLogger("plait_workers")

#: The stored job (its JSON: saq writes a field only when it differs from its default) is
#: still the delivery of the worker and attempt given (:func:`~._jobs.owned`)
_OWNED = (
    "(convert_from(job, 'UTF8')::jsonb ->> 'worker_id') IS NOT DISTINCT FROM %s AND "
    "COALESCE((convert_from(job, 'UTF8')::jsonb ->> 'attempts')::int, 0) = %s"
)
#: The stored job waits for the first word of the worker that has just taken it: the
#: attempt before the worker's (:func:`~._jobs.taken_by`), taken from the queue
#: (``active``). ``queued`` matches too, for the update's own snapshot: saq hands a job to
#: the worker before the dequeue's transaction commits, and an update that found the row
#: ``queued`` waits for that commit and checks this again on the row as it committed (one
#: that found no row would not wait)
_TAKEN = (
    "status IN ('queued', 'active') AND "
    "COALESCE((convert_from(job, 'UTF8')::jsonb ->> 'attempts')::int, 0) = %s"
)


class RunQueue(PostgresQueue):
    """A saq :class:`~saq.queue.postgres.PostgresQueue` whose sweep hands stuck jobs on at
    once and whose writes hold only for a job's owner (see the module's docstring)."""

    #: seconds without a heartbeat after which the sweep hands a running job on (``None``:
    #: each job's own ``heartbeat``); a worker sets it from its lease's ttl
    stuck_after: float | None = None

    # -- the sweep -------------------------------------------------------------------------

    async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
        """Delete ended jobs past their expiry, and hand on every job whose worker stopped
        beating or is a gone process of this host (:func:`~._jobs.stuck`). ``lock`` and
        ``abort`` are not used: the lock lives as long as the sweep's transaction, and
        nothing waits for a dead worker."""
        swept: list[str] = []
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))",
                (self.saq_lock_keyspace, f"plait-sweep:{self.name}"),
            )
            row = await cursor.fetchone()
            if not row or not row[0]:
                return []  # another worker sweeps now
            stamp = now_seconds()
            await conn.execute(
                SQL(
                    "DELETE FROM {jobs} WHERE queue = %s AND expire_at <= %s "
                    "AND status IN ('aborted', 'complete', 'failed')"
                ).format(jobs=self.jobs_table),
                (self.name, stamp),
            )
            await conn.execute(
                SQL("DELETE FROM {stats} WHERE expire_at <= %s").format(stats=self.stats_table),
                (stamp,),
            )
            cursor = await conn.execute(
                SQL(
                    "SELECT key, job, status FROM {jobs} WHERE queue = %s "
                    "AND status IN ('active', 'aborting') FOR UPDATE SKIP LOCKED"
                ).format(jobs=self.jobs_table),
                (self.name,),
            )
            rows: list[tuple[Any, ...]] = []
            for key, raw, status in await cursor.fetchall():
                job = self.deserialize(raw, status)
                if job is None or not stuck(job, self.stuck_after):
                    continue
                log_hand_on(job)
                job = handed_on(job, self.swept_error_message)
                rows.append(self._row(job))
                swept.append(key)
            if rows:  # one round trip: one by one, a loaded worker's sweep took seconds
                async with conn.cursor() as writer:
                    await writer.executemany(self._write_sql(), rows)
                # wake the workers waiting for work now (saq notifies an enqueue, not this;
                # without it an idle worker takes the job at its next upkeep, a second on)
                await self._notify(ENQUEUE, connection=conn)
        return swept

    def _write_sql(self, where: str = "") -> Any:
        """An update of a job's row: its JSON, status, schedule, priority and expiry, where
        its key is ``%s`` (and ``where`` holds: a condition on the stored row, checked
        under the row's lock by the update itself), returning the key of each row written."""
        return SQL(
            "UPDATE {jobs} SET job = %s, status = %s, scheduled = %s, priority = %s, "
            "expire_at = %s WHERE key = %s" + (f" AND {where}" if where else "") + " RETURNING key"
        ).format(jobs=self.jobs_table)

    def _row(self, job: Job, expire_at: float | None = None) -> tuple[Any, ...]:
        return (
            self.serialize(job),
            job.status,
            job.scheduled,
            job.priority,
            expire_at,
            job.key,
        )

    async def _write_owned(self, job: Job, expire_at: float | None = None) -> bool:
        """Store ``job`` as it is (its status, schedule, priority and ``expire_at`` in their
        columns) if the stored job is still its delivery (:func:`~._jobs.owned`): one
        statement, no transaction around it. Whether it was written."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                self._write_sql(_OWNED), (*self._row(job, expire_at), job.worker_id, job.attempts)
            )
            return await cursor.fetchone() is not None

    async def _locked(self, conn: AsyncConnection[Any], key: str) -> Job | None:
        """The job ``key`` as stored, its row locked until ``conn``'s transaction ends."""
        cursor = await conn.execute(
            SQL("SELECT job, status FROM {jobs} WHERE key = %s FOR UPDATE").format(
                jobs=self.jobs_table
            ),
            (key,),
        )
        row = await cursor.fetchone()
        return None if row is None else self.deserialize(row[0], row[1])

    # -- submitting ------------------------------------------------------------------------

    async def enqueue_many(self, jobs: list[Job]) -> list[Job | None]:
        """saq's :meth:`enqueue` for each of ``jobs``, in one transaction of one round trip
        (psycopg's pipeline) and one notification: each job, or ``None`` where a job of its
        key is queued or running already. One by one, 10,000 runs took minutes on a loaded
        machine."""
        for job in jobs:
            job.queue = self
            job.queued = now()
            job.status = Status.QUEUED
            await self._before_enqueue(job)
        if not jobs:
            return []
        insert = SQL(
            "INSERT INTO {jobs} (key, job, queue, status, priority, group_key, scheduled) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET job = "
            "EXCLUDED.job, queue = EXCLUDED.queue, status = EXCLUDED.status, priority = "
            "EXCLUDED.priority, group_key = EXCLUDED.group_key, scheduled = EXCLUDED.scheduled, "
            "expire_at = NULL WHERE {jobs}.status IN ('aborted', 'complete', 'failed') "
            "RETURNING key"
        ).format(jobs=self.jobs_table)
        stamp = int(now_seconds())
        rows = [
            (
                job.key,
                self.serialize(job),
                self.name,
                job.status,
                job.priority,
                job.group_key,
                job.scheduled or stamp,
            )
            for job in jobs
        ]
        taken: set[str] = set()
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            await cursor.executemany(insert, rows, returning=True)
            while True:
                found = await cursor.fetchone()
                if found is not None:
                    taken.add(found[0])
                if not cursor.nextset():
                    break
            if taken:
                await self._notify(ENQUEUE, connection=conn)
        return [job if job.key in taken else None for job in jobs]

    # -- writes only an owner makes ----------------------------------------------------------
    #
    # Each is one statement that checks the stored row in its own WHERE (PostgreSQL locks
    # the row and checks again before it writes): no transaction, no read before the
    # write. Locked and read first, each took five round trips or more, and on a loaded
    # machine the worker's time went to sending statements.

    async def _update(self, job: Job, status: Status | None = None, **kwargs: Any) -> None:
        """saq's update; the first word of a worker that has just taken ``job`` (``active``,
        with its attempt counted) is written only while the job still waits for it, not
        over a cancellation or another delivery. The dequeue's own write (on its
        transaction's ``connection``) is one update of the row it has just locked."""
        connection = kwargs.get("connection")
        if connection is not None and status == Status.ACTIVE and "expire_at" not in kwargs:
            job.status = status
            await connection.execute(
                SQL(
                    "UPDATE {jobs} SET job = %s, status = %s, scheduled = %s WHERE key = %s"
                ).format(jobs=self.jobs_table),
                (self.serialize(job), job.status, job.scheduled, job.key),
            )
            return
        if status != Status.ACTIVE or connection is not None:
            await super()._update(job, status, **kwargs)
            return
        job.status = status
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                self._write_sql(_TAKEN),
                (*self._row(job), job.attempts - 1),
            )
            if await cursor.fetchone() is None:
                logger.info("not starting job %s: cancelled or handed on", job.key)

    async def _retry(self, job: Job, error: str | None) -> None:
        """saq's retry (queued again after the job's retry delay), written only while the
        stored job is still ``job``'s delivery."""
        delay = job.next_retry_delay()
        scheduled = time.time() + delay if delay else (job.scheduled or now_seconds())
        job.status = Status.QUEUED
        job.scheduled = int(scheduled)
        job.priority = REDELIVERY  # before every run not yet started, once due
        if not await self._write_owned(job):
            logger.info("not retrying job %s: another delivery has it", job.key)

    async def _finish(
        self,
        job: Job,
        status: Status,
        *,
        result: Any = None,
        error: str | None = None,
        connection: AsyncConnection[Any] | None = None,
    ) -> None:
        """saq's finish (the job kept for its ``ttl``, or deleted), written only while the
        stored job is still ``job``'s delivery. ``connection`` is not used."""
        if job.ttl < 0:
            async with self.pool.connection() as conn:
                cursor = await conn.execute(
                    SQL(
                        "DELETE FROM {jobs} WHERE key = %s AND " + _OWNED + " RETURNING key"
                    ).format(jobs=self.jobs_table),
                    (job.key, job.worker_id, job.attempts),
                )
                written = await cursor.fetchone() is not None
        else:
            job.status = status
            job.touched = now()
            written = await self._write_owned(job, now_seconds() + job.ttl if job.ttl > 0 else None)
        if not written:
            logger.info("not finishing job %s: another delivery has it", job.key)

    async def abort(self, job: Job, error: str, ttl: float = 5) -> None:
        """Abort ``job``: one waiting on the queue ends ``aborted`` at once; a running one is
        marked ``aborting`` for its worker to stop (the sweep hands it on, marked cancelled,
        if that worker dies meanwhile). The stored job is marked, under its row's lock, not
        ``job`` written over it."""
        async with self.pool.connection() as conn, conn.transaction():
            stored = await self._locked(conn, job.key)
            if stored is None or stored.status not in (
                Status.QUEUED,
                Status.ACTIVE,
                Status.ABORTING,
            ):
                return
            waiting = stored.status == Status.QUEUED
            stored.error = error
            expire = None
            if waiting:
                stored.status = Status.ABORTED
                stored.completed = now()
                expire = now_seconds() + stored.ttl if stored.ttl > 0 else None
            else:
                stored.status = Status.ABORTING
            await conn.execute(self._write_sql(), self._row(stored, expire))
        job.replace(stored)

    async def beat(self, job: Job) -> Status | None:
        """A worker's heartbeat for ``job``: touch the stored job, keeping its status, while
        it is still ``job``'s delivery; its status then (``active``, or ``aborting`` when
        cancelled), or ``None`` when the job was handed on or has ended."""
        return (await self.beat_many([job])).get(job.key)

    async def beat_many(self, jobs: list[Job]) -> dict[str, Status]:
        """:meth:`beat` for each of ``jobs`` in one statement, however many runs the worker
        holds: it sets the ``touched`` of each stored job still its delivery (and running,
        or being cancelled) in the stored JSON, all else as stored; the status of each, by
        job key (a job handed on or ended is left out)."""
        if not jobs:
            return {}
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                SQL(
                    "WITH mine AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]) "
                    "AS m(key, worker_id, attempts)), "
                    "beaten AS (SELECT j.key FROM {jobs} AS j JOIN mine USING (key) "
                    "WHERE j.status IN ('active', 'aborting') "
                    "AND (convert_from(j.job, 'UTF8')::jsonb ->> 'worker_id') "
                    "IS NOT DISTINCT FROM mine.worker_id "
                    "AND COALESCE((convert_from(j.job, 'UTF8')::jsonb ->> 'attempts')::int, 0) "
                    "= mine.attempts "
                    "ORDER BY j.key FOR UPDATE OF j) "  # (one order: no deadlock between workers)
                    "UPDATE {jobs} AS j SET job = convert_to(jsonb_set("
                    "convert_from(j.job, 'UTF8')::jsonb, '{{touched}}', to_jsonb(%s::bigint)"
                    ")::text, 'UTF8') FROM beaten WHERE j.key = beaten.key "
                    "RETURNING j.key, j.status"
                ).format(jobs=self.jobs_table),
                (
                    [job.key for job in jobs],
                    [job.worker_id for job in jobs],
                    [job.attempts for job in jobs],
                    now(),
                ),
            )
            return {key: Status(status) for key, status in await cursor.fetchall()}
