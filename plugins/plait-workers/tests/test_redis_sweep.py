"""The Redis queue's sweep, on a real Redis: a job a worker is just taking (moved to the
active list, its status not yet written) is not aborted; one still so a sweep later is.

saq's own sweep aborts it at once (tobymao/saq#124, #277): a run a worker refused then
ended ``aborted`` instead of ``refused`` (the fresh-clone CI saw it, under load, in
``test_an_untrusted_document_needs_the_workers_grant[redis]``).
"""

from __future__ import annotations

import uuid

import anyio
from plait_workers._queue import RunOrder, job_for, open_queue
from saq.job import Status
from saq.queue.redis import RedisQueue

LOCK = 1  # seconds the sweep lock is held: the second sweep waits it out


async def _taken_not_started(queue: RedisQueue) -> str:
    """Enqueue a run's job and take it the way a worker's first step does (the id moves to
    the active list); the status, which the worker's second step writes, stays queued."""
    order = RunOrder(run_id=f"r{uuid.uuid4().hex[:8]}", target="workers_app:chain", input=1)
    assert await queue.enqueue(job_for(order, queue=queue)) is not None
    taken = await queue.dequeue(timeout=5)
    assert taken is not None and taken.key == order.run_id
    assert taken.status == Status.QUEUED
    return order.run_id


def test_a_job_being_taken_is_left_alone_and_swept_a_sweep_later(redis_url: str) -> None:
    async def main() -> None:
        async with open_queue(redis_url, f"s{uuid.uuid4().hex[:10]}") as queue:
            assert isinstance(queue, RedisQueue)
            run_id = await _taken_not_started(queue)
            assert await queue.sweep(lock=LOCK) == []
            job = await queue.job(run_id)
            assert job is not None and job.status == Status.QUEUED  # not aborted
            # the worker writes its status: a later sweep leaves an active, beating job alone
            job.attempts += 1  # (as saq's worker does before its first word)
            job.worker_id = "w1"
            await job.update(status=Status.ACTIVE)
            await anyio.sleep(LOCK + 0.2)
            assert await queue.sweep(lock=LOCK) == []
            assert (await queue.job(run_id)).status == Status.ACTIVE  # type: ignore[union-attr]
            await queue.finish(job, Status.COMPLETE)  # (before its heartbeat runs out)

            # a job still queued in the active list a sweep later: its worker died between
            # the two steps; it goes back on the queue for another delivery
            orphan = await _taken_not_started(queue)
            await anyio.sleep(LOCK + 0.2)
            assert await queue.sweep(lock=LOCK) == []  # first sight
            await anyio.sleep(LOCK + 0.2)
            assert await queue.sweep(lock=LOCK, abort=0.5) == [queue.job_id(orphan)]
            again = await queue.job(orphan)  # (queued after the job's retry delay)
            assert again is not None and again.status == Status.QUEUED
            assert again.error == queue.swept_error_message

    anyio.run(main)


def test_saq_own_sweep_aborts_a_job_being_taken(redis_url: str) -> None:
    """The defect the queue mends, shown on saq's class: if saq fixes it, this fails, and
    the mended sweep can go."""

    async def main() -> None:
        queue = RedisQueue.from_url(redis_url, name=f"s{uuid.uuid4().hex[:10]}")
        await queue.connect()
        try:
            run_id = await _taken_not_started(queue)
            assert await queue.sweep(lock=LOCK, abort=0.5) == [queue.job_id(run_id)]
        finally:
            await queue.disconnect()

    anyio.run(main)
