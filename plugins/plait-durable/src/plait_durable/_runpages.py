"""Listing the runs a store holds, a page at a time, newest first.

:func:`list_runs` asks a store for a page of runs as a :class:`RunQuery` filters them
(status, workflow, time, run id, fork origin) and answers a :class:`RunPage` of
:class:`~plait_durable.RunSummary` records: through the store's own index when it offers
the optional :class:`RunIndex` protocol (the SQLite store answers with one indexed query
built by :func:`page_sql`, the memory store from summaries it keeps as it saves), else
from :meth:`~plait_durable.CheckpointStore.runs`. Imported when a listing is first asked
for: a run that only saves checkpoints never builds these records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ._errors import CheckpointNotFoundError
from ._runindex import RUN_COLUMNS, RunSummary, forked_from
from .checkpoint import CheckpointStore, RunInfo

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "RunIndex",
    "RunPage",
    "RunQuery",
    "list_runs",
    "page_of_rows",
    "page_sql",
    "parse_int_cursor",
]

#: How many runs a page holds unless ``limit`` says otherwise.
DEFAULT_PAGE = 50
#: The most runs one page may hold.
MAX_PAGE = 500


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
