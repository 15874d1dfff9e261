"""Inspecting stored runs: a run index, a read-only view of a checkpoint, diffs and forks.

What a run inspector (``plait ui``) needs from a store, on top of
:class:`~plait_durable.CheckpointStore`:

- :func:`list_runs` pages through the runs a store holds, newest first, filtered by status,
  workflow, time, run id and fork origin. A store that keeps an index offers the optional
  :class:`RunIndex` protocol (``list_runs`` as a method: the SQLite store answers with one
  indexed query, the memory store from summaries it keeps as it saves); for any other store
  the function falls back to :meth:`~plait_durable.CheckpointStore.runs`, which reads every
  run's latest checkpoint on each page.
- :func:`checkpoint_view` (in :mod:`plait_durable._runview`, as the next two: a run that
  only writes checkpoints imports neither) is a checkpoint as stored JSON: a delta merged
  with its base, never decoded into the workflow's types (the store is a trust boundary:
  nothing named by stored data is imported or built).
- :func:`diff_views` says what changed between two views, path by path.
- :func:`fork_run` copies one checkpoint (merged with its base) into a new run whose
  summary names where it came from (``forked_from``); ``list_runs(forked_from=run_id)``
  lists a run's forks, so the link goes both ways.
- :class:`EventJournal` is the optional store protocol of a per-run event journal: what
  each invocation did and when (:class:`JournalEvent`: start and end with wall and
  monotonic times, attempts, retries, timeouts, errors as ``{type, message,
  traceback}``), appended in the same transaction as the superstep's checkpoint where the
  store allows (``save_with_events``) and read after a sequence number
  (:func:`read_journal`). A run writes one with the run option ``journal=True``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ._errors import CheckpointNotFoundError, CorruptCheckpointError
from ._stores import latest_run_info
from .checkpoint import Checkpoint, CheckpointStore, Lease, RunInfo

__all__ = [
    "DEFAULT_PAGE",
    "JOURNAL_KINDS",
    "MAX_JOURNAL_PAGE",
    "RUN_COLUMNS",
    "EventJournal",
    "JournalEvent",
    "RunIndex",
    "RunPage",
    "RunQuery",
    "RunSummary",
    "forked_from",
    "list_runs",
    "page_of_rows",
    "page_sql",
    "parse_int_cursor",
    "check_journal_read",
    "read_journal",
]

#: How many runs a page holds unless ``limit`` says otherwise.
DEFAULT_PAGE = 50
#: The most runs one page may hold.
MAX_PAGE = 500


@attrs.frozen
class RunSummary(RunInfo):
    """One run as the run index lists it.

    The fields of :class:`~plait_durable.RunInfo` (from the run's latest checkpoint),
    plus where the run was forked from (``forked_from``, ``forked_from_checkpoint``: the
    run and checkpoint :func:`fork_run` copied; ``None`` for a run that was not forked).
    """

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


@attrs.frozen
class RunQuery:
    """What :func:`list_runs` asks for; ``None`` means any.

    :param status: the latest checkpoint's status.
    :param workflow: the workflow's name.
    :param since: updated at or after (seconds since the epoch).
    :param until: updated at or before.
    :param search: the run id starts with this.
    :param forked_from: the run was forked from this run.
    :param limit: at most this many runs (1 to :data:`MAX_PAGE`).
    :param cursor: the ``next_cursor`` of the previous page.
    """

    status: str | None = None
    workflow: str | None = None
    since: float | None = None
    until: float | None = None
    search: str | None = None
    forked_from: str | None = None
    limit: int = DEFAULT_PAGE
    cursor: str | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.limit, int) or isinstance(self.limit, bool):
            raise ValueError(f"list_runs(limit=...) needs an integer, got {self.limit!r}")
        if not 1 <= self.limit <= MAX_PAGE:
            raise ValueError(f"list_runs(limit=...) must be 1 to {MAX_PAGE}, got {self.limit}")

    def matches(self, summary: RunSummary) -> bool:
        """Whether ``summary`` passes every filter (the cursor aside)."""
        return (
            (self.status is None or summary.status == self.status)
            and (self.workflow is None or summary.workflow == self.workflow)
            and (self.since is None or summary.updated_at >= self.since)
            and (self.until is None or summary.updated_at <= self.until)
            and (self.search is None or summary.run_id.startswith(self.search))
            and (self.forked_from is None or summary.forked_from == self.forked_from)
        )


@attrs.frozen
class RunPage:
    """One page of :func:`list_runs`: the runs, newest first, and the cursor of the next
    page (``None`` on the last one).
    """

    runs: Sequence[RunSummary]
    next_cursor: str | None


@runtime_checkable
class RunIndex(Protocol):
    """The optional store protocol of a store that indexes its runs.

    ``list_runs`` returns a page without reading every run: a SQL store runs one query on
    an indexed table it keeps in the same transaction as each save. A cursor is opaque to
    callers; a malformed one is a ``ValueError``.
    """

    async def list_runs(self, query: RunQuery) -> RunPage:
        """The runs ``query`` asks for, newest first (by their latest checkpoint)."""
        ...


def parse_int_cursor(cursor: str | None) -> int | None:
    """The position a store's integer cursor holds (``None`` for the first page).

    :raises ValueError: ``cursor`` is not one this index made.
    """
    if cursor is None:
        return None
    if not cursor.isdigit() or len(cursor) > 19:
        raise ValueError(f"not a run index cursor: {cursor[:40]!r}")
    return int(cursor)


async def list_runs(
    store: CheckpointStore,
    *,
    status: str | None = None,
    workflow: str | None = None,
    since: float | None = None,
    until: float | None = None,
    search: str | None = None,
    forked_from: str | None = None,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> RunPage:
    """A page of the runs ``store`` holds, newest first, as :class:`RunQuery` filters them.

    Through the store's own index when it offers :class:`RunIndex`; otherwise from
    :meth:`~plait_durable.CheckpointStore.runs` (every run's latest checkpoint is read
    for each page, and each listed run's first checkpoint for ``forked_from``).

    :raises ValueError: a bad ``limit`` or ``cursor``.
    """
    query = RunQuery(status, workflow, since, until, search, forked_from, limit, cursor)
    if isinstance(store, RunIndex):
        return await store.list_runs(query)
    return await _scan_runs(store, query)


async def _scan_runs(store: CheckpointStore, query: RunQuery) -> RunPage:
    after = parse_int_cursor(query.cursor)
    infos = list(await store.runs())
    picked: list[RunSummary] = []
    position = after or 0
    for index, info in enumerate(infos[position:], start=position):
        summary = await _summary_of(store, info)
        if summary is None or not query.matches(summary):
            continue
        if len(picked) == query.limit:
            return RunPage(picked, str(index))
        picked.append(summary)
    return RunPage(picked, None)


async def _summary_of(store: CheckpointStore, info: RunInfo) -> RunSummary | None:
    listing = await store.list(info.run_id)
    if not listing:
        return None  # deleted between the two reads
    try:
        first = await store.load(listing[0].checkpoint_id)
    except CheckpointNotFoundError:
        return None
    origin = forked_from(first.metadata)
    return RunSummary(
        **attrs.asdict(info, recurse=False),
        forked_from=origin[0] if origin else None,
        forked_from_checkpoint=origin[1] if origin else None,
    )


#: The columns of a SQL store's run index, in the order of :class:`RunSummary`'s fields
#: (``RunSummary(*row)`` rebuilds one); the table also has ``last_seq``, the insertion
#: sequence number of the run's latest checkpoint, which orders and pages it.
RUN_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in attrs.fields(RunSummary) if not field.kw_only
)  # (``metadata``, keyword only, is what a listing read, never an index column)


def page_sql(
    query: RunQuery, *, table: str = "plait_runs", placeholder: str = "?"
) -> tuple[str, tuple[Any, ...]]:
    """For SQL stores: the one query of a :class:`RunIndex` page over ``table`` (the
    :data:`RUN_COLUMNS` and ``last_seq``) and its parameters, newest first, one row more
    than the page (so the store knows whether another follows; the last row's
    ``last_seq`` is the next cursor). Each filter is an equality or range on a column
    that an index on ``(column, last_seq)`` serves; the run id is matched by prefix.

    :raises ValueError: a malformed cursor.
    """
    after = parse_int_cursor(query.cursor)
    mark = placeholder
    where_sql: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("status", query.status),
        ("workflow", query.workflow),
        ("forked_from", query.forked_from),
    ):
        if value is not None:
            where_sql.append(f"{column} = {mark}")
            params.append(value)
    if query.since is not None:
        where_sql.append(f"updated_at >= {mark}")
        params.append(query.since)
    if query.until is not None:
        where_sql.append(f"updated_at <= {mark}")
        params.append(query.until)
    if query.search:
        where_sql.append(f"substr(run_id, 1, {mark}) = {mark}")
        params.extend([len(query.search), query.search])
    if after is not None:
        where_sql.append(f"last_seq < {mark}")
        params.append(after)
    sql = f"SELECT {', '.join(RUN_COLUMNS)}, last_seq FROM {table}"
    if where_sql:
        sql += " WHERE " + " AND ".join(where_sql)
    sql += f" ORDER BY last_seq DESC LIMIT {mark}"
    params.append(query.limit + 1)
    return sql, tuple(params)


def page_of_rows(query: RunQuery, rows: Sequence[Sequence[Any]]) -> RunPage:
    """The :class:`RunPage` of the rows :func:`page_sql`'s query returned."""
    more = len(rows) > query.limit
    kept = rows[: query.limit]
    runs = [RunSummary(*row[:-1]) for row in kept]
    return RunPage(runs, str(kept[-1][-1]) if more else None)


# -- the event journal ------------------------------------------------------------------

#: What a journal event says happened (:attr:`JournalEvent.kind`).
JOURNAL_KINDS = frozenset(
    {
        "superstep_started",  # executor: None; the superstep's first invocation is about to run
        "invocation_started",  # attempt: the first attempt of this run (a resumed one: later)
        "attempt_failed",  # attempt failed with error; the next starts after delay (a retry)
        "invocation_finished",  # status ok / failed / cancelled after attempt attempts
        "run_finished",  # status: the run's
        # a plugin's outside call (plait-budgets' model calls), written as it happens, not
        # with a checkpoint (:func:`~plait_durable.run_journal`): what the call is is in
        # ``call``; reserved before it goes out, settled when it ends
        "call_reserved",
        "call_settled",
    }
)
#: The most events one :func:`read_journal` call returns.
MAX_JOURNAL_PAGE = 10_000
_ERROR_KEYS = ("type", "message", "traceback")


@attrs.frozen
class JournalEvent:
    """One event of a run's journal (:class:`EventJournal`).

    :param kind: one of :data:`JOURNAL_KINDS`.
    :param superstep: the superstep it happened in.
    :param wall: when, in seconds since the epoch (``time.time()``).
    :param mono: when, on the writing process's monotonic clock (``time.monotonic()``):
        durations between events of one process are exact, whatever the wall clock did.
    :param executor: the executor invoked (``None`` for superstep and run events).
    :param index: the position of the invocation's message among the executor's
        deliveries of the superstep.
    :param attempt: the attempt (1 for the first) that started, failed or finished last.
    :param status: for ``invocation_finished``, ``ok``, ``failed`` or ``cancelled``; for
        ``run_finished``, the run's status.
    :param delay: for ``attempt_failed``, the seconds before the next attempt.
    :param timeout: the attempt failed by running past its timeout.
    :param error: ``{"type", "message", "traceback"}`` of what the attempt or invocation
        raised (the handler's own exception), as text.
    :param seq: the store's sequence number (0 before the store numbered it): strictly
        increasing within a run, in the order the events were appended.
    :param call: for ``call_reserved`` and ``call_settled``, what the plugin that wrote
        them records of the call: a JSON object of strings, integers and lists of them.
    """

    kind: str
    superstep: int
    wall: float
    mono: float
    executor: str | None = None
    index: int | None = None
    attempt: int | None = None
    status: str | None = None
    delay: float | None = None
    timeout: bool = False
    error: Mapping[str, str] | None = None
    seq: int = 0
    call: Mapping[str, Any] | None = None

    def to_json(self) -> str:
        """The event as one line of JSON (without ``seq``: the store gives it): what a
        store keeps."""
        data = {k: v for k, v in attrs.asdict(self).items() if v is not None and k != "seq"}
        if not self.timeout:
            del data["timeout"]
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, *, seq: int, where: str) -> JournalEvent:
        """The event a store kept as :meth:`to_json` made it, checked field by field: a
        store is a trust boundary, so only these JSON values are built.

        :raises CorruptCheckpointError: ``text`` is not such an event (``where`` names it).
        """
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptCheckpointError(
                f"journal event {seq} of {where} is not JSON: {exc}"
            ) from None
        problem = _journal_problem(data)
        if problem is not None:
            raise CorruptCheckpointError(f"journal event {seq} of {where} is corrupt: {problem}")
        return cls(**data, seq=seq)


_OPTIONAL_TYPES: dict[str, tuple[type, ...]] = {
    "executor": (str,),
    "index": (int,),
    "attempt": (int,),
    "status": (str,),
    "delay": (int, float),
    "timeout": (bool,),
}


def _journal_problem(data: Any) -> str | None:
    """What is wrong with a stored journal event, or ``None``."""
    if not isinstance(data, dict):
        return "not a JSON object"
    unknown = sorted(set(data) - {f.name for f in attrs.fields(JournalEvent)} - {"seq"})
    if unknown or "seq" in data:
        return f"unknown field(s) {', '.join(unknown or ['seq'])}"
    if data.get("kind") not in JOURNAL_KINDS:
        return "kind is not one of " + ", ".join(sorted(JOURNAL_KINDS))
    superstep = data.get("superstep")
    if not isinstance(superstep, int) or isinstance(superstep, bool):
        return "superstep is not an integer"
    for name in ("wall", "mono"):
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} is not a number"
        if not math.isfinite(value):
            return f"{name} is not finite"
    for name, types in _OPTIONAL_TYPES.items():
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            return f"{name} is not a {types[0].__name__}"
    error = data.get("error")
    if error is not None and (
        not isinstance(error, dict)
        or set(error) != set(_ERROR_KEYS)
        or not all(isinstance(error[k], str) for k in _ERROR_KEYS)
    ):
        return "error is not {type, message, traceback} as text"
    call = data.get("call")
    if call is not None and not _plain_record(call):
        return "call is not a JSON object of strings, integers and lists of them"
    return None


def _plain(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _plain_record(value: Any) -> bool:
    """A JSON object whose values are strings, integers or lists of them (a call event's
    ``call``: nothing else is built from a store)."""
    return isinstance(value, dict) and all(
        isinstance(key, str)
        and (_plain(item) or (isinstance(item, list) and all(_plain(i) for i in item)))
        for key, item in value.items()
    )


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
