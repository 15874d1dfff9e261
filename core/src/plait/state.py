"""What one run changes: :class:`RunState` (messages in flight, outputs, per-executor and
shared state, router state, visits, pending requests). Workflows and executors stay
untouched by runs.

.. versionadded:: 0.1
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .context import WorkflowContext
from .events import CustomEvent, OutputEvent, RequestInfoEvent, WorkflowEvent
from .types import type_name

if TYPE_CHECKING:
    from .observe import RunObserver

__all__ = ["PendingRequest", "RunState", "new_run_id"]


def new_run_id() -> str:
    """A fresh run id (here, with the run's state: building a workflow never imports uuid)."""
    return uuid.uuid4().hex


@attrs.define
class PendingRequest:
    """A request for outside input that the run is waiting on."""

    request_id: str
    executor_id: str
    request: Any
    response_type: Any
    superstep: int


class RunState:
    """Everything one run changes. Workflows and executors stay untouched."""

    __slots__ = (
        "attempts",
        "contexts",
        "emit",
        "executor_state",
        "observed",
        "observer",
        "outbox",
        "outputs",
        "pending_requests",
        "router_state",
        "run_id",
        "shared",
        "superstep",
        "visits",
    )

    def __init__(self, run_id: str, emit: Callable[[WorkflowEvent], None] | None) -> None:
        self.run_id = run_id
        self.superstep = 0
        self.outbox: list[tuple[str, Any, str | None]] = []
        self.outputs: list[Any] = []
        self.shared: dict[str, Any] = {}
        self.executor_state: dict[str, dict[str, Any]] = {}
        self.contexts: dict[str, WorkflowContext[Any, Any]] = {}
        self.router_state: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        self.pending_requests: dict[str, PendingRequest] = {}
        #: failed attempts so far of invocations being retried ("superstep:executor:index")
        self.attempts: dict[str, int] = {}
        self.emit = emit
        #: what a plugin observes this run with (:mod:`plait.observe`), if any
        self.observer: RunObserver | None = None
        #: what the observers of the run this one resumes left with its checkpoint
        self.observed: Mapping[str, Any] | None = None

    def context(self, executor_id: str) -> WorkflowContext[Any, Any]:
        """The context of ``executor_id`` in this run (created on first use)."""
        ctx = self.contexts.get(executor_id)
        if ctx is None:
            state = self.executor_state.setdefault(executor_id, {})
            ctx = self.contexts[executor_id] = WorkflowContext(self, executor_id, state)
        return ctx

    def emit_output(self, executor_id: str, data: Any) -> None:
        """Record a workflow output (and emit its event when someone listens)."""
        self.outputs.append(data)
        if self.emit is not None:
            self.emit(OutputEvent(executor_id, data, self.superstep))

    def emit_custom(self, executor_id: str, data: Any) -> None:
        """Emit a custom event, if someone listens."""
        if self.emit is not None:
            self.emit(CustomEvent(executor_id, data, self.superstep))

    def request_info(
        self,
        executor_id: str,
        request: Any,
        response_type: Any,
        *,
        request_id: str | None = None,
    ) -> str:
        """Record a pending request for outside input and announce it."""
        request_id = request_id or uuid.uuid4().hex
        self.pending_requests[request_id] = PendingRequest(
            request_id, executor_id, request, response_type, self.superstep
        )
        if self.emit is not None:
            self.emit(
                RequestInfoEvent(
                    request_id, executor_id, request, type_name(response_type), self.superstep
                )
            )
        return request_id
