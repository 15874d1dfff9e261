"""Writing a run's event journal: an observer that records what each invocation did, and
a view of the store that saves those records with the checkpoint of their superstep.

A run writes a journal with the run option ``journal=True`` (a durable run, on a store
that offers :class:`~plait_durable.EventJournal`). Nothing here exists otherwise: the
runner sees no extra observer and the checkpointer the store itself, so a run without a
journal pays nothing for it.

:class:`RunJournal` is a :class:`~plait.spi.RunObserver`: the runner tells it of
supersteps and invocations at its seams (nothing patches the runner), and it keeps
:class:`~plait_durable.JournalEvent` records in memory. :class:`JournaledStore` is the store
as the run's checkpointer sees it: each save hands the events of the supersteps up to the
checkpoint's to the store's ``save_with_events``, one transaction for both; what no
checkpoint took by the end of the run is appended on its own (:meth:`RunJournal.flush`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from typing import Any

from plait import ExecutorFailedError, ExecutorTimeoutError, RunOptionError
from plait.spi import Invocation, RunObserver

from ._journalevents import JournalEvent
from ._runindex import EventJournal
from .checkpoint import Checkpoint, Lease

__all__ = ["JournaledStore", "RunJournal", "error_record", "journal_store"]

#: The longest error message a journal event keeps (characters).
_MAX_MESSAGE = 2000
#: The most of a traceback a journal event keeps (characters, its end kept).
_MAX_TRACEBACK = 8000


def error_record(error: BaseException) -> dict[str, str]:
    """``{type, message, traceback}`` of ``error`` as text — of the handler's own
    exception when ``error`` is the run error that wraps it."""
    failure: BaseException = error
    if isinstance(error, ExecutorFailedError) and error.__cause__ is not None:
        failure = error.__cause__
    message = str(failure)
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    text = "".join(traceback.format_exception(type(failure), failure, failure.__traceback__))
    if len(text) > _MAX_TRACEBACK:
        text = "…" + text[-(_MAX_TRACEBACK - 1) :]
    return {"type": type(failure).__name__, "message": message, "traceback": text}


def _timed_out(error: BaseException) -> bool:
    return isinstance(error, (ExecutorTimeoutError, TimeoutError))


class _Handle:
    """An invocation as the journal tracks it between its start and its end."""

    __slots__ = ("executor", "index", "superstep")

    def __init__(self, executor: str, superstep: int, index: int) -> None:
        self.executor = executor
        self.superstep = superstep
        self.index = index


class RunJournal(RunObserver):
    """The observer that records a run's journal events until a checkpoint takes them."""

    def __init__(self) -> None:
        self.pending: list[JournalEvent] = []

    def _add(self, kind: str, superstep: int, **fields: Any) -> None:
        self.pending.append(JournalEvent(kind, superstep, time.time(), time.monotonic(), **fields))

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self._add("superstep_started", superstep)

    def invocation_started(self, invocation: Invocation) -> Any:
        handle = _Handle(invocation.executor_id, invocation.superstep, invocation.index)
        self._add(
            "invocation_started",
            handle.superstep,
            executor=handle.executor,
            index=handle.index,
            attempt=1,
        )
        return handle

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        self._add(
            "attempt_failed",
            handle.superstep,
            executor=handle.executor,
            index=handle.index,
            attempt=attempt,
            delay=float(delay),
            timeout=_timed_out(error),
            error=error_record(error),
        )

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        record = error_record(error) if error is not None and status == "failed" else None
        self._add(
            "invocation_finished",
            handle.superstep,
            executor=handle.executor,
            index=handle.index,
            attempt=attempt,
            status=status,
            timeout=error is not None and status == "failed" and _timed_out(error),
            error=record,
        )

    def finished(self, superstep: int, status: str) -> None:
        """The run ended with ``status`` (the durable runner says so, with its store
        still open: the observer's own ``run_finished`` comes after the store closed)."""
        self._add("run_finished", superstep, status=status)

    def take(self, superstep: int | None) -> list[JournalEvent]:
        """The events recorded so far of supersteps up to ``superstep`` (every one for
        ``None``), in order; the rest stay for a later checkpoint."""
        pending = self.pending
        if not pending:
            return []
        if superstep is None or pending[-1].superstep <= superstep:
            self.pending = []
            return pending
        taken = [e for e in pending if e.superstep <= superstep]
        self.pending = [e for e in pending if e.superstep > superstep]
        return taken

    async def flush(self, store: EventJournal, run_id: str, lease: Lease | None) -> None:
        """Append what no checkpoint took."""
        events, self.pending = self.pending, []
        if events:
            await store.append_events(run_id, events, lease=lease)


class JournaledStore:
    """The run's store as its checkpointer sees it: a save carries the journal events of
    the supersteps up to the checkpoint's (``save_with_events``: one transaction); every
    other call goes to the store itself.

    :param store: a store that offers :class:`~plait_durable.EventJournal`.
    :param journal: the run's journal observer.
    """

    def __init__(self, store: EventJournal, journal: RunJournal) -> None:
        self.store = store
        self.journal = journal

    def __getattr__(self, name: str) -> Any:
        if name == "save_many":  # the async writer then saves one by one, through save
            raise AttributeError(name)
        return getattr(self.store, name)

    async def save(
        self,
        checkpoint: Checkpoint,
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Save ``checkpoint`` with the journal events it takes: those of its superstep and
        before, or all of them for the run's last checkpoint (a failed run's copies the
        superstep before the one that failed); and its new ``blobs``, where the store
        keeps blobs (:class:`plait_durable.BlobStore`), in the same transaction."""
        last = checkpoint.status != "running"
        events = self.journal.take(None if last else checkpoint.superstep)
        try:
            if blobs:
                await self.store.save_with_events(  # type: ignore[call-arg]
                    checkpoint, events, lease=lease, blobs=blobs
                )
            else:
                await self.store.save_with_events(checkpoint, events, lease=lease)
        except BaseException:
            self.journal.pending[:0] = events  # not written: the next save tries again
            raise


def journal_store(store: Any) -> EventJournal:
    """``store`` if it keeps an event journal, else a clear error."""
    if not isinstance(store, EventJournal):
        raise RunOptionError(
            f"run option journal=True needs a checkpoint store that keeps an event journal "
            f"(plait_durable.EventJournal: memory, file, SQLite, Redis and PostgreSQL do); "
            f"{type(store).__name__} {getattr(store, 'url', '')!s} does not"
        )
    return store
