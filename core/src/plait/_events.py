"""Events a run emits, the statuses it ends in, what it produced
(:class:`WorkflowRunResult`), and what a handler is told of the invocation it runs, as
data (:class:`ContextSnapshot`): the records only a run makes, imported when one starts.

``Workflow.stream()`` yields every event as it happens. ``Workflow.run()`` collects the
lifecycle events (run started, outputs, requests, run finished) unless asked for all;
executor-level events are only built when someone consumes them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from ._errors import ExecutorFailedError
from ._observer import RunObserver
from ._records import record_repr

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
    "NestedEvent",
    "RunFinished",
    "EventObserver",
    "WorkflowRunResult",
    "ContextSnapshot",
]


class RunStatus(str, enum.Enum):
    """Where a run stands."""

    RUNNING = "running"
    IDLE = "idle"
    IDLE_WITH_PENDING_REQUESTS = "idle_with_pending_requests"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


@attrs.frozen(repr=False)
class WorkflowEvent:
    """Base of every event."""

    __repr__ = record_repr


@attrs.frozen(repr=False)
class RunStarted(WorkflowEvent):
    """A run began."""

    run_id: str
    workflow: str | None


@attrs.frozen(repr=False)
class SuperstepStarted(WorkflowEvent):
    """A superstep began; ``executor_ids`` are about to run."""

    superstep: int
    executor_ids: tuple[str, ...]


@attrs.frozen(repr=False)
class SuperstepFinished(WorkflowEvent):
    """A superstep ended; every executor in it has finished."""

    superstep: int
    executor_ids: tuple[str, ...]


@attrs.frozen(repr=False)
class ExecutorInvoked(WorkflowEvent):
    """An executor's handler is about to run on one message."""

    executor_id: str
    superstep: int


@attrs.frozen(repr=False)
class ExecutorCompleted(WorkflowEvent):
    """An executor's handler returned."""

    executor_id: str
    superstep: int


@attrs.frozen(repr=False)
class ExecutorFailed(WorkflowEvent):
    """An executor's handler raised."""

    executor_id: str
    superstep: int
    error: BaseException


@attrs.frozen(repr=False)
class ExecutorRetrying(WorkflowEvent):
    """An attempt of an executor failed and its retry policy tries again after ``delay``
    seconds; ``attempt`` is the attempt that failed (1-based)."""

    executor_id: str
    superstep: int
    attempt: int
    delay: float
    error: BaseException


@attrs.frozen(repr=False)
class OutputEvent(WorkflowEvent):
    """An executor yielded a workflow output."""

    executor_id: str
    data: Any
    superstep: int


@attrs.frozen(repr=False)
class RequestInfoEvent(WorkflowEvent):
    """An executor asked for outside input (human in the loop)."""

    request_id: str
    executor_id: str
    request: Any
    response_type: str
    superstep: int


@attrs.frozen(repr=False)
class CustomEvent(WorkflowEvent):
    """An event an executor added with ``ctx.add_event``."""

    executor_id: str
    data: Any
    superstep: int


@attrs.frozen(repr=False)
class NestedEvent(WorkflowEvent):
    """An event of a nested workflow's run (``workflow.as_executor()``), forwarded to the
    outer run's stream in the order the inner run made it.

    :param path: the nested executors it came through, outermost first, joined by ``/``
        (``outer/inner`` for a workflow nested in a nested workflow).
    :param event: the inner run's event (its executor ids are the inner workflow's).
    """

    path: str
    event: WorkflowEvent


@attrs.frozen(repr=False)
class RunFinished(WorkflowEvent):
    """The run ended with ``status``; ``error`` is set when it failed."""

    run_id: str
    status: RunStatus
    supersteps: int
    error: BaseException | None = None


class EventObserver(RunObserver):
    """The event stream as an observer of one run: the runner's seams become
    :class:`SuperstepStarted`, :class:`ExecutorInvoked`, :class:`ExecutorRetrying`,
    :class:`ExecutorCompleted` or :class:`ExecutorFailed` and :class:`SuperstepFinished`,
    handed to ``emit`` (the other seams are the :class:`~plait.spi.RunObserver`
    defaults: nothing). A run gets one only when someone consumes those events
    (``events="all"``, a stream), so the others build none.
    """

    __slots__ = ("emit", "executor_ids")

    def __init__(self, emit: Any) -> None:
        self.emit = emit
        self.executor_ids: tuple[str, ...] = ()

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.executor_ids = executor_ids
        self.emit(SuperstepStarted(superstep, executor_ids))

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        if error is None:  # a superstep that failed does not finish
            self.emit(SuperstepFinished(superstep, self.executor_ids))

    def invocation_started(self, invocation: Any) -> tuple[str, int]:
        handle = (invocation.executor_id, invocation.superstep)
        self.emit(ExecutorInvoked(*handle))
        return handle

    def invocation_retrying(
        self, handle: tuple[str, int], attempt: int, delay: float, error: BaseException
    ) -> None:
        self.emit(ExecutorRetrying(handle[0], handle[1], attempt, delay, error))

    def invocation_finished(
        self, handle: tuple[str, int], attempt: int, status: str, error: BaseException | None
    ) -> None:
        eid, step = handle
        if status == "ok":
            self.emit(ExecutorCompleted(eid, step))
        # failed: the handler's own exception; an error of another executor (a nested
        # run's) is announced by that one
        elif status == "failed" and getattr(error, "executor_id", eid) == eid:
            assert error is not None
            cause = error.__cause__ if isinstance(error, ExecutorFailedError) else None
            self.emit(ExecutorFailed(eid, step, cause or error))


@attrs.define(repr=False)
class WorkflowRunResult:
    """What a run produced.

    :param run_id: the run's id.
    :param status: ``idle``, ``idle_with_pending_requests`` or ``failed``.
    :param outputs: workflow outputs in the order they were yielded.
    :param events: the events collected (lifecycle events unless ``events="all"``).
    :param error: the error that failed the run, else ``None``.
    :param supersteps: how many supersteps ran.
    :param pending_requests: requests for outside input the run is waiting on.
    :param shared: the run's shared state when it ended (``ctx.set_shared_state``).
    :param usage: what the run spent, when something metered it
        (:meth:`plait.spi.RunObserver.usage`; ``plait-budgets``: totals, per model, per
        executor and per budget), else ``None``.
    """

    __repr__ = record_repr

    run_id: str
    status: RunStatus
    outputs: list[Any]
    events: list[WorkflowEvent]
    error: BaseException | None = None
    supersteps: int = 0
    pending_requests: list[Any] = attrs.field(factory=list)
    shared: dict[str, Any] = attrs.field(factory=dict)
    usage: Mapping[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True unless the run failed."""
        return self.status is not RunStatus.FAILED


@attrs.frozen(repr=False)
class ContextSnapshot:
    """What a :class:`WorkflowContext` tells a handler about the invocation it runs, as
    JSON-ready data: enough to build the same context somewhere else.

    A placement that runs a handler in another process (``plait-ray``) takes one on the
    driver (:meth:`WorkflowContext.snapshot`), sends it with the message, and builds the
    worker's context from it (:meth:`WorkflowContext.from_snapshot`) against a scope that
    records what the handler does; the driver then applies the record to the real context
    through the context's own methods. The worker's ``ctx.attempt``,
    ``ctx.idempotency_key`` and request ids equal the driver's.

    ``attrs.asdict(snapshot)`` is its JSON form, and ``ContextSnapshot(**data)`` reads it
    back.
    """

    __repr__ = record_repr

    #: the executor the context belongs to
    executor_id: str = attrs.field(validator=attrs.validators.instance_of(str))
    #: the run's id
    run_id: str = attrs.field(validator=attrs.validators.instance_of(str))
    #: the superstep of the invocation
    superstep: int = attrs.field(validator=attrs.validators.instance_of(int))
    #: which attempt of the invocation this is (1-based)
    attempt: int = attrs.field(validator=attrs.validators.instance_of(int))
    #: the message's index among the executor's deliveries of the superstep
    index: int = attrs.field(validator=attrs.validators.instance_of(int))
    #: the message's delivery id, for an executor that takes messages on arrival
    delivery: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )
