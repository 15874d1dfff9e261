"""Inspecting stored runs: the run index a store keeps and the event journal's protocol.

What a run inspector (``plait ui``) needs from a store, on top of
:class:`~plait_durable.CheckpointStore`:

- a run index: one :class:`RunSummary` per run (its latest checkpoint's fields and where
  it was forked from), which a store that keeps an index writes with each save
  (:data:`RUN_COLUMNS` are a SQL store's columns). :func:`~plait_durable.list_runs` pages
  through the runs a store holds, newest first, filtered by status, workflow, time, run id
  and fork origin (:mod:`plait_durable._runpages`, with :class:`~plait_durable.RunQuery`,
  :class:`~plait_durable.RunPage` and the optional store protocol
  :class:`~plait_durable.RunIndex`: a run that only saves imports none of it).
- :func:`checkpoint_view` (in :mod:`plait_durable._runview`, as the next two: a run that
  only writes checkpoints imports neither) is a checkpoint as stored JSON: a delta merged
  with its base, never decoded into the workflow's types (the store is a trust boundary:
  nothing named by stored data is imported or built).
- :func:`diff_views` says what changed between two views, path by path.
- :func:`fork_run` copies one checkpoint (merged with its base) into a new run whose
  summary names where it came from (``forked_from``); ``list_runs(forked_from=run_id)``
  lists a run's forks, so the link goes both ways.
- :class:`EventJournal` is the optional store protocol of a per-run event journal: what
  each invocation did and when (:class:`~plait_durable.JournalEvent`, in
  :mod:`plait_durable._journalevents`: start and end with wall and monotonic times,
  attempts, retries, timeouts, errors as ``{type, message, traceback}``), appended in the
  same transaction as the superstep's checkpoint where the store allows
  (``save_with_events``) and read after a sequence number (:func:`read_journal`). A run
  writes one with the run option ``journal=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from plait.spi import record_repr

from ._stores import latest_run_info
from .checkpoint import Checkpoint, CheckpointStore, Lease, RunInfo

if TYPE_CHECKING:
    from ._journalevents import JournalEvent

__all__ = [
    "MAX_JOURNAL_PAGE",
    "RUN_COLUMNS",
    "EventJournal",
    "RunSummary",
    "check_journal_read",
    "forked_from",
    "read_journal",
]


@attrs.frozen(repr=False)
class RunSummary(RunInfo):
    """One run as the run index lists it.

    The fields of :class:`~plait_durable.RunInfo` (from the run's latest checkpoint),
    plus where the run was forked from (``forked_from``, ``forked_from_checkpoint``: the
    run and checkpoint :func:`fork_run` copied; ``None`` for a run that was not forked).
    """

    __repr__ = record_repr

    forked_from: str | None = None
    forked_from_checkpoint: str | None = None

    def as_row(self) -> tuple[Any, ...]:
        """The fields in the order of :data:`RUN_COLUMNS`: a SQL store's index row."""
        return tuple(getattr(self, column) for column in RUN_COLUMNS)

    @classmethod
    def from_checkpoints(
        cls, latest: Checkpoint, *, created_at: float, first_metadata: Mapping[str, Any]
    ) -> RunSummary:
        """The summary of the run whose latest checkpoint is ``latest``, whose first
        checkpoint was taken at ``created_at`` with metadata ``first_metadata``."""
        origin = forked_from(first_metadata)
        return latest_run_info(
            latest,
            created_at=created_at,
            kind=cls,
            forked_from=origin[0] if origin else None,
            forked_from_checkpoint=origin[1] if origin else None,
        )


def forked_from(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(run id, checkpoint id)`` a checkpoint's metadata says its run was forked from."""
    origin = metadata.get("forked_from")
    if isinstance(origin, dict):
        run, checkpoint = origin.get("run_id"), origin.get("checkpoint_id")
        if isinstance(run, str) and isinstance(checkpoint, str):
            return run, checkpoint
    return None


#: The columns of a SQL store's run index, in the order of :class:`RunSummary`'s fields
#: (``RunSummary(*row)`` rebuilds one); the table also has ``last_seq``, the insertion
#: sequence number of the run's latest checkpoint, which orders and pages it.
RUN_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in attrs.fields(RunSummary) if not field.kw_only
)  # (``metadata``, keyword only, is what a listing read, never an index column)


# -- the event journal ------------------------------------------------------------------

#: The most events one :func:`read_journal` call returns.
MAX_JOURNAL_PAGE = 10_000


@runtime_checkable
class EventJournal(Protocol):
    """The optional store protocol of a store that keeps each run's event journal.

    A store numbers the events of a run as it appends them (:attr:`JournalEvent.seq`:
    strictly increasing within the run; gaps are allowed) and returns them in that order.
    ``save_with_events`` is :meth:`~plait_durable.CheckpointStore.save` and
    ``append_events`` in one transaction where the store has transactions (SQL stores
    one transaction, Redis one ``MULTI``, the file store the journal file written before
    the checkpoint's rename): the journal never says a superstep committed that the
    checkpoints do not hold. With ``lease``, both only while it is the run's lease.
    """

    async def append_events(
        self, run_id: str, events: Sequence[JournalEvent], *, lease: Lease | None = None
    ) -> None:
        """Append ``events`` (their ``seq`` is ignored) to the journal of ``run_id``."""
        ...

    async def save_with_events(
        self,
        checkpoint: Checkpoint,
        events: Sequence[JournalEvent],
        *,
        lease: Lease | None = None,
    ) -> None:
        """Save ``checkpoint`` and append ``events`` to its run's journal, at once."""
        ...

    async def read_events(
        self, run_id: str, *, after: int = 0, limit: int = MAX_JOURNAL_PAGE
    ) -> Sequence[JournalEvent]:
        """The events of ``run_id`` whose ``seq`` is above ``after``, oldest first, at most
        ``limit`` (none for an unknown run)."""
        ...


async def read_journal(
    store: CheckpointStore, run_id: str, *, after: int = 0, limit: int = MAX_JOURNAL_PAGE
) -> Sequence[JournalEvent] | None:
    """The journal events of ``run_id`` after sequence number ``after`` (oldest first, at
    most ``limit``), or ``None`` when ``store`` keeps no journal (:class:`EventJournal`).

    :raises ValueError: a bad ``after`` or ``limit``.
    """
    check_journal_read(after, limit)
    if not isinstance(store, EventJournal):
        return None
    return await store.read_events(run_id, after=after, limit=limit)


def check_journal_read(after: int, limit: int) -> None:
    """For stores: refuse a bad ``read_events(after=, limit=)`` with a clear error."""
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ValueError(f"read_events(after=...) needs an integer >= 0, got {after!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_JOURNAL_PAGE:
        raise ValueError(f"read_events(limit=...) must be 1 to {MAX_JOURNAL_PAGE}, got {limit!r}")
