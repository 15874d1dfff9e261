"""The recorder: a run observer that keeps every outside call of the invocations it is
told about (:class:`Recorder`), answered by :class:`_Site` — the
:class:`plait.spi.OutsideCalls` of one invocation — for real or, in a replay, from the
record (:class:`Replaying`). What it kept goes into each checkpoint's ``observed``
section (``RunObserver.checkpoint_section``), where the checkpoint's blobs keep its
large values content-addressed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from plait.spi import Invocation, RunObserver, add_answerer, outside_calls, remove_answerer

from ._errors import ReplayMissError
from ._record import SECTION, Recording

__all__ = ["Recorder", "Replaying", "canonical", "request_key"]
#: how many recorded requests a miss compares its request with, at most (the nearest one
#: gets the diff)
_NEAREST_AMONG = 200


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces): what a request's key hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Any) -> str:
    """The key of a request: the SHA-256 of its canonical JSON."""
    return hashlib.sha256(canonical(request).encode("utf-8", "surrogatepass")).hexdigest()


def _json_ready(value: Any, what: str, *, as_text: bool = False) -> Any:
    """``value`` as JSON gives it back (a tuple becomes a list): what a replay answers.

    :param as_text: a value JSON does not take becomes its ``str()`` (a request: what
        keys it, never what answers).
    :raises TypeError: it is not JSON-ready, naming ``what``.
    """
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str if as_text else None))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-ready to be recorded: {exc}") from exc


class Replaying:
    """What answers a replayed run's outside calls from ``recording``: a call at the same
    place (superstep, executor, message index, kind and count) with the same request
    gets its recorded answer; a call whose request the record holds elsewhere gets that
    answer; any other is a :class:`~plait_replay.ReplayMissError` with the diff of its
    request against the nearest recorded one. Executors in ``live`` make their calls for
    real (and the replay records them)."""

    def __init__(self, recording: Recording, live: frozenset[str] = frozenset()) -> None:
        self.recording = recording
        self.live = live
        #: the calls the record had no answer for, in the order they were made
        self.misses: list[ReplayMissError] = []
        #: network attempts the guard refused (:mod:`plait_replay._guard`)
        self.network: list[BaseException] = []

    def answer(self, site: _Site, kind: str, seq: int, key: str, request: Any) -> Any:
        recording = self.recording
        entry = recording.calls.get((site.superstep, site.executor_id, site.index, kind, seq))
        if entry is not None and entry["key"] == key:
            return entry["response"]
        moved = recording.by_key.get((kind, key))
        if moved:
            return moved[0]["response"]
        nearest = entry if entry is not None else self._nearest(kind, request)
        diff = _diff(None if nearest is None else nearest["request"], request)
        where = (
            f"superstep {nearest['superstep']}, executor {nearest['executor']!r}"
            if nearest is not None
            else "nowhere: the record holds no call of this kind"
        )
        miss = ReplayMissError(
            f"executor {site.executor_id!r} made a {kind} call in superstep {site.superstep} "
            f"that the record of run {recording.run_id} has no answer for; the nearest "
            f"recorded one ({where}) differs:\n{diff}",
            executor_id=site.executor_id,
            superstep=site.superstep,
            kind=kind,
            diff=diff,
        )
        self.misses.append(miss)
        raise miss

    def value(self, site: _Site, kind: str, seq: int) -> tuple[bool, Any]:
        entry = self.recording.calls.get((site.superstep, site.executor_id, site.index, kind, seq))
        return (False, None) if entry is None else (True, entry["response"])

    def _nearest(self, kind: str, request: Any) -> Mapping[str, Any] | None:
        text = canonical(request)
        best: tuple[float, Mapping[str, Any]] | None = None
        for entry in list(self.recording.calls.values())[:_NEAREST_AMONG]:
            if entry["kind"] != kind:
                continue
            ratio = difflib.SequenceMatcher(None, canonical(entry["request"]), text).ratio()
            if best is None or ratio > best[0]:
                best = (ratio, entry)
        return None if best is None else best[1]


def _diff(recorded: Any, now: Any) -> str:
    """A unified diff of two requests, as indented JSON."""

    def lines(value: Any) -> list[str]:
        if value is None:
            return []
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(
        difflib.unified_diff(lines(recorded), lines(now), "recorded", "now", lineterm="")
    )


class _Site:
    """The outside calls of one invocation (:class:`plait.spi.OutsideCalls`): each is
    counted by kind, made (or answered from the record) and kept.

    It is the innermost answerer (place ``answer``): a budget around it reserves a
    replayed call and counts what the recorded call used, a tracer spans it; what it keeps
    is the request as they passed it on (a degrade budget's model included)."""

    __slots__ = ("counts", "executor_id", "index", "live_call", "recorder", "superstep")

    #: it may answer without making the call: inside what decides and what watches
    place = "answer"

    def __init__(self, recorder: Recorder, invocation: Invocation) -> None:
        self.recorder = recorder
        self.executor_id = invocation.executor_id
        self.superstep = invocation.superstep
        self.index = invocation.index
        self.counts: dict[str, int] = {}
        #: a call is going out for real (what the network guard lets through)
        self.live_call = False

    def _next(self, kind: str) -> int:
        seq = self.counts.get(kind, 0)
        self.counts[kind] = seq + 1
        return seq

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        seq = self._next(kind)
        asked = request
        request = _json_ready(dict(request), f"the request of a {kind} call", as_text=True)
        key = request_key(request)
        replaying = self.recorder.replaying
        if replaying is not None and self.executor_id not in replaying.live:
            answer = replaying.answer(self, kind, seq, key, request)
        else:
            self.live_call = True
            try:
                answer = await invoke(asked)
            finally:
                self.live_call = False
            answer = _json_ready(
                answer, f"the answer of executor {self.executor_id!r}'s {kind} call"
            )
        self.recorder.keep(self, kind, seq, key, request, answer)
        return answer

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        seq = self._next(kind)
        replaying = self.recorder.replaying
        found, answer = False, None
        if replaying is not None and self.executor_id not in replaying.live:
            found, answer = replaying.value(self, kind, seq)
        if not found:
            answer = _json_ready(produce(), f"a {kind} value")
        self.recorder.keep(self, kind, seq, "", None, answer)
        return answer


class Recorder(RunObserver):
    """Keeps the outside calls of one run, and which executors ran in each superstep,
    until the next checkpoint takes them (:meth:`checkpoint_section`).

    :param replaying: answers the calls from a record (a replay), or ``None`` (they go
        out for real).
    :param resumed: the run is a resume: the messages its first superstep delivers from
        no sender (the answers to its requests, what the checkpoint held) are kept as
        ``answers``, so a replay answers the same requests the same way.
    """

    def __init__(
        self, run_id: str, replaying: Replaying | None = None, *, resumed: bool = False
    ) -> None:
        self.run_id = run_id
        self.replaying = replaying
        self.calls: list[dict[str, Any]] = []
        self.ran: dict[str, list[str]] = {}
        #: the run's input, JSON-ready: the message of the first invocation of a new run
        self.input: list[Any] | None = None
        self.first = True
        self.resumed = resumed
        #: the superstep a resumed run started in (its answers are delivered there)
        self.resumed_at: int | None = None
        #: the messages from no sender of a resumed run's first superstep, JSON-ready
        self.answers: list[dict[str, Any]] = []

    def keep(self, site: _Site, kind: str, seq: int, key: str, request: Any, answer: Any) -> None:
        self.calls.append(
            {
                "superstep": site.superstep,
                "executor": site.executor_id,
                "index": site.index,
                "kind": kind,
                "seq": seq,
                "key": key,
                "request": request,
                "response": answer,
            }
        )

    # -- the observer -----------------------------------------------------------------

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.ran[str(superstep)] = list(executor_ids)

    def invocation_started(self, invocation: Invocation) -> Any:
        if self.first:
            self.first = False
            if invocation.superstep == 1:  # a new run: its first message is its input
                try:
                    self.input = [_json_ready(invocation.message, "the run's input")]
                except TypeError:
                    self.input = None
            elif self.resumed:
                self.resumed_at = invocation.superstep
        if invocation.superstep == self.resumed_at and not invocation.senders:
            self._keep_answer(invocation)
        site = _Site(self, invocation)
        # a nested run's recorder keeps its calls in place of the outer run's
        outer = next((one for one in outside_calls.get() if isinstance(one, _Site)), None)
        if outer is not None:
            remove_answerer(outer)
        add_answerer(site)
        return site, outer

    def _keep_answer(self, invocation: Invocation) -> None:
        """Keep a message a resume delivered from no sender: an answer (its value, and the
        request id an executor that takes ``RequestResponse`` got) or a message the
        checkpoint held; one JSON cannot hold is left out (a replay then stops there)."""
        from plait import RequestResponse

        message = invocation.message
        entry: dict[str, Any] = {
            "superstep": invocation.superstep,
            "executor": invocation.executor_id,
            "index": invocation.index,
        }
        if isinstance(message, RequestResponse):
            entry["request_id"] = message.request_id
            message = message.value
        try:
            entry["value"] = _json_ready(message, "an answer")
        except TypeError:
            return
        self.answers.append(entry)

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        site: _Site = handle[0]
        # the failed attempt's calls go with it: the next attempt makes them again
        self.calls = [
            c
            for c in self.calls
            if (c["superstep"], c["executor"], c["index"])
            != (site.superstep, site.executor_id, site.index)
        ]
        site.counts.clear()

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        site, outer = handle
        remove_answerer(site)
        if outer is not None:
            add_answerer(outer)

    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        # a resume of this run records too (plait_observe_run reads it back)
        return {SECTION: {"record": True}}

    def checkpoint_section(self) -> Mapping[str, Any] | None:
        if not self.calls and not self.ran and self.input is None and not self.answers:
            return None
        section: dict[str, Any] = {"calls": self.calls, "ran": self.ran}
        if self.input is not None:
            section["input"] = self.input
            self.input = None
        if self.answers:
            section["answers"] = self.answers
        self.calls, self.ran, self.answers = [], {}, []
        return {SECTION: section}
