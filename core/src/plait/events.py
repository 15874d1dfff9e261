"""Events a run emits, and the statuses it ends in.

``Workflow.stream()`` yields every event as it happens. ``Workflow.run()`` collects the
lifecycle events (run started, outputs, requests, run finished) unless asked for all;
executor-level events are only built when someone consumes them.

.. versionadded:: 0.1
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = [
    "RunStatus",
    "WorkflowEvent",
    "RunStarted",
    "SuperstepStarted",
    "SuperstepFinished",
    "ExecutorInvoked",
    "ExecutorCompleted",
    "ExecutorFailed",
    "ExecutorRetrying",
    "OutputEvent",
    "RequestInfoEvent",
    "CustomEvent",
    "RunFinished",
]


class RunStatus(str, enum.Enum):
    """Where a run stands."""

    RUNNING = "running"
    IDLE = "idle"
    IDLE_WITH_PENDING_REQUESTS = "idle_with_pending_requests"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class WorkflowEvent:
    """Base of every event."""


@attrs.frozen
class RunStarted(WorkflowEvent):
    """A run began."""

    run_id: str
    workflow: str | None


@attrs.frozen
class SuperstepStarted(WorkflowEvent):
    """A superstep began; ``executor_ids`` are about to run."""

    superstep: int
    executor_ids: tuple[str, ...]


@attrs.frozen
class SuperstepFinished(WorkflowEvent):
    """A superstep ended; every executor in it has finished."""

    superstep: int
    executor_ids: tuple[str, ...]


@attrs.frozen
class ExecutorInvoked(WorkflowEvent):
    """An executor's handler is about to run on one message."""

    executor_id: str
    superstep: int


@attrs.frozen
class ExecutorCompleted(WorkflowEvent):
    """An executor's handler returned."""

    executor_id: str
    superstep: int


@attrs.frozen
class ExecutorFailed(WorkflowEvent):
    """An executor's handler raised."""

    executor_id: str
    superstep: int
    error: BaseException


@attrs.frozen
class ExecutorRetrying(WorkflowEvent):
    """An attempt of an executor failed and its retry policy tries again after ``delay``
    seconds; ``attempt`` is the attempt that failed (1-based)."""

    executor_id: str
    superstep: int
    attempt: int
    delay: float
    error: BaseException


@attrs.frozen
class OutputEvent(WorkflowEvent):
    """An executor yielded a workflow output."""

    executor_id: str
    data: Any
    superstep: int


@attrs.frozen
class RequestInfoEvent(WorkflowEvent):
    """An executor asked for outside input (human in the loop)."""

    request_id: str
    executor_id: str
    request: Any
    response_type: str
    superstep: int


@attrs.frozen
class CustomEvent(WorkflowEvent):
    """An event an executor added with ``ctx.add_event``."""

    executor_id: str
    data: Any
    superstep: int


@attrs.frozen
class RunFinished(WorkflowEvent):
    """The run ended with ``status``; ``error`` is set when it failed."""

    run_id: str
    status: RunStatus
    supersteps: int
    error: BaseException | None = None
