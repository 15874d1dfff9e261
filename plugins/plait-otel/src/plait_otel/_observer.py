"""The run observer that turns what the runner tells it into spans (imported on the first
traced run, with OpenTelemetry)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, TypeVar

import anyio
from opentelemetry import context, trace
from opentelemetry.trace import (
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)
from plait import ExecutorFailedError
from plait.spi import (
    AskFirst,
    Invocation,
    RunObserver,
    add_answerer,
    outside_calls,
    remove_answerer,
)

from ._genai import SpanCalls

__all__ = ["SpanObserver", "start_run"]

logger = logging.getLogger("plait_otel")
F = TypeVar("F", bound=Callable[..., Any])


def _quiet(method: F) -> F:
    """Tracing never fails a run: an error of this observer is logged and dropped."""

    @wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception:
            logger.exception("plait-otel: %s failed; the run goes on", method.__name__)
            return None

    return call  # type: ignore[return-value]


class _Invocation:
    """The handle of one invocation: its span, the context token to detach, the answerer
    that spans its model calls (to remove) and the enclosing invocations' answerers it
    stands in for while it runs (to put back)."""

    __slots__ = ("calls", "enclosing", "executor_id", "span", "token")

    def __init__(
        self,
        executor_id: str,
        span: Span,
        token: object,
        calls: Any,
        enclosing: tuple[Any, ...] = (),
    ) -> None:
        self.executor_id = executor_id
        self.span = span
        self.token = token
        self.calls = calls
        self.enclosing = enclosing


def _fail(span: Span, error: BaseException, *, unwrap: bool = False) -> None:
    """Mark ``span`` failed with ``error`` recorded; with ``unwrap``, the handler's own
    exception rather than the :class:`ExecutorFailedError` wrapping it (a timeout or a
    routing error stays itself: its message says more than its cause's)."""
    if unwrap and isinstance(error, ExecutorFailedError) and error.__cause__ is not None:
        error = error.__cause__
    span.record_exception(error, escaped=True)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


#: W3C trace context (version 00): trace id, parent (span) id, flags, in lower-case hex
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def traceparent(span_context: SpanContext) -> str:
    """``span_context`` as a W3C ``traceparent`` header value."""
    return (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{int(span_context.trace_flags):02x}"
    )


def resumed_link(resumed: Any) -> Link | None:
    """A link to the run span a resumed run continues, from what its checkpoint kept
    (``{"otel": {"traceparent": "00-…"}}``). That was read from a store, so anything but
    a well-formed W3C trace context with non-zero ids gives no link (and no error)."""
    otel = resumed.get("otel") if isinstance(resumed, Mapping) else None
    text = otel.get("traceparent") if isinstance(otel, Mapping) else None
    found = _TRACEPARENT.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    trace_id, span_id, flags = (int(part, 16) for part in found.groups())
    if not trace_id or not span_id:
        return None
    remote = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return Link(remote, {"plait.link": "resumed"})


#: The run span's attribute of each unit a budget limits (plait-budgets' units).
_BUDGET_ATTRIBUTES = {
    "tokens": "plait.budget_tokens",
    "input_tokens": "plait.budget_input_tokens",
    "output_tokens": "plait.budget_output_tokens",
    "usd": "plait.budget_usd",
    "model_calls": "plait.budget_model_calls",
    "tool_calls": "plait.budget_tool_calls",
    "supersteps": "plait.budget_supersteps",
    "seconds": "plait.budget_seconds",
}


def start_run(
    tracer: Tracer,
    run_id: str,
    workflow: Any,
    superstep: int,
    resumed: Any = None,
    options: Any = None,
) -> RunObserver | None:
    """Start the run's span (a child of the current context, linked to the span of the run
    it resumes when its checkpoint kept one); ``None`` when it is not recorded (sampled
    out), so an unsampled run is not observed at all."""
    name = getattr(workflow, "name", None)
    attributes: dict[str, Any] = {"plait.run_id": run_id}
    if name:
        attributes["plait.workflow"] = name
    run_attributes = dict(attributes)
    if superstep:
        run_attributes["plait.resumed_after"] = superstep
    budgets = options.plugin_options.values() if options is not None else ()
    budget = next((g.budget for g in budgets if getattr(g, "budget", None) is not None), None)
    limits = getattr(budget, "limits", None)  # plait-budgets' Budget, read by its shape
    if callable(limits):
        for unit, limit in limits().items():
            if unit in _BUDGET_ATTRIBUTES:
                run_attributes[_BUDGET_ATTRIBUTES[unit]] = float(limit)
    span_name = f"workflow {name}" if name else "workflow"
    link = resumed_link(resumed) if resumed is not None else None
    span = tracer.start_span(
        span_name,
        kind=SpanKind.INTERNAL,
        attributes=run_attributes,
        links=[link] if link is not None else None,
    )
    if not span.is_recording():
        span.end()
        return None
    return SpanObserver(tracer, span, attributes)


class SpanObserver(RunObserver):
    """Spans for one run: the run's, a superstep's, each invocation's.

    :param tracer: where spans come from.
    :param run_span: the run's span, started.
    :param attributes: what every span of the run carries (run id, workflow name).
    """

    def __init__(self, tracer: Tracer, run_span: Span, attributes: dict[str, Any]) -> None:
        self.tracer = tracer
        self.run_span = run_span
        self.run_context = trace.set_span_in_context(run_span)
        self.attributes = attributes
        self.step_span: Span | None = None
        self.step_context = self.run_context
        self.last_step = 0

    @_quiet
    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.last_step = superstep
        span = self.tracer.start_span(
            "superstep",
            context=self.run_context,
            kind=SpanKind.INTERNAL,
            attributes={
                **self.attributes,
                "plait.superstep": superstep,
                "plait.executor_ids": list(executor_ids),
            },
        )
        self.step_span = span
        self.step_context = trace.set_span_in_context(span)

    @_quiet
    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        span, self.step_span = self.step_span, None
        if span is None:
            return
        if isinstance(error, AskFirst):
            # not a failure: the superstep did not start, the run waits for an answer
            span.set_attribute("plait.waiting_for", error.request_id)
        elif error is not None and not _cancelled(error):
            _fail(span, error)
        span.end()

    @_quiet
    def invocation_started(self, invocation: Invocation) -> Any:
        links = [
            Link(sender.span.get_span_context(), {"plait.executor_id": sender.executor_id})
            for sender in invocation.senders
            if isinstance(sender, _Invocation)
        ]
        message_type = type(invocation.message)
        span = self.tracer.start_span(
            f"invoke {invocation.executor_id}",
            context=self.step_context,
            kind=SpanKind.INTERNAL,
            links=links,
            attributes={
                **self.attributes,
                "plait.executor_id": invocation.executor_id,
                "plait.superstep": invocation.superstep,
                "plait.index": invocation.index,
                "plait.message_type": f"{message_type.__module__}.{message_type.__qualname__}",
            },
        )
        # current while the handler runs: its own spans (and a nested run's) are children
        token = context.attach(trace.set_span_in_context(span))
        # its model calls get spans of their own (GenAI conventions), inside any budget; in
        # a nested run a call belongs to the innermost invocation, so the nesting
        # invocation's answerer steps aside while this one runs (one span per call)
        enclosing = tuple(one for one in outside_calls.get() if isinstance(one, SpanCalls))
        for one in enclosing:
            remove_answerer(one)
        calls = SpanCalls(self.tracer, span)
        add_answerer(calls)
        return _Invocation(invocation.executor_id, span, token, calls, enclosing)

    @_quiet
    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        if handle is None:
            return
        handle.span.add_event(
            "plait.retry",
            {
                "plait.attempt": attempt,
                "plait.retry_delay_s": delay,
                "exception.type": type(error).__name__,
                "exception.message": str(error),
            },
        )

    @_quiet
    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        if handle is None:
            return
        remove_answerer(handle.calls)
        for one in handle.enclosing:
            add_answerer(one)
        context.detach(handle.token)
        span: Span = handle.span
        span.set_attribute("plait.attempt", attempt)
        span.set_attribute("plait.status", status)
        if status == "failed" and error is not None:
            _fail(span, error, unwrap=True)
        span.end()

    @_quiet
    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        """A ``plait.request`` event on the superstep's span (or the run's)."""
        span = self.step_span or self.run_span
        span.add_event(
            "plait.request",
            {"plait.executor_id": executor_id, "plait.request_id": request_id},
        )

    @_quiet
    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        """A ``plait.checkpoint`` event on the superstep's span (or the run's)."""
        span = self.step_span or self.run_span
        span.add_event(
            "plait.checkpoint",
            {
                "plait.checkpoint_id": checkpoint_id,
                "plait.superstep": superstep,
                "plait.status": status,
            },
        )

    @_quiet
    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        """The run span's trace context, kept with the run's checkpoints: the run that
        resumes it links to this span, in whichever process it runs."""
        return {"otel": {"traceparent": traceparent(self.run_span.get_span_context())}}

    @_quiet
    def run_finished(self, status: str, error: BaseException | None) -> None:
        span = self.run_span
        span.set_attribute("plait.status", status)
        span.set_attribute("plait.supersteps", self.last_step)
        if error is not None:
            _fail(span, error)
        elif status == "failed":
            span.set_status(Status(StatusCode.ERROR, "the run was cancelled or interrupted"))
        span.end()


def _cancelled(error: BaseException) -> bool:
    return isinstance(error, anyio.get_cancelled_exc_class())
