"""A plugin that records what Plait's run observers are told.

Register a :class:`HookRecorder` (the ``plait_hook_recorder`` fixture does it for you) and
run a workflow: it implements ``plait_observe_run``, the one observation hook, and
``recorder.calls`` then lists, in order, each run it was asked to observe
(``observe_run``) and every call the run's :class:`~plait.spi.RunObserver` got, with its
arguments and the run's id::

    async def test_observers(plait_hook_recorder):
        await workflow.run("hi")
        assert plait_hook_recorder.names(skip_invocations=True) == [
            "observe_run",
            "superstep_started",
            "superstep_finished",
            "run_finished",
        ]
        (finished,) = plait_hook_recorder.getcalls("run_finished")
        assert finished.status == "idle"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import hookimpl
from plait.spi import Invocation, RunObserver

__all__ = ["HookCall", "HookRecorder"]


class HookCall:
    """One recorded call: its ``name`` and keyword arguments.

    Arguments read as attributes too: ``call.run_id`` is ``call.kwargs["run_id"]``.
    """

    __slots__ = ("kwargs", "name")

    def __init__(self, name: str, kwargs: Mapping[str, Any]) -> None:
        self.name = name
        self.kwargs = dict(kwargs)

    def __getattr__(self, key: str) -> Any:
        try:
            return self.kwargs[key]
        except KeyError:
            raise AttributeError(f"call {self.name} has no argument {key!r}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HookCall):
            return NotImplemented
        return (self.name, self.kwargs) == (other.name, other.kwargs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"<HookCall {self.name}({args})>"


class HookRecorder:
    """A plugin object implementing ``plait_observe_run``: it observes every run, and
    records each call its observer gets in ``calls``."""

    def __init__(self) -> None:
        self.calls: list[HookCall] = []

    # -- the hook ----------------------------------------------------------------------

    @hookimpl
    def plait_observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Mapping[str, Any] | None
    ) -> RunObserver:
        """Record that a run starts, and observe it."""
        self.calls.append(
            HookCall(
                "observe_run",
                {
                    "run_id": run_id,
                    "workflow": workflow,
                    "superstep": superstep,
                    "resumed": resumed,
                },
            )
        )
        return _Recording(self, run_id)

    # -- reading -----------------------------------------------------------------------

    def names(self, *, skip_invocations: bool = False) -> list[str]:
        """The calls' names, in order (without ``invocation_*`` ones if
        ``skip_invocations``)."""
        return [
            call.name
            for call in self.calls
            if not (skip_invocations and call.name.startswith("invocation_"))
        ]

    def getcalls(self, name: str) -> list[HookCall]:
        """The calls named ``name``, in order."""
        return [call for call in self.calls if call.name == name]

    def run_ids(self) -> list[str]:
        """The ids of the runs seen starting, in order."""
        return [call.kwargs["run_id"] for call in self.getcalls("observe_run")]

    def clear(self) -> None:
        """Forget every recorded call."""
        self.calls.clear()

    def __repr__(self) -> str:
        return f"<HookRecorder {len(self.calls)} call(s)>"


class _Recording(RunObserver):
    """The observer of one run: each call it gets, recorded with the run's id. A handle is
    the executor id, so ``invocation_finished`` says which invocation ended."""

    def __init__(self, recorder: HookRecorder, run_id: str) -> None:
        self.recorder = recorder
        self.run_id = run_id

    def _record(self, name: str, **kwargs: Any) -> None:
        self.recorder.calls.append(HookCall(name, {"run_id": self.run_id, **kwargs}))

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self._record("superstep_started", superstep=superstep, executor_ids=list(executor_ids))

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        self._record("superstep_finished", superstep=superstep, error=error)

    def invocation_started(self, invocation: Invocation) -> Any:
        self._record(
            "invocation_started",
            executor_id=invocation.executor_id,
            superstep=invocation.superstep,
            index=invocation.index,
            message=invocation.message,
        )
        return invocation.executor_id

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        self._record(
            "invocation_retrying", executor_id=handle, attempt=attempt, delay=delay, error=error
        )

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        self._record(
            "invocation_finished", executor_id=handle, attempt=attempt, status=status, error=error
        )

    def run_finished(self, status: str, error: BaseException | None) -> None:
        self._record("run_finished", status=status, error=error)

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        self._record("request", executor_id=executor_id, request_id=request_id, superstep=superstep)

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        self._record(
            "checkpoint_written", checkpoint_id=checkpoint_id, superstep=superstep, status=status
        )
