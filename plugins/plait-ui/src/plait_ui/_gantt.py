"""The Gantt of a run's invocations, built from its event journal
(:class:`plait_durable.EventJournal`): one row per invocation, each attempt a bar of its own,
the back-off before a retry between them, timeouts and failures marked, and the error of
each failed attempt (type, message, traceback).

Bars are placed by wall-clock time from the first event shown, and sized by the monotonic
clock of the process that ran the invocation (exact durations, whatever the wall clock
did). The page draws them as SVG, whose ``x`` and ``width`` are attributes: the CSP
allows no inline style.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from plait_durable import JournalEvent

__all__ = ["Attempt", "Gantt", "Row", "build_gantt"]

#: The most invocation rows one Gantt shows (the supersteps nearest the chosen one).
MAX_ROWS = 400
#: The SVG's width in user units, the label column included.
WIDTH = 1000
LABEL = 220
ROW_HEIGHT = 20


@attrs.define
class Attempt:
    """One attempt of an invocation: when it started and ended (seconds from the Gantt's
    start), how it ended, and what it raised."""

    number: int
    start: float
    end: float | None = None
    outcome: str = "running"  # ok, failed, timeout, cancelled, running
    error: Mapping[str, str] | None = None
    delay: float | None = None  # the back-off after it, when it was retried
    start_mono: float = 0.0


@attrs.define
class Row:
    """One invocation: executor, superstep, index, its attempts and how it ended."""

    executor: str
    superstep: int
    index: int
    attempts: list[Attempt] = attrs.field(factory=list)
    status: str = "running"

    @property
    def label(self) -> str:
        suffix = f"#{self.index}" if self.index else ""
        return f"{self.executor}{suffix} · step {self.superstep}"

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1


@attrs.frozen
class Bar:
    """An SVG rectangle of the chart (user units)."""

    x: float
    y: float
    width: float
    kind: str
    title: str


@attrs.frozen
class Gantt:
    """What the run page draws: the rows, the span they cover (seconds), the bars and
    back-off lines in SVG units, and the failed attempts with their errors."""

    rows: Sequence[Row]
    span: float
    bars: Sequence[Bar]
    backoffs: Sequence[Bar]
    failures: Sequence[tuple[Row, Attempt]]
    height: int
    left_out: int

    @property
    def empty(self) -> bool:
        return not self.rows


def _rows(events: Iterable[JournalEvent]) -> list[Row]:
    rows: dict[tuple[int, str, int], Row] = {}
    for event in events:
        if event.executor is None:
            continue
        key = (event.superstep, event.executor, event.index or 0)
        row = rows.get(key)
        if event.kind == "invocation_started":
            row = rows[key] = Row(event.executor, event.superstep, event.index or 0)
            row.attempts.append(Attempt(event.attempt or 1, event.wall, start_mono=event.mono))
            continue
        if row is None or not row.attempts:
            continue  # its start is not in what was read
        current = row.attempts[-1]
        if event.kind == "attempt_failed":
            current.end = current.start + max(event.mono - current.start_mono, 0.0)
            current.outcome = "timeout" if event.timeout else "failed"
            current.error = event.error
            current.delay = event.delay
            pause = event.delay or 0.0
            row.attempts.append(
                Attempt(
                    (event.attempt or current.number) + 1,
                    current.end + pause,
                    start_mono=event.mono + pause,
                )
            )
        elif event.kind == "invocation_finished":
            current.end = current.start + max(event.mono - current.start_mono, 0.0)
            status = event.status or "ok"
            current.outcome = "timeout" if event.timeout else status
            current.error = event.error
            row.status = current.outcome
    return list(rows.values())


def build_gantt(events: Sequence[JournalEvent], around: int | None = None) -> Gantt:
    """The Gantt of ``events`` (a run's journal, oldest first): at most
    :data:`MAX_ROWS` invocations, those of the supersteps nearest ``around``."""
    rows = _rows(events)
    left_out = 0
    if len(rows) > MAX_ROWS:
        target = around if around is not None else rows[-1].superstep
        nearest = sorted(rows, key=lambda r: (abs(r.superstep - target), r.superstep))
        kept = {id(r) for r in nearest[:MAX_ROWS]}
        left_out = len(rows) - MAX_ROWS
        rows = [r for r in rows if id(r) in kept]
    if not rows:
        return Gantt([], 0.0, [], [], [], 0, left_out)
    t0 = min(a.start for r in rows for a in r.attempts)
    for row in rows:  # seconds from the first start shown
        for attempt in row.attempts:
            attempt.start -= t0
            if attempt.end is not None:
                attempt.end -= t0
    ends = [a.end if a.end is not None else a.start for r in rows for a in r.attempts]
    span = max(max(ends), 1e-6)
    scale = (WIDTH - LABEL - 10) / span
    bars: list[Bar] = []
    backoffs: list[Bar] = []
    failures: list[tuple[Row, Attempt]] = []
    for position, row in enumerate(rows):
        y = position * ROW_HEIGHT + 3
        for attempt in row.attempts:
            end = attempt.end if attempt.end is not None else span
            title = (
                f"{row.label} attempt {attempt.number}: {attempt.outcome}, "
                f"{_seconds(end - attempt.start)} from {_seconds(attempt.start)}"
            )
            if attempt.error:
                title += f" — {attempt.error.get('type')}: {attempt.error.get('message')}"
            x = LABEL + attempt.start * scale
            bars.append(Bar(x, y, max((end - attempt.start) * scale, 2.0), attempt.outcome, title))
            if attempt.delay:
                backoffs.append(
                    Bar(
                        LABEL + end * scale,
                        y + ROW_HEIGHT / 2 - 3,
                        max(attempt.delay * scale, 1.0),
                        "backoff",
                        f"back-off {_seconds(attempt.delay)} before attempt {attempt.number + 1}",
                    )
                )
            if attempt.error:
                failures.append((row, attempt))
    return Gantt(rows, span, bars, backoffs, failures, len(rows) * ROW_HEIGHT + 6, left_out)


def _seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def gantt_context(gantt: Gantt) -> dict[str, Any]:
    """What the template needs besides the Gantt: its sizes."""
    return {"width": WIDTH, "label": LABEL, "row_height": ROW_HEIGHT, "span": _seconds(gantt.span)}
