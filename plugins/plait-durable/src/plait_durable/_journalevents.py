"""One event of a run's journal, as a store keeps and returns it.

A :class:`JournalEvent` is what an invocation, a superstep or a plugin's outside call did
and when (:data:`JOURNAL_KINDS`), written by a run with the run option ``journal=True`` and
by a plugin through :func:`~plait_durable.run_journal`, and read back field by field
(:meth:`JournalEvent.from_json`: a store is a trust boundary). The store protocol that
keeps them is :class:`~plait_durable.EventJournal` (:mod:`plait_durable._runindex`);
this module is imported when an event is first made or read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from ._errors import CorruptCheckpointError

__all__ = ["JOURNAL_KINDS", "JournalEvent"]

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
_ERROR_KEYS = ("type", "message", "traceback")


@attrs.frozen
class JournalEvent:
    """One event of a run's journal (:class:`~plait_durable.EventJournal`).

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
