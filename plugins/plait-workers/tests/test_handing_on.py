"""The queues' sweep and their owner-only writes, on a real Redis and PostgreSQL.

saq's sweep aborts a stuck job and waits up to 5 s for its (dead) worker, one job after
another: a worker killed with 25 runs had its last taken over 140 s later. And saq writes
whole jobs, so the late retry or finish of a worker thought dead landed over the next
delivery (a job ended while its run was unfinished, or was stranded ``active`` on no
list). Here one sweep hands every stuck job on at once, and a stale delivery's writes are
dropped.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
from plait_workers._client import CANCELLED, queued_runs
from plait_workers._jobs import CANCEL_META
from plait_workers._queue import RunOrder, job_for, open_queue
from saq.job import Job, Status

HEARTBEAT = 1  # seconds: the test's jobs are stuck this long after their last beat


async def _taken(queue: Any, worker: str, heartbeat: int = HEARTBEAT) -> Job:
    """Enqueue a run's job and take it as saq's worker does: dequeue, count the attempt,
    name the worker, write its first word (``active``)."""
    order = RunOrder(run_id=f"r{uuid.uuid4().hex[:8]}", target="workers_app:chain", input=1)
    job = job_for(order, queue=queue)
    job.heartbeat = heartbeat
    assert await queue.enqueue(job) is not None
    taken = await queue.dequeue(timeout=5)
    assert taken is not None and taken.key == order.run_id
    taken.attempts += 1
    taken.worker_id = worker
    await taken.update(status=Status.ACTIVE)
    stored = await queue.job(order.run_id)
    assert stored is not None and stored.status == Status.ACTIVE
    return taken


async def _sweep(queue: Any) -> list[str]:
    await anyio.sleep(HEARTBEAT + 1.2)  # the jobs' heartbeat runs out; the sweep lock too
    swept: list[str] = await queue.sweep(lock=1, abort=60)
    return swept


def test_one_sweep_hands_every_stuck_job_on_and_stale_writes_are_dropped(store: str) -> None:
    async def main() -> None:
        async with open_queue(store, f"h{uuid.uuid4().hex[:10]}") as queue:
            dead = [await _taken(queue, "dead:1") for _ in range(3)]
            # a worker that beats (its heartbeat, for the test, a minute long)
            alive = await _taken(queue, "alive:2", heartbeat=60)
            # (abort=60: saq's sweep would wait 60 s for each dead job)
            with anyio.fail_after(60):
                swept = await _sweep(queue)
                while not swept:  # (another sweep's lock, on a loaded machine)
                    swept = await _sweep(queue)
            assert await queue.beat(alive) == Status.ACTIVE  # a beating job stays its worker's
            keys = sorted(job.key for job in dead)
            assert sorted(key.rpartition(":")[2] for key in swept) == keys
            for job in dead:
                stored = await queue.job(job.key)
                assert stored is not None and stored.status == Status.QUEUED
                assert stored.error == queue.swept_error_message
            # the worker thought dead beats, finishes, retries: none of it is written
            stale = dead[0]
            assert await queue.beat(stale) is None
            # (a worker beats for all its runs in one round: only its own are touched)
            assert await queue.beat_many([*dead, alive]) == {alive.key: Status.ACTIVE}
            await stale.finish(Status.COMPLETE, result={"status": "idle"})
            assert (await queue.job(stale.key)).status == Status.QUEUED  # type: ignore[union-attr]
            await stale.retry("again")
            assert (await queue.job(stale.key)).error == queue.swept_error_message  # type: ignore[union-attr]
            # the next delivery takes it, and its own writes hold
            again = await queue.dequeue(timeout=5)
            assert again is not None and again.key in keys
            again.attempts += 1
            again.worker_id = "next:3"
            await again.update(status=Status.ACTIVE)
            assert await queue.beat(again) == Status.ACTIVE
            await again.finish(Status.COMPLETE, result={"status": "idle"})
            assert (await queue.job(again.key)).status == Status.COMPLETE  # type: ignore[union-attr]
            await alive.finish(Status.COMPLETE)

    anyio.run(main)


def test_a_cancelled_run_whose_worker_dies_stopping_it_is_handed_on_marked(
    store: str,
) -> None:
    async def main() -> None:
        name = f"h{uuid.uuid4().hex[:10]}"
        async with open_queue(store, name) as queue:
            job = await _taken(queue, "dead:1")
            await queue.abort(await queue.job(job.key), CANCELLED)  # plait cancel
            assert await queue.beat(job) == Status.ABORTING  # its worker stops the run
            with anyio.fail_after(60):
                while not await _sweep(queue):
                    pass  # (another sweep's lock, on a loaded machine)
            stored = await queue.job(job.key)
            assert stored is not None and stored.status == Status.QUEUED
            assert stored.meta.get(CANCEL_META) == CANCELLED
        (listed,) = await queued_runs(store=store, queue=name)
        assert listed.state == "stopping"

    anyio.run(main)


def test_a_queued_run_cancelled_as_a_worker_takes_it_never_starts(store: str) -> None:
    async def main() -> None:
        async with open_queue(store, f"h{uuid.uuid4().hex[:10]}") as queue:
            order = RunOrder(run_id=f"r{uuid.uuid4().hex[:8]}", target="workers_app:chain")
            assert await queue.enqueue(job_for(order, queue=queue)) is not None
            taken = await queue.dequeue(timeout=5)
            assert taken is not None
            await queue.abort(await queue.job(order.run_id), CANCELLED)
            taken.attempts += 1
            taken.worker_id = "late:1"
            await taken.update(status=Status.ACTIVE)  # the worker's first word, too late
            stored = await queue.job(order.run_id)
            assert stored is not None and stored.worker_id != "late:1"
            assert stored.status in (Status.ABORTED, Status.ABORTING)

    anyio.run(main)


def test_a_redelivery_goes_before_every_run_not_yet_started(store: str) -> None:
    """A run handed on (its worker died) or given back (its lease still held) is taken
    before the runs queued before it that have not started: behind a backlog of thousands
    it waited half a minute in the soak, past the takeover bound."""

    async def main() -> None:
        async with open_queue(store, f"h{uuid.uuid4().hex[:10]}") as queue:
            dead = await _taken(queue, "dead:1")
            orders = [
                RunOrder(run_id=f"f{uuid.uuid4().hex[:8]}", target="workers_app:chain", input=i)
                for i in range(3)
            ]
            fresh = await queue.enqueue_many([job_for(order, queue=queue) for order in orders])
            assert [job.key for job in fresh] == [order.run_id for order in orders]
            with anyio.fail_after(60):
                while not await _sweep(queue):  # (another sweep's lock, on a loaded machine)
                    pass
            again = await queue.dequeue(timeout=5)
            assert again is not None and again.key == dead.key  # not the fresh runs
            again.attempts += 1
            again.worker_id = "next:2"
            await again.update(status=Status.ACTIVE)
            # its lease is still held: back on the queue after a delay, again first
            again.retry_delay = 0.5
            await again.retry("lease held")
            await anyio.sleep(1.2)
            await queue.schedule()
            third = await queue.dequeue(timeout=5)
            assert third is not None and third.key == dead.key
            # a batch of runs already on the queue is refused, each by itself
            assert await queue.enqueue_many([job_for(orders[0], queue=queue)]) == [None]

    anyio.run(main)


def test_a_job_of_a_gone_worker_of_this_host_is_handed_on_without_waiting(store: str) -> None:
    """A worker process of this host that no longer exists beats no more: its jobs are
    handed on at the next sweep, not after the heartbeat's timeout (a minute here); a
    live worker's are not."""
    import os
    import socket
    import subprocess
    import sys

    from plait_workers._jobs import gone

    here = socket.gethostname()
    dead_name = f"{here}:{subprocess.Popen([sys.executable, '-c', 'pass']).pid}"
    os.waitpid(int(dead_name.rpartition(":")[2]), 0)
    assert gone(dead_name)
    assert not gone(f"{here}:{os.getpid()}")  # this process
    assert not gone(f"elsewhere:{dead_name.rpartition(':')[2]}")  # another host: not known

    async def main() -> None:
        async with open_queue(store, f"g{uuid.uuid4().hex[:10]}") as queue:
            dead = await _taken(queue, dead_name, heartbeat=60)
            alive = await _taken(queue, f"{here}:{os.getpid()}", heartbeat=60)
            with anyio.fail_after(60):
                swept: list[str] = []
                while not swept:  # (another sweep's lock, on a loaded machine)
                    swept = await queue.sweep(lock=1, abort=60)
                    if not swept:
                        await anyio.sleep(1.2)
            assert swept in ([dead.key], [dead.id])  # (PostgreSQL names keys, Redis ids)
            stored = await queue.job(dead.key)
            assert stored is not None and stored.status == Status.QUEUED
            assert stored.worker_id is None  # (the gone worker is no later delivery's)
            assert await queue.beat(alive) == Status.ACTIVE

    anyio.run(main)
