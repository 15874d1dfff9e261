"""Record and replay in tests (the parts of ``plait-replay`` a test suite uses):
:func:`cassette` for plain tests, and :class:`ReplayCheck`, the value of the
``plait_replay`` fixture, that turns a run bundle into a regression test.

``plait-replay`` does the work and is imported on first use: without it these say what to
install.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ModelCalls", "ReplayCheck", "cassette"]


def _replay_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(
            "record and replay need the plait-replay distribution: pip install plait-replay"
        ) from exc


def cassette(
    name: str,
    *,
    directory: str | Path | None = None,
    mode: str | None = None,
    only: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> Any:
    """``with plait_testing.cassette("triage"): ...``: the block's model calls (and every
    outside call: ``http``, ``shell``) recorded to ``tests/cassettes/triage.json`` the first
    time, answered from it afterwards, with no model and no network (the VCR model). A call
    the cassette lacks is an error with its request's diff against the nearest recorded
    one; ``pytest --plait-record`` (or ``mode="all"``) records them all again, and
    ``pytest --plait-live`` (or ``mode="live"``) makes every call for real, recording
    nothing. A model the cassette answers for that is not installed has a stand-in while
    it answers, so the test needs neither the model's plugin nor its weights.

    :param directory: where cassettes live (default ``$PLAIT_CASSETTES``, else
        ``tests/cassettes``).
    :param mode: ``once`` (the default), ``none``, ``new``, ``all`` or ``live``
        (``plait_replay._cassette.MODES``).
    :param only: which calls the cassette takes (``only(kind, request)`` true); the others
        are made as if there were no cassette (default: all of them).
    """
    module = _replay_module("plait_replay._cassette")
    return module.cassette(name, directory=directory, mode=mode, only=only)


@dataclass
class ModelCalls:
    """What a model was asked and what it answered, call by call: an outside-call answerer
    (:class:`plait.spi.OutsideCalls`) that watches every call and changes none, in the
    ``watch`` place, so it sees the answers a :func:`cassette` replays as well as a live
    model's. Add it for a test with :func:`plait.spi.add_answerer` (and take it away with
    :func:`plait.spi.remove_answerer`), then assert on ``prompts`` and ``answers``.
    """

    #: each call's ``prompt``, in the order the calls were made
    prompts: list[str] = field(default_factory=list)
    #: each call's answer ``text``, in the same order
    answers: list[str] = field(default_factory=list)
    place = "watch"

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        self.prompts.append(request["prompt"])
        answer = await invoke(request)
        self.answers.append(answer["text"])
        return answer

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        return produce()


def _workflow(workflow: Any) -> Any:
    """A workflow, or the one ``"module:attr"`` names (code the test's author names)."""
    if not isinstance(workflow, str):
        return workflow
    module, _, attr = workflow.partition(":")
    found: Any = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found() if callable(found) and not hasattr(found, "run") else found


class ReplayCheck:
    """The ``plait_replay`` fixture: :meth:`check` replays a run bundle with today's code and
    fails the test with the first-divergence report; under ``pytest --plait-record`` a
    bundle that diverges is recorded again (the workflow run for real on the bundle's
    input) and the test passes, the new bundle left for review.

    :param rerecord: whether ``--plait-record`` was given.
    """

    def __init__(self, rerecord: bool = False) -> None:
        self.rerecord = rerecord
        #: the last report (:class:`plait_replay.ReplayReport`)
        self.report: Any = None
        #: the bundles recorded again in this test
        self.rerecorded: list[Path] = []

    def check(self, bundle: str | Path, workflow: Any, *, key: bytes | None = None) -> Any:
        """Replay ``bundle`` with ``workflow`` (or ``"module:attr"``): the report, or the
        test fails with it. From an async test, await :meth:`acheck` instead."""
        import anyio

        return anyio.run(lambda: self.acheck(bundle, workflow, key=key))

    async def acheck(self, bundle: str | Path, workflow: Any, *, key: bytes | None = None) -> Any:
        """:meth:`check` in an async test."""
        import uuid

        import pytest

        replay = _replay_module("plait_replay")
        flow = _workflow(workflow)
        store = f"memory://plait-testing-{uuid.uuid4().hex}"
        info = await replay.import_bundle(bundle, store, key=key)
        self.report = await replay.replay(flow, info.run_id, store)
        if self.report.equal:
            return self.report
        if not self.rerecord:
            pytest.fail(self.report.text(), pytrace=False)
        recording = await replay.read_recording(store, info.run_id)
        if recording.input is None:
            pytest.fail(f"{self.report.text()}\n(the bundle has no input to record again)")
        fresh = f"memory://plait-testing-{uuid.uuid4().hex}"
        result = await flow.run(recording.input[0], checkpoint=fresh, record=True)
        await replay.export_bundle(fresh, result.run_id, bundle, key=key)
        self.rerecorded.append(Path(bundle))
        return self.report
