"""saq's Redis queue, with a sweep that leaves alone a job a worker is just taking.

A saq worker takes a job in two steps: ``BLMOVE`` moves its id from the queued list to the
active list, then the worker writes the job's status, ``active``. saq's Redis sweep aborts
every job of the active list whose status is not ``active`` (reported upstream as
tobymao/saq#124 and #277), so a sweep that falls between the two steps aborts a job that is
about to run. For a run that means:

- a run a worker refuses (its workflow needs a grant the worker lacks) ends ``aborted``
  rather than ``refused``: the sweep, which waited for the job to end, writes its own
  ending over the worker's;
- a run that was about to start is stopped at its first boundary and delivered again.

Here a job found ``queued`` in the active list is swept only when the previous sweep of
this queue object found it there too: a job a worker is taking is ``active`` a moment
later, and one still ``queued`` a sweep later belongs to a worker that died between the two
steps. Every other job is swept as saq sweeps it: a stuck ``active`` job (no heartbeat), an
``aborting`` one, a missing one.

This module imports saq's Redis client; :func:`plait_workers._queue.open_queue` imports it
only for a ``redis://`` queue.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from saq.job import Status
from saq.queue.redis import RedisQueue

__all__ = ["RunQueue"]

logger = logging.getLogger("plait.workers")

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


class RunQueue(RedisQueue):
    """A saq :class:`~saq.queue.redis.RedisQueue` whose sweep gives a job found ``queued``
    in the active list one sweep's grace (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._snapshot: Any = None
        #: ids found ``queued`` in the active list by this queue's previous sweep
        self._taking: set[bytes] = set()

    async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
        if self._snapshot is None:
            self._snapshot = self.redis.register_script(_SNAPSHOT)
        found = await self._snapshot(
            keys=[self._sweep, self._active], args=[lock], client=self.redis
        )
        if found is None:  # another worker holds the sweep lock
            return []
        taking: set[bytes] = set()
        swept: list[bytes] = []
        for job_id, stored in found:
            job = self.deserialize(stored)
            if job is None:
                swept.append(job_id)
                await self._forget(job_id)
                continue
            if job.status == Status.QUEUED and job_id not in self._taking:
                taking.add(job_id)  # a worker is taking it; if it is still so, next time
                continue
            if job.status != Status.ACTIVE or job.stuck:
                swept.append(job_id)
                await self._sweep_one(job, abort)
        self._taking = taking
        return [job_id.decode("utf-8") for job_id in swept]

    async def _forget(self, job_id: bytes) -> None:
        """Take the id of a job that no longer exists off the active list."""
        logger.info("sweeping missing job %s", job_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self._active, 0, job_id.decode())
            pipe.zrem(self._incomplete, job_id)
            await pipe.execute()

    async def _sweep_one(self, job: Any, abort: float) -> None:
        """Abort ``job``, wait up to ``abort`` seconds for its worker to stop it, then give
        it to another delivery (or end it, when it has no delivery left)."""
        logger.info("sweeping job %s", job.info(logger.isEnabledFor(logging.DEBUG)))
        await self.abort(job, error=self.swept_error_message)
        try:
            await job.refresh(abort)
        except asyncio.TimeoutError:
            logger.info("could not abort job %s", job.id)
        if job.retryable:
            await self.retry(job, error=self.swept_error_message)
        else:
            await self.finish(job, Status.ABORTED, error=self.swept_error_message)
