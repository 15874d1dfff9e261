"""The journal of the durable run a task belongs to, for a plugin that must write what it
does as it happens: plait-budgets records a model call's reservation before the call goes
out, so that a run resumed after its process was killed knows what the lost attempt may
have cost (a checkpoint is written only once a superstep commits).

The durable run sets it for its invocations' tasks (a context variable) when its store
keeps a journal (:class:`~plait_durable.EventJournal`); :func:`run_journal` gives it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._runindex import MAX_JOURNAL_PAGE

if TYPE_CHECKING:
    from ._journalevents import JournalEvent

__all__ = ["RunJournalWriter", "run_journal"]


class RunJournalWriter:
    """Appends events to the journal of one durable run, under its lease, at once.

    :param store: the run's store (an :class:`~plait_durable.EventJournal`).
    :param run_id: the run.
    :param holder: what holds the run's lease (its ``lease`` attribute, renewed as the
        run goes: the checkpointer).
    """

    __slots__ = ("_holder", "run_id", "store")

    def __init__(self, store: Any, run_id: str, holder: Any) -> None:
        self.store = store
        self.run_id = run_id
        self._holder = holder

    async def append(self, events: Sequence[JournalEvent]) -> None:
        """Append ``events`` to the run's journal now (one transaction), while this
        process holds the run's lease.

        :raises RunLeaseError: another worker holds the run now.
        """
        await self.store.append_events(self.run_id, events, lease=self._holder.lease)

    async def read(self, kinds: frozenset[str]) -> list[JournalEvent]:
        """Every event of the run's journal whose kind is one of ``kinds``, oldest first
        (read page by page: checked field by field, as the store gives them)."""
        found: list[JournalEvent] = []
        after = 0
        while True:
            page = await self.store.read_events(self.run_id, after=after, limit=MAX_JOURNAL_PAGE)
            found.extend(event for event in page if event.kind in kinds)
            if len(page) < MAX_JOURNAL_PAGE:
                return found
            after = page[-1].seq


#: the journal of the durable run this task belongs to (set by the run for its tasks)
RUN_JOURNAL: contextvars.ContextVar[RunJournalWriter | None] = contextvars.ContextVar(
    "plait_durable.run_journal", default=None
)


def run_journal() -> RunJournalWriter | None:
    """The journal of the durable run this task belongs to, when its store keeps one
    (:class:`~plait_durable.EventJournal`); ``None`` otherwise (a run without a store, or
    a store without a journal). A plugin appends ``call_reserved`` / ``call_settled``
    events to it as it goes (:attr:`~plait_durable.JournalEvent.call`)."""
    return RUN_JOURNAL.get()
