"""The file store's run index (:class:`plait_durable.RunIndex`): ``DIR/runs.index``.

An append-only log, one JSON line per change of a run's summary, so a page of
``list_runs`` reads one file — and only its new tail once this process has read it —
instead of every run's checkpoint files:

- ``{"s": STAMP, "row": [...], "full": true}``: the whole summary of a run (its first
  save, or after checkpoints of it were deleted);
- ``{"s": STAMP, "row": [...], "full": false}``: a later save: the run's status, superstep,
  requests, error and time; it keeps when it started and where it was forked from;
- ``{"s": STAMP, "gone": RUN}``: the run has no checkpoint left.

``row`` is :attr:`plait_durable.kit.CheckpointStoreBase.RUN_COLUMNS` in order. ``STAMP``
orders the runs, newest first: nanoseconds since the epoch when the line was written,
above any stamp this process has seen. A save appends its line right after the
checkpoint's rename (its commit point), holding a shared ``flock`` on
``runs.index.lock``; compaction (one full line per run, when the log is more than twice
that long) and rebuilding take it exclusively and replace the file atomically.

The index is data, never trusted: every line is checked field by field, and nothing in it
is imported or decoded as a checkpoint. A missing index (a directory written before the
index existed) or a line that does not check is rebuilt from the run directories, once.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from plait_durable import RunPage, RunQuery, RunSummary
from plait_durable.kit import CheckpointStoreBase

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["INDEX_NAME", "RunIndexLog", "summary_line"]

INDEX_NAME = "runs.index"
_LOCK_NAME = "runs.index.lock"
_COLUMNS = CheckpointStoreBase.RUN_COLUMNS

#: Types of each column of a summary row, in RUN_COLUMNS order (``None`` allowed where
#: the summary allows it).
_COLUMN_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "run_id": ((str,), False),
    "workflow": ((str,), True),
    "status": ((str,), False),
    "superstep": ((int,), False),
    "pending_requests": ((int,), False),
    "error": ((str,), True),
    "created_at": ((int, float), False),
    "updated_at": ((int, float), False),
    "forked_from": ((str,), True),
    "forked_from_checkpoint": ((str,), True),
}
#: How many lines beyond two per run the log may grow before it is compacted.
COMPACT_SLACK = 1000
#: What a later save keeps from the run's entry (positions in a row).
_KEPT_AT = frozenset(
    _COLUMNS.index(name) for name in ("created_at", "forked_from", "forked_from_checkpoint")
)


class IndexCorrupt(Exception):
    """A line of the index does not check: the index is rebuilt."""


def summary_line(summary: RunSummary, stamp: int, *, full: bool) -> bytes:
    """The index line of ``summary`` (``full``: the whole summary, else a later save's)."""
    data = {"s": stamp, "row": list(summary.as_row()), "full": full}
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def gone_line(run_id: str, stamp: int) -> bytes:
    """The index line of a run with no checkpoint left."""
    return json.dumps({"s": stamp, "gone": run_id}, ensure_ascii=True).encode("ascii") + b"\n"


def _checked_row(row: Any) -> tuple[Any, ...]:
    if not isinstance(row, list) or len(row) != len(_COLUMNS):
        raise IndexCorrupt("a row is not a list of the run index's columns")
    for name, value in zip(_COLUMNS, row):
        types, nullable = _COLUMN_TYPES[name]
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise IndexCorrupt(f"{name} is not a {types[0].__name__}")
    return tuple(row)


class _Entry:
    """One run of the index: its stamp, its checked row, and its summary once asked for
    (a first page of 50 builds 50 summaries, not one per run)."""

    __slots__ = ("_summary", "row", "stamp")

    def __init__(self, stamp: int, row: tuple[Any, ...]) -> None:
        self.stamp = stamp
        self.row = row
        self._summary: RunSummary | None = None

    def summary(self) -> RunSummary:
        if self._summary is None:
            self._summary = RunSummary(*self.row)
        return self._summary


class _State:
    """What this process has read of one directory's index."""

    def __init__(self) -> None:
        self.inode: tuple[int, int] | None = None
        self.offset = 0
        self.lines = 0
        self.runs: dict[str, _Entry] = {}
        self.last_stamp = 0
        self.lock = threading.RLock()

    def reset(self) -> None:
        self.inode, self.offset, self.lines, self.runs = None, 0, 0, {}

    def apply_lines(self, raw: bytes) -> None:
        """Apply whole lines (one JSON parse for all of them: 10,000 lines parse three
        times faster than line by line)."""
        lines = raw.splitlines()
        if not lines:
            return
        try:
            parsed = json.loads(b"[" + b",".join(lines) + b"]")
        except ValueError:
            raise IndexCorrupt("a line is not JSON") from None
        if len(parsed) != len(lines):
            raise IndexCorrupt("a line holds more than one value")
        for data in parsed:
            self.apply(data)

    def apply(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise IndexCorrupt("a line is not a JSON object")
        stamp = data.get("s")
        if isinstance(stamp, bool) or not isinstance(stamp, int) or stamp < 0:
            raise IndexCorrupt("a stamp is not a non-negative integer")
        self.last_stamp = max(self.last_stamp, stamp)
        self.lines += 1
        if "gone" in data:
            if not isinstance(data["gone"], str):
                raise IndexCorrupt("a removed run's id is not text")
            self.runs.pop(data["gone"], None)
            return
        row = _checked_row(data.get("row"))
        if data.get("full") is not True:
            known = self.runs.get(row[0])
            if known is not None:
                row = tuple(known.row[i] if i in _KEPT_AT else value for i, value in enumerate(row))
        self.runs[row[0]] = _Entry(stamp, row)


_states: dict[str, _State] = {}
_states_guard = threading.Lock()


class RunIndexLog:
    """The run index of one file store directory.

    :param root: opens the store's directory (a descriptor, or ``None`` if it does not
        exist), the store's way: without following links.
    :param open_file: opens a regular file in a directory descriptor without following
        links (``None`` if it is missing).
    :param rebuild: every run's summary, read from the run directories (for a rebuild).
    :param write_atomic: writes a whole file in a directory descriptor atomically (the
        store's own routine: a temporary file, fsynced, renamed over it).
    :param key: the directory's real path (one state per directory in this process).
    """

    def __init__(
        self,
        root: Callable[..., contextlib.AbstractContextManager[int | None]],
        open_file: Callable[..., int | None],
        rebuild: Callable[[], list[RunSummary]],
        write_atomic: Callable[[int, str, bytes], None],
        key: str,
    ) -> None:
        self._root = root
        self._write_atomic = write_atomic
        self._open = open_file
        self._rebuild = rebuild
        with _states_guard:
            self._state = _states.setdefault(key, _State())

    # -- writing ----------------------------------------------------------------------

    def stamp(self) -> int:
        state = self._state
        stamp = max(time.time_ns(), state.last_stamp + 1)
        state.last_stamp = stamp
        return stamp

    @contextlib.contextmanager
    def _locked(self, root: int, exclusive: bool) -> Iterator[None]:
        fd = self._open(root, _LOCK_NAME, _LOCK_NAME, os.O_RDWR | os.O_CREAT)
        assert fd is not None  # created
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    def append(self, line: Callable[[int], bytes]) -> None:
        """Append the line ``line(stamp)`` makes (after a save's commit point); a missing
        index is rebuilt instead (it then holds this change too). The file is opened
        under the shared lock, so a compaction or rebuild (which replace it under the
        exclusive one) never leaves this line in a file that is gone."""
        with self._root(create=True) as root:
            assert root is not None  # created
            with self._locked(root, exclusive=False):
                fd = self._open(root, INDEX_NAME, INDEX_NAME, os.O_WRONLY | os.O_APPEND)
                if fd is not None:
                    try:
                        os.write(fd, line(self.stamp()))
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    return
            self._rebuild_in(root)

    def _rebuild_in(self, root: int) -> None:
        with self._locked(root, exclusive=True):
            summaries = sorted(self._rebuild(), key=lambda s: (s.updated_at, s.run_id))
            entries = []
            last = 0
            for summary in summaries:  # stamps from the runs' times, in order, each unique
                last = max(int(summary.updated_at * 1e9), last + 1)
                entries.append((last, summary))
            self._state.last_stamp = max(self._state.last_stamp, last)
            self._write_all(root, entries)

    def _write_all(self, root: int, entries: list[tuple[int, RunSummary]]) -> None:
        body = b"".join(summary_line(s, stamp, full=True) for stamp, s in entries)
        with self._state.lock:
            self._write_atomic(root, INDEX_NAME, body)
            self._state.reset()

    # -- reading ----------------------------------------------------------------------

    def page(self, query: RunQuery) -> RunPage:
        """A page of the index, newest first."""
        after = CheckpointStoreBase._cursor_position(query.cursor)
        runs = self._current()
        indexed = sorted(runs.values(), key=lambda entry: (-entry.stamp, entry.row[0]))
        unfiltered = attrs.evolve(query, limit=1, cursor=None) == RunQuery(limit=1)
        picked: list[_Entry] = []
        for entry in indexed:
            if after is not None and entry.stamp >= after:
                continue
            if not unfiltered and not query.matches(entry.summary()):
                continue
            if len(picked) == query.limit:
                return RunPage([e.summary() for e in picked], str(picked[-1].stamp))
            picked.append(entry)
        return RunPage([e.summary() for e in picked], None)

    def _current(self) -> dict[str, _Entry]:
        state = self._state
        with state.lock, self._root() as root:
            if root is None:
                return {}
            for _attempt in range(2):
                try:
                    if self._read_tail(root):
                        return dict(state.runs)
                except IndexCorrupt:
                    pass
                self._rebuild_in(root)  # missing or damaged: rebuilt once, then read
            raise IndexCorrupt("the run index could not be rebuilt")  # pragma: no cover

    def _read_tail(self, root: int) -> bool:
        """Read what was appended since this process last looked (all of it after a
        compaction or rebuild); ``False`` if there is no index."""
        state = self._state
        fd = self._open(root, INDEX_NAME, INDEX_NAME)
        if fd is None:
            return False
        try:
            info = os.fstat(fd)
            inode = (info.st_dev, info.st_ino)
            if inode != state.inode or info.st_size < state.offset:
                state.reset()
                state.inode = inode
            if info.st_size == state.offset:
                return True
            tail = os.pread(fd, info.st_size - state.offset, state.offset)
        finally:
            os.close(fd)
        end = tail.rfind(b"\n") + 1  # a line being appended right now waits for next time
        try:
            state.apply_lines(tail[:end])
        except (IndexCorrupt, TypeError, ValueError) as exc:
            state.reset()
            raise IndexCorrupt(str(exc)) from None
        state.offset += end
        if state.lines > 2 * len(state.runs) + COMPACT_SLACK:
            self._compact(root)
        return True

    def _compact(self, root: int) -> None:
        with self._locked(root, exclusive=True):
            state = self._state
            self._read_rest(root)
            entries = sorted(state.runs.values(), key=lambda entry: entry.stamp)
            runs = dict(state.runs)
            self._write_all(root, [(e.stamp, e.summary()) for e in entries])
            self._read_tail_fresh(root, runs)

    def _read_rest(self, root: int) -> None:
        """Under the exclusive lock: apply what was appended since the last read."""
        state = self._state
        fd = self._open(root, INDEX_NAME, INDEX_NAME)
        if fd is None:
            return
        try:
            size = os.fstat(fd).st_size
            tail = os.pread(fd, size - state.offset, state.offset)
        finally:
            os.close(fd)
        state.apply_lines(tail[: tail.rfind(b"\n") + 1])
        state.offset += tail.rfind(b"\n") + 1

    def _read_tail_fresh(self, root: int, runs: dict[str, _Entry]) -> None:
        """After a compaction: what this process knows is what it just wrote."""
        state = self._state
        fd = self._open(root, INDEX_NAME, INDEX_NAME)
        assert fd is not None
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        state.inode, state.offset, state.runs, state.lines = (
            (info.st_dev, info.st_ino),
            info.st_size,
            runs,
            len(runs),
        )
