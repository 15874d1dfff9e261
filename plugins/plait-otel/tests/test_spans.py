"""The spans of traced runs: names, parents, links, attributes, events and statuses, as the
SDK's in-memory exporter receives them."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import plait_otel
import pytest
from opentelemetry import context, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from plait import (
    Executor,
    ExecutorFailedError,
    ExecutorTimeoutError,
    Never,
    RetryPolicy,
    RunStatus,
    Workflow,
    WorkflowContext,
    executor,
)
from plait.spi import RUN_REQUEST, AskFirst, RunObserver, hookimpl
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio


def relay(id: str) -> Executor:
    @executor(id=id)
    async def step(message: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(message)

    return step


def sink(id: str) -> Executor:
    @executor(id=id)
    async def out(message: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(message)

    return out


def chain() -> Workflow:
    return (
        WorkflowBuilder("chain")
        .add_edge(relay("a"), relay("b"))
        .add_edge("b", sink("c"))
        .set_start("a")
        .build()
    )


class Spans:
    """The finished spans of a test, looked up by name."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.all: tuple[ReadableSpan, ...] = tuple(exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        (found,) = [s for s in self.all if s.context.span_id == span.parent.span_id]
        return found

    def linked(self, span: ReadableSpan) -> list[str]:
        """The names of the spans ``span`` links to."""
        ids = {link.context.span_id for link in span.links}
        return sorted(s.name for s in self.all if s.context.span_id in ids)

    def supersteps(self) -> dict[int, ReadableSpan]:
        return {s.attributes["plait.superstep"]: s for s in self.named("superstep")}  # type: ignore[index,misc]


async def test_a_run_is_a_tree_of_run_superstep_and_invocation_spans(
    exporter: InMemorySpanExporter,
) -> None:
    result = await chain().run("x")
    spans = Spans(exporter)
    run = spans.one("workflow chain")
    assert run.parent is None
    assert run.kind is trace.SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "plait.run_id": result.run_id,
        "plait.workflow": "chain",
        "plait.status": "idle",
        "plait.supersteps": 3,
    }
    steps = spans.supersteps()
    assert sorted(steps) == [1, 2, 3]
    for number, step in steps.items():
        assert spans.parent(step) is run
        assert step.attributes is not None
        assert step.attributes["plait.run_id"] == result.run_id
        assert step.attributes["plait.executor_ids"] == ("a", "b", "c")[number - 1 : number]
    for number, name in enumerate(["a", "b", "c"], start=1):
        invoke = spans.one(f"invoke {name}")
        assert spans.parent(invoke) is steps[number]
        assert invoke.context.trace_id == run.context.trace_id
        assert dict(invoke.attributes or {}) == {
            "plait.run_id": result.run_id,
            "plait.workflow": "chain",
            "plait.executor_id": name,
            "plait.superstep": number,
            "plait.index": 0,
            "plait.message_type": "builtins.str",
            "plait.attempt": 1,
            "plait.status": "ok",
        }
        assert invoke.status.status_code is StatusCode.UNSET
    # message delivery as links: each invocation links to the one that sent its input
    assert spans.linked(spans.one("invoke a")) == []
    assert spans.linked(spans.one("invoke b")) == ["invoke a"]
    assert spans.linked(spans.one("invoke c")) == ["invoke b"]
    (link,) = spans.one("invoke c").links
    assert dict(link.attributes or {}) == {"plait.executor_id": "b"}
    # spans nest in time: an invocation inside its superstep, the superstep inside the run
    b, step2 = spans.one("invoke b"), steps[2]
    assert step2.start_time <= b.start_time <= b.end_time <= step2.end_time  # type: ignore[operator]
    assert run.start_time <= steps[1].start_time and steps[3].end_time <= run.end_time  # type: ignore[operator]


async def test_a_fan_in_links_to_every_branch(exporter: InMemorySpanExporter) -> None:
    workflow = (
        WorkflowBuilder("diamond")
        .add_fan_out(relay("src"), [relay("x"), relay("y"), relay("z")])
        .add_fan_in(["x", "y", "z"], sink("join"))
        .set_start("src")
        .build()
    )
    assert (await workflow.run(1)).outputs == [[1, 1, 1]]
    spans = Spans(exporter)
    assert spans.linked(spans.one("invoke join")) == ["invoke x", "invoke y", "invoke z"]
    steps = spans.supersteps()
    assert steps[2].attributes is not None
    assert steps[2].attributes["plait.executor_ids"] == ("x", "y", "z")
    for branch in ("x", "y", "z"):
        span = spans.one(f"invoke {branch}")
        assert spans.parent(span) is steps[2]  # concurrent tasks keep their own parents
        assert spans.linked(span) == ["invoke src"]
    join = spans.one("invoke join")
    assert join.attributes is not None and join.attributes["plait.message_type"] == "builtins.list"


async def test_retries_are_span_events_and_the_attempt_an_attribute(
    exporter: InMemorySpanExporter,
) -> None:
    @executor(id="flaky")
    async def flaky(text: str, ctx: WorkflowContext[str]) -> None:
        if ctx.attempt == 1:
            raise ConnectionError("network blip")
        await ctx.send_message(text)

    workflow = (
        WorkflowBuilder("retrying")
        .add_executor(flaky, retry=RetryPolicy(max_attempts=2, delay=0))
        .add_edge(flaky, sink("out"))
        .set_start(flaky)
        .build()
    )
    assert (await workflow.run("t")).outputs == ["t"]
    spans = Spans(exporter)
    span = spans.one("invoke flaky")  # one span for the invocation, whatever its attempts
    assert span.attributes is not None
    assert span.attributes["plait.attempt"] == 2
    assert span.attributes["plait.status"] == "ok"
    assert span.status.status_code is StatusCode.UNSET
    (event,) = span.events
    assert event.name == "plait.retry"
    assert dict(event.attributes or {}) == {
        "plait.attempt": 1,
        "plait.retry_delay_s": 0.0,
        "exception.type": "ConnectionError",
        "exception.message": "network blip",
    }
    assert spans.linked(spans.one("invoke out")) == ["invoke flaky"]


async def test_a_failure_is_an_error_status_with_the_exception_recorded(
    exporter: InMemorySpanExporter,
) -> None:
    @executor(id="boom")
    async def boom(text: str, ctx: WorkflowContext[str]) -> None:
        raise ValueError("bad input")

    workflow = WorkflowBuilder("failing").add_edge(relay("a"), boom).set_start("a").build()
    with pytest.raises(ExecutorFailedError):
        await workflow.run("t")
    spans = Spans(exporter)
    invoke = spans.one("invoke boom")
    assert invoke.status.status_code is StatusCode.ERROR
    assert invoke.status.description == "ValueError: bad input"
    assert invoke.attributes is not None and invoke.attributes["plait.status"] == "failed"
    (event,) = invoke.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert event.attributes["exception.type"] == "ValueError"
    assert event.attributes["exception.message"] == "bad input"
    step = spans.supersteps()[2]
    assert step.status.status_code is StatusCode.ERROR
    assert spans.supersteps()[1].status.status_code is StatusCode.UNSET
    run = spans.one("workflow failing")
    assert run.status.status_code is StatusCode.ERROR
    # the run and its superstep carry the run's error, which names executor and superstep
    failed_in = "ExecutorFailedError: executor 'boom' failed in superstep 2: ValueError: bad input"
    assert run.status.description == step.status.description == failed_in
    assert run.attributes is not None and run.attributes["plait.status"] == "failed"


async def test_a_timeout_says_what_timed_out(exporter: InMemorySpanExporter) -> None:
    @executor(id="slow")
    async def slow(text: str, ctx: WorkflowContext[Never]) -> None:
        await anyio.sleep(30)

    workflow = WorkflowBuilder().add_executor(slow, timeout=0.01).set_start(slow).build()
    with pytest.raises(ExecutorTimeoutError):
        await workflow.run("t")
    span = Spans(exporter).one("invoke slow")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is not None
    assert span.status.description.startswith(
        "ExecutorTimeoutError: executor 'slow' timed out after 0.01 s in superstep 1"
    )


async def test_a_cancelled_sibling_is_cancelled_not_an_error(
    exporter: InMemorySpanExporter,
) -> None:
    @executor(id="boom")
    async def boom(n: int, ctx: WorkflowContext[Never]) -> None:
        raise ValueError("no")

    @executor(id="waits")
    async def waits(n: int, ctx: WorkflowContext[Never]) -> None:
        await anyio.sleep(30)

    workflow = WorkflowBuilder().add_fan_out(relay("src"), [boom, waits]).set_start("src").build()
    with pytest.raises(ExecutorFailedError):
        await workflow.run(1)
    spans = Spans(exporter)
    waited = spans.one("invoke waits")
    assert waited.attributes is not None and waited.attributes["plait.status"] == "cancelled"
    assert waited.status.status_code is StatusCode.UNSET
    assert spans.one("invoke boom").status.status_code is StatusCode.ERROR
    assert spans.one("workflow").attributes is not None  # an unnamed workflow's run


async def test_a_run_started_inside_a_span_is_its_child(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    tracer = provider.get_tracer("the-application")
    with tracer.start_as_current_span("request") as request:
        await chain().run("x")
    spans = Spans(exporter)
    run = spans.one("workflow chain")
    assert spans.parent(run) is spans.one("request")
    assert run.context.trace_id == request.get_span_context().trace_id


async def test_a_run_continues_a_w3c_traceparent(exporter: InMemorySpanExporter) -> None:
    # what an HTTP server does with the headers of the request that starts a run
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    token = context.attach(TraceContextTextMapPropagator().extract(headers))
    try:
        await chain().run("x")
    finally:
        context.detach(token)
    run = Spans(exporter).one("workflow chain")
    assert run.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert run.parent is not None and run.parent.span_id == 0xB7AD6B7169203331
    assert run.parent.is_remote


async def test_spans_a_handler_makes_are_children_of_its_invocation(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    tracer = provider.get_tracer("the-application")

    @executor(id="calls_out")
    async def calls_out(text: str, ctx: WorkflowContext[Never, str]) -> None:
        with tracer.start_as_current_span("http GET"):
            await anyio.lowlevel.checkpoint()
        await ctx.yield_output(text)

    await WorkflowBuilder().add_edge(relay("a"), calls_out).set_start("a").build().run("x")
    spans = Spans(exporter)
    assert spans.parent(spans.one("http GET")) is spans.one("invoke calls_out")
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing leaks out of the run


async def test_a_nested_run_is_a_child_of_the_invoking_executor(
    exporter: InMemorySpanExporter,
) -> None:
    inner = WorkflowBuilder("inner").add_edge(relay("i1"), sink("i2")).set_start("i1").build()
    outer = (
        WorkflowBuilder("outer")
        .add_edge(relay("a"), inner.as_executor("nested"))
        .add_edge("nested", sink("c"))
        .set_start("a")
        .build()
    )
    assert (await outer.run("x")).outputs == ["x"]
    spans = Spans(exporter)
    inner_run = spans.one("workflow inner")
    assert spans.parent(inner_run) is spans.one("invoke nested")
    assert spans.linked(spans.one("invoke i2")) == ["invoke i1"]
    assert spans.linked(spans.one("invoke c")) == ["invoke nested"]
    outer_run = spans.one("workflow outer")
    assert {s.context.trace_id for s in spans.all} == {outer_run.context.trace_id}


async def test_a_durable_run_is_traced(exporter: InMemorySpanExporter) -> None:
    result = await chain().run("x", checkpoint="memory://otel")
    spans = Spans(exporter)
    assert sorted(s.name for s in spans.all) == [
        "invoke a",
        "invoke b",
        "invoke c",
        "superstep",
        "superstep",
        "superstep",
        "workflow chain",
    ]
    run = spans.one("workflow chain")
    assert run.attributes is not None and run.attributes["plait.run_id"] == result.run_id
    # each checkpoint is an event on the span of the superstep that wrote it (the first,
    # written before any superstep, on the run's)
    steps = sorted(spans.named("superstep"), key=lambda s: s.attributes["plait.superstep"])
    for number, step in enumerate(steps, start=1):
        (event,) = [e for e in step.events if e.name == "plait.checkpoint"]
        assert event.attributes is not None and event.attributes["plait.superstep"] == number
    assert [e.name for e in run.events] == ["plait.checkpoint"]


async def test_a_request_for_outside_input_is_a_span_event(
    exporter: InMemorySpanExporter,
) -> None:
    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_info(f"approve {text}?", str)

    workflow = WorkflowBuilder("asking").add_executor(ask).set_start(ask).build()
    waiting = await workflow.run("x")
    (request,) = waiting.pending_requests
    (step,) = Spans(exporter).named("superstep")
    (event,) = [e for e in step.events if e.name == "plait.request"]
    assert event.attributes is not None
    assert event.attributes["plait.executor_id"] == "ask"
    assert event.attributes["plait.request_id"] == request.request_id


async def test_a_resumed_run_says_where_it_resumed(exporter: InMemorySpanExporter) -> None:
    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_info(f"approve {text}?", str)

    workflow = WorkflowBuilder("approval").add_executor(ask).set_start(ask).build()
    waiting = await workflow.run("x", checkpoint="memory://otel-resume")
    (request,) = waiting.pending_requests
    exporter.clear()
    result = await workflow.resume(
        waiting.run_id, "memory://otel-resume", responses={request.request_id: "yes"}
    )
    run = Spans(exporter).one("workflow approval")
    assert run.attributes is not None
    assert run.attributes["plait.resumed_after"] == 1
    assert run.attributes["plait.run_id"] == result.run_id == waiting.run_id


async def test_a_resumed_run_links_to_the_run_it_continues_across_processes(
    exporter: InMemorySpanExporter,
) -> None:
    from plait_durable import open_store

    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_info(f"approve {text}?", str)

    workflow = WorkflowBuilder("approval").add_executor(ask).set_start(ask).build()
    url = "memory://otel-resume-link"
    waiting = await workflow.run("x", checkpoint=url)
    first = Spans(exporter).one("workflow approval").get_span_context()
    # what another process finds in the store: the first run's trace context
    latest = await open_store(url).latest(waiting.run_id)
    assert latest is not None
    expected = f"00-{first.trace_id:032x}-{first.span_id:016x}-{int(first.trace_flags):02x}"
    assert latest.metadata["observers"] == {"otel": {"traceparent": expected}}
    (request,) = waiting.pending_requests
    exporter.clear()
    await workflow.resume(waiting.run_id, url, responses={request.request_id: "yes"})
    resumed = Spans(exporter).one("workflow approval")
    (link,) = resumed.links
    assert (link.context.trace_id, link.context.span_id) == (first.trace_id, first.span_id)
    assert link.context.is_remote and dict(link.attributes or {}) == {"plait.link": "resumed"}


@pytest.mark.parametrize(
    "kept",
    [
        None,
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        {"otel": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"otel": {"traceparent": 42}},
        {"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"}},
        {"otel": {"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
        {"otel": {"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"}},
        {"otel": {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"}},
        {"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"}},
        {"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n"}},
    ],
)
def test_a_checkpoint_s_trace_context_that_is_not_well_formed_gives_no_link(kept: object) -> None:
    from plait_otel._observer import resumed_link

    assert resumed_link(kept) is None


def test_a_well_formed_trace_context_gives_a_remote_link() -> None:
    from plait_otel._observer import resumed_link

    link = resumed_link(
        {"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
    )
    assert link is not None and link.context.is_remote
    assert link.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert link.context.span_id == 0xB7AD6B7169203331 and int(link.context.trace_flags) == 1


async def test_uninstrument_stops_tracing(exporter: InMemorySpanExporter) -> None:
    assert plait_otel.is_instrumented()
    plait_otel.uninstrument()
    assert not plait_otel.is_instrumented()
    await chain().run("x")
    assert exporter.get_finished_spans() == ()


async def test_an_unsampled_run_is_not_observed(restore_instrumentation: None) -> None:
    plait_otel.instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
    assert plait_otel.plait_observe_run("r", chain(), 0, None, None) is None
    assert (await chain().run("x")).outputs == ["x"]


async def test_a_failing_tracer_never_fails_the_run(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from plait_otel._observer import SpanObserver

    def broken(self: Any, superstep: int, executor_ids: Any) -> None:
        raise RuntimeError("exporter on fire")

    monkeypatch.setattr(SpanObserver, "superstep_started", plait_otel._observer._quiet(broken))
    assert (await chain().run("x")).outputs == ["x"]
    assert "exporter on fire" in caplog.text
    assert len(Spans(exporter).named("invoke b")) == 1


class AsksBeforeTheSecondSuperstep:
    """A plugin whose run observer has the run wait for an answer before superstep 2 (told
    after plait-otel's, which has opened that superstep's span by then)."""

    @hookimpl(trylast=True)
    def plait_observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Any, options: Any
    ) -> RunObserver:
        class Asks(RunObserver):
            def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
                if superstep == 2:
                    raise AskFirst("more supersteps?", bool, "ask-2")

        return Asks()


async def test_a_superstep_that_waits_for_an_answer_is_not_an_error(
    exporter: InMemorySpanExporter, plait_register_plugin: Any
) -> None:
    plait_register_plugin(AsksBeforeTheSecondSuperstep(), "asks-before-superstep-2")
    result = await chain().run("t")
    assert result.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    [pending] = result.pending_requests
    assert (pending.request_id, pending.executor_id) == ("ask-2", RUN_REQUEST)
    spans = Spans(exporter)
    steps = spans.supersteps()
    assert sorted(steps) == [1, 2]
    waiting = steps[2]
    assert waiting.status.status_code is StatusCode.UNSET
    assert waiting.attributes is not None and waiting.attributes["plait.waiting_for"] == "ask-2"
    assert not waiting.events
    run = spans.one("workflow chain")
    assert run.status.status_code is not StatusCode.ERROR
