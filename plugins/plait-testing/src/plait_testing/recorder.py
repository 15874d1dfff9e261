"""A plugin that records every call of Plait's observer hooks.

Register a :class:`HookRecorder` (the ``plait_hook_recorder`` fixture does it for you) and
run a workflow; ``recorder.calls`` then lists each call of ``plait_run_started``,
``plait_superstep_finished`` and ``plait_run_finished`` with its arguments, in order::

    async def test_observers(plait_hook_recorder):
        await workflow.run("hi")
        assert plait_hook_recorder.names() == [
            "plait_run_started",
            "plait_superstep_finished",
            "plait_run_finished",
        ]
        (finished,) = plait_hook_recorder.getcalls("plait_run_finished")
        assert finished.status == "idle"

Build the workflow after the recorder is registered: a workflow notes at build time
whether anybody observes its supersteps, so that nobody pays for observers nobody
registered.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import hookimpl

__all__ = ["HookCall", "HookRecorder"]


class HookCall:
    """One recorded hook call: its hook ``name`` and keyword arguments.

    Arguments read as attributes too: ``call.run_id`` is ``call.kwargs["run_id"]``.

    .. versionadded:: 0.1
    """

    __slots__ = ("kwargs", "name")

    def __init__(self, name: str, kwargs: Mapping[str, Any]) -> None:
        self.name = name
        self.kwargs = dict(kwargs)

    def __getattr__(self, key: str) -> Any:
        try:
            return self.kwargs[key]
        except KeyError:
            raise AttributeError(f"hook call {self.name} has no argument {key!r}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HookCall):
            return NotImplemented
        return (self.name, self.kwargs) == (other.name, other.kwargs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"<HookCall {self.name}({args})>"


class HookRecorder:
    """A plugin object implementing every observer hook, recording each call in ``calls``.

    .. versionadded:: 0.1
    """

    def __init__(self) -> None:
        self.calls: list[HookCall] = []

    # -- the hooks ---------------------------------------------------------------------

    @hookimpl
    def plait_run_started(self, run_id: str, workflow: Any) -> None:
        """Record a run start."""
        self.calls.append(HookCall("plait_run_started", {"run_id": run_id, "workflow": workflow}))

    @hookimpl
    def plait_superstep_finished(
        self, run_id: str, superstep: int, executor_ids: list[str]
    ) -> None:
        """Record the end of a superstep (``executor_ids`` is copied)."""
        self.calls.append(
            HookCall(
                "plait_superstep_finished",
                {"run_id": run_id, "superstep": superstep, "executor_ids": list(executor_ids)},
            )
        )

    @hookimpl
    def plait_run_finished(self, run_id: str, status: str, error: BaseException | None) -> None:
        """Record the end of a run."""
        self.calls.append(
            HookCall("plait_run_finished", {"run_id": run_id, "status": status, "error": error})
        )

    # -- reading -----------------------------------------------------------------------

    def names(self) -> list[str]:
        """The hook names called, in order."""
        return [call.name for call in self.calls]

    def getcalls(self, name: str) -> list[HookCall]:
        """The calls of hook ``name``, in order."""
        return [call for call in self.calls if call.name == name]

    def run_ids(self) -> list[str]:
        """The ids of the runs seen starting, in order."""
        return [call.kwargs["run_id"] for call in self.getcalls("plait_run_started")]

    def clear(self) -> None:
        """Forget every recorded call."""
        self.calls.clear()

    def __repr__(self) -> str:
        return f"<HookRecorder {len(self.calls)} call(s)>"
