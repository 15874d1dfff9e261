"""The task queue runs travel on: saq, on the same PostgreSQL or Redis as the checkpoints.

One saq job per run, keyed by the run id: saq refuses a second job for a run while one is
queued or active, so a run is delivered to one worker at a time (Plait's lease stays the
guarantee of one writer; the queue only delivers). A job carries what a worker needs to
start or resume the run (:class:`RunOrder`), never a grant: what a worker may load is what
its own command line grants.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError

if TYPE_CHECKING:
    from saq import Job, Queue

__all__ = [
    "DEFAULT_QUEUE",
    "FUNCTION",
    "HEARTBEAT",
    "METADATA_KEY",
    "QueueError",
    "RunOrder",
    "job_for",
    "open_queue",
    "queue_url",
]

#: The queue ``plait submit`` and ``plait worker`` use unless ``--queue`` names another.
DEFAULT_QUEUE = "plait"
#: The saq function name of a run's job.
FUNCTION = "plait.run"
#: Seconds a job lives without its worker's heartbeat before the queue's sweep gives it to
#: another worker (a worker beats every third of it).
HEARTBEAT = 3
#: Deliveries of one run: drains, lease refusals and takeovers each count one.
MAX_DELIVERIES = 1_000_000
#: The checkpoint metadata key under which a worker records how a run was submitted (its
#: target, format and queue; a cancellation).
METADATA_KEY = "workers"
#: The schemes a queue can live on (saq's two backends that Plait's stores share).
SCHEMES = ("redis", "rediss", "postgresql", "postgres")


class QueueError(PlaitError):
    """A queue cannot be used: a store URL no queue can live on, a run that is not on the
    queue, or a run that is not in the state an operation needs. The message names the run,
    the queue and the store."""


def queue_url(store: str) -> str:
    """The URL saq opens for the checkpoint store ``store`` (the same server).

    :raises QueueError: ``store`` is not on PostgreSQL or Redis.
    """
    scheme = store.partition("://")[0].lower()
    if scheme.startswith("sealed:"):
        scheme = scheme[len("sealed:") :]
        store = store[len("sealed:") :]
    if scheme not in SCHEMES:
        raise QueueError(
            f"store {store!r}: workers share runs through PostgreSQL or Redis; pass "
            "--checkpoint postgresql://… or redis://… (a queue cannot live on "
            f"{scheme or 'a path'}://)"
        )
    if scheme == "postgres":
        return "postgresql://" + store.partition("://")[2]
    return store


@asynccontextmanager
async def open_queue(
    store: str, name: str = DEFAULT_QUEUE, *, client: bool = False
) -> AsyncIterator[Queue]:
    """The saq queue ``name`` on the server of the store ``store``, connected.

    :param client: for one call (submit, cancel, answer, list) rather than a worker: on
        PostgreSQL, a pool of one connection (saq's default keeps four open).
    """
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise QueueError(f"queue name {name!r}: use letters, digits, '-', '_' or '.'")
    url = queue_url(store)
    sizes = {"min_size": 1, "max_size": 2} if client and url.startswith("postgres") else {}
    queue: Queue
    if url.startswith("redis"):
        from plait_workers._redis import RunQueue  # (saq's sweep, mended: see there)

        queue = RunQueue.from_url(url, name=name)
    else:
        from plait_workers._postgres import RunQueue as PostgresRunQueue

        queue = PostgresRunQueue.from_url(url, name=name, **sizes)
    try:
        await queue.connect()
        if url.startswith("postgres"):
            await _schema_ready(queue, store)
    except QueueError:
        await queue.disconnect()
        raise
    except Exception as exc:
        raise QueueError(f"cannot reach the queue {name!r} at {store}: {exc}") from exc
    try:
        yield queue
    finally:
        await queue.disconnect()


async def _schema_ready(queue: Any, store: str, timeout: float = 30.0) -> None:
    """Wait until saq's tables exist: saq creates them under an advisory lock, and a
    connection that finds the lock taken (another process creating them, in a fresh
    database) goes on at once, before they exist."""
    import anyio

    with anyio.move_on_after(timeout):
        while True:
            async with queue.pool.connection() as conn:
                cursor = await conn.execute("SELECT to_regclass('saq_jobs') IS NOT NULL")
                found = await cursor.fetchone()
            if found and found[0]:
                return
            await anyio.sleep(0.1)
    raise QueueError(f"saq's tables did not appear in {store} within {timeout:g} s")


@attrs.frozen(kw_only=True)
class RunOrder:
    """What a queued job asks a worker to do: start run ``run_id`` of ``target`` on
    ``input``, or resume it (with ``responses`` to its pending requests).

    :param run_id: the run's id (also the job's key).
    :param target: the workflow: a document's absolute path, or ``module:attr``.
    :param format: the document's format (``--format``), if named.
    :param input: the run's first message (JSON).
    :param responses: answers to pending requests, by request id (JSON values).
    """

    run_id: str
    target: str
    format: str | None = None
    input: Any = None
    responses: Mapping[str, Any] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The order as the job's keyword arguments."""
        return {
            "run_id": self.run_id,
            "target": self.target,
            "format": self.format,
            "input": self.input,
            "responses": dict(self.responses),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunOrder:
        """An order read back from a job (untrusted: each field is checked).

        :raises QueueError: a field is missing or of the wrong type.
        """
        run_id, target = data.get("run_id"), data.get("target")
        format, responses = data.get("format"), data.get("responses") or {}
        if not isinstance(run_id, str) or not run_id:
            raise QueueError(f"a queued job has no run id (run_id={run_id!r})")
        if not isinstance(target, str) or not target:
            raise QueueError(f"queued run {run_id}: no workflow target (target={target!r})")
        if format is not None and not isinstance(format, str):
            raise QueueError(f"queued run {run_id}: format must be a string, got {format!r}")
        if not isinstance(responses, Mapping):
            raise QueueError(f"queued run {run_id}: responses must be an object")
        return cls(
            run_id=run_id,
            target=target,
            format=format,
            input=data.get("input"),
            responses=dict(responses),
        )


def job_for(order: RunOrder, *, queue: Queue) -> Job:
    """The saq job that delivers ``order`` on ``queue``: keyed by the run id, no time limit
    (a run takes as long as it takes), a heartbeat so that the sweep of any live worker
    hands a dead worker's job on, and retries enough for every redelivery."""
    from saq import Job

    from ._jobs import FIRST_DELIVERY  # (saq's, imported with the first job)

    return Job(
        function=FUNCTION,
        kwargs={"order": order.to_json()},
        queue=queue,
        key=order.run_id,
        timeout=0,
        heartbeat=HEARTBEAT,
        retries=MAX_DELIVERIES,
        retry_delay=0.5,
        ttl=24 * 3600,
        priority=FIRST_DELIVERY,
    )
