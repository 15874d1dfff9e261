"""A live, read-only view of a run, for displays that look at it at their own pace.

``workflow.run(msg, watch=callback)`` calls ``callback(RunWatch)`` once, as the run starts;
a progress display keeps the view and reads it a few times a second (from a task or a
thread of its own). Nothing is built or called per superstep for it, so watching a run
costs the run nothing — unlike ``events="all"``, which builds four events per superstep.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._state import RunState

__all__ = ["RunWatch"]


class LiveRun(Protocol):
    """What a :class:`RunWatch` reads of a running run (the runner is one)."""

    @property
    def state(self) -> RunState: ...

    @property
    def current(self) -> Mapping[str, list[Any]]:
        """Executor id -> the messages the running superstep delivers to it."""
        ...


class RunWatch:
    """What a run is doing now. Every property reads the run's live state.

    Read from another thread, a value may be a superstep behind; it is never torn.
    """

    __slots__ = ("_runner", "_workflow")

    def __init__(self, runner: LiveRun, workflow: str | None) -> None:
        self._runner = runner
        self._workflow = workflow

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._runner.state.run_id

    @property
    def workflow(self) -> str | None:
        """The workflow's name."""
        return self._workflow

    def _pipelined(self) -> tuple[int, dict[str, int]] | None:
        """What the pipelined schedule is doing, while the run is in it."""
        pipeline = getattr(self._runner, "pipeline", None)
        if pipeline is None or not pipeline.active:
            return None
        found: tuple[int, dict[str, int]] = pipeline.watched()
        return found

    @property
    def superstep(self) -> int:
        """The number of the superstep running (or that ran last); in the pipelined
        schedule, the lowest superstep with work (branches may run ahead of it).

        .. versionchanged:: 0.1 the pipelined schedule's.
        """
        pipelined = self._pipelined()
        if pipelined is not None:
            return pipelined[0]
        return self._runner.state.superstep

    @property
    def running(self) -> tuple[str, ...]:
        """The executors the running superstep delivers to (the last one's, between); in
        the pipelined schedule, the executors running now, whatever their superstep."""
        pipelined = self._pipelined()
        if pipelined is not None:
            return tuple(pipelined[1])
        return tuple(self._runner.current)

    @property
    def deliveries(self) -> dict[str, int]:
        """How many messages each executor of the running superstep handles in it (a
        fan-out's executor handles many); in the pipelined schedule, each running
        executor's messages not committed yet."""
        pipelined = self._pipelined()
        if pipelined is not None:
            return pipelined[1]
        return {eid: len(messages) for eid, messages in dict(self._runner.current).items()}

    @property
    def outputs(self) -> int:
        """How many outputs the run has yielded."""
        return len(self._runner.state.outputs)

    @property
    def pending_requests(self) -> int:
        """How many requests for outside input are pending."""
        return len(self._runner.state.pending_requests)

    @property
    def retrying(self) -> dict[str, int]:
        """Executors whose invocation is being retried now: ``{executor id: failed
        attempts so far}``."""
        attempts = self._runner.state.attempts.copy()
        retrying: dict[str, int] = {}
        for key, count in attempts.items():
            eid = key.split(":", 1)[1].rsplit(":", 1)[0]
            retrying[eid] = max(retrying.get(eid, 0), count)
        return retrying
