"""Cassettes: the model calls (and any outside call) of a plain test recorded to a JSON
file once and answered from it afterwards, outside any stored run — the VCR model
(``plait_testing.cassette``)."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from plait.spi import add_answerer, remove_answerer

from ._errors import RecordedCallError, ReplayMissError
from ._recorder import _diff, _json_ready, canonical, request_key
from ._stand_in import StandIns

__all__ = ["MODES", "Cassette", "cassette"]

#: ``once``: record when the file is missing, else answer from it (a call it lacks is an
#: error); ``none``: answer only; ``new``: answer what it holds, record what it lacks;
#: ``all``: record every call again; ``live``: no cassette at all, every call made for real
#: and nothing recorded (what ``pytest --plait-live`` sets: a test on a real model run live)
MODES = ("once", "none", "new", "all", "live")
#: where cassettes live unless ``directory`` says otherwise
DIRECTORY_VARIABLE = "PLAIT_CASSETTES"
#: ``1``: cassettes whose mode is not given record again (``pytest --plait-record``)
RECORD_VARIABLE = "PLAIT_RECORD"
#: ``1``: cassettes whose mode is not given are ``live`` (``pytest --plait-live``)
LIVE_VARIABLE = "PLAIT_LIVE"
_FORMAT = "plait-cassette"


class Cassette:
    """One cassette, in use between ``with`` (or ``async with``) and its end: every outside
    call made in the block (through :func:`plait.spi.outside_call`: plait-llm's model
    calls, ``http`` and ``shell`` steps) is answered from the file or made and kept; the
    file is written when the block ends, if anything was recorded.

    While it answers from the file, the ``llm`` models whose calls it holds and that are
    not installed have stand-ins (:mod:`plait_replay._stand_in`): a test replays without
    the model's plugin, its weights or its key.

    :param path: the cassette file (JSON).
    :param mode: one of :data:`MODES`.
    :param only: which calls the cassette takes (``only(kind, request)`` true); the others
        are made as if there were no cassette, and not recorded (default: every call).
    """

    def __init__(
        self,
        path: Path,
        mode: str = "once",
        only: Callable[[str, Mapping[str, Any]], bool] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"cassette mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.path = path
        self.mode = mode
        self.only = only
        self.interactions: list[dict[str, Any]] = []
        self.recording = mode == "all" or (mode == "once" and not path.exists())
        if path.exists() and mode not in ("all", "live"):
            self.interactions = _read(path)
        self.used: dict[tuple[str, str], int] = {}
        self.recorded = 0
        #: the calls answered from the file
        self.answered = 0
        #: the model ids that have stand-ins in this block
        self.stand_ins: list[str] = []
        self._answering = False
        self._stand_ins: StandIns | None = None

    # -- plait.spi.OutsideCalls -------------------------------------------------------

    #: it makes the call in the model's stead: inside every other answerer (a budget's, a
    #: tracer's, a recorded run's recorder, which records what it answers)
    place = "make"

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        if self.only is not None and not self.only(kind, request):
            return await invoke(request)
        asked = request
        request = _json_ready(dict(request), f"the request of a {kind} call", as_text=True)
        key = request_key(request)
        if not self.recording:
            found = self._answer(kind, key)
            if found is not None:
                self.answered += 1
                if "error" in found:
                    failed = found["error"]
                    raise RecordedCallError(str(failed["type"]), str(failed["message"]))
                return found["response"]
            if self.mode != "new":
                raise self._miss(kind, request)
        try:
            made = await invoke(asked)
        except Exception as exc:  # the call failed: its failure is its recorded answer
            if getattr(exc, "refuses_call", False):
                raise  # an answerer's refusal (a budget) is no answer of the call's
            failed = {"type": type(exc).__name__, "message": str(exc)}
            self._keep({"kind": kind, "key": key, "request": request, "error": failed})
            raise
        answer = _json_ready(made, f"the answer of a {kind} call")
        self._keep({"kind": kind, "key": key, "request": request, "response": answer})
        return answer

    def _keep(self, interaction: dict[str, Any]) -> None:
        self.interactions.append(interaction)
        self.recorded += 1

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        return produce()  # the time and random numbers of a plain test are its own

    def _answer(self, kind: str, key: str) -> dict[str, Any] | None:
        """The n-th answer to the n-th asking of one request (the last, once they run
        out)."""
        same = [i for i in self.interactions if i["kind"] == kind and i["key"] == key]
        if not same:
            return None
        n = self.used.get((kind, key), 0)
        self.used[(kind, key)] = n + 1
        return same[min(n, len(same) - 1)]

    def _miss(self, kind: str, request: Any) -> ReplayMissError:
        import difflib

        text = canonical(request)
        candidates = [i for i in self.interactions if i["kind"] == kind]
        nearest = max(
            candidates,
            key=lambda i: difflib.SequenceMatcher(None, canonical(i["request"]), text).ratio(),
            default=None,
        )
        diff = _diff(None if nearest is None else nearest["request"], request)
        return ReplayMissError(
            f"cassette {str(self.path)!r} has no answer to this {kind} call (mode "
            f"{self.mode}; record it again with mode 'all', or pytest --plait-record); "
            f"against the nearest recorded request:\n{diff}",
            executor_id="",
            superstep=0,
            kind=kind,
            diff=diff,
        )

    # -- the block --------------------------------------------------------------------

    def __enter__(self) -> Cassette:
        if self.mode == "live":
            return self
        if not self.recording:
            self._stand_ins = StandIns(self.interactions, str(self.path))
            self.stand_ins = self._stand_ins.register()
        add_answerer(self)
        self._answering = True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._answering:
            remove_answerer(self)
            self._answering = False
        if self._stand_ins is not None:
            self._stand_ins.unregister()
            self._stand_ins = None
        if self.recorded and error is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            body = {"format": _FORMAT, "version": 1, "interactions": self.interactions}
            self.path.write_text(
                json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                encoding="utf-8",
            )

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(kind, error, traceback)


def _read(path: Path) -> list[dict[str, Any]]:
    where = f"cassette {str(path)!r}"
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{where} cannot be read: {exc}") from exc
    if not isinstance(body, dict) or body.get("format") != _FORMAT:
        raise ValueError(f"{where} is not a Plait cassette (its format)")
    interactions = body.get("interactions")
    if not isinstance(interactions, list) or not all(
        isinstance(i, dict)
        and {"kind", "key", "request"} <= set(i)
        and (
            "response" in i
            or (isinstance(i.get("error"), dict) and {"type", "message"} <= set(i["error"]))
        )
        for i in interactions
    ):
        raise ValueError(
            f"{where}: interactions must be objects with kind, key, request, and a response "
            "or an error (type, message)"
        )
    return interactions


def cassette(
    name: str,
    *,
    directory: str | Path | None = None,
    mode: str | None = None,
    only: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> Cassette:
    """The cassette ``name`` (a file ``<directory>/<name>.json``): ``with cassette("triage"):
    ...`` records the block's outside calls once, and answers them from the file after.

    :param directory: where cassettes live (default: ``$PLAIT_CASSETTES``, else
        ``tests/cassettes``).
    :param mode: one of :data:`MODES` (default ``once``; ``live`` when ``PLAIT_LIVE=1``,
        what ``pytest --plait-live`` sets; else ``all`` when ``PLAIT_RECORD=1``, what
        ``pytest --plait-record`` sets).
    :param only: which calls the cassette takes (``only(kind, request)``: true for those);
        the others go out as if there were no cassette.
    """
    folder = Path(directory or os.environ.get(DIRECTORY_VARIABLE) or "tests/cassettes")
    if mode is None:
        if os.environ.get(LIVE_VARIABLE) == "1":
            mode = "live"
        elif os.environ.get(RECORD_VARIABLE) == "1":
            mode = "all"
        else:
            mode = "once"
    return Cassette(folder / f"{name}.json", mode, only)
