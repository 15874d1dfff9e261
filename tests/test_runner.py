"""The superstep runner's behaviour, through the real routing, merge and builder plugins."""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from plait import (
    Executor,
    ExecutorCompleted,
    ExecutorFailedError,
    ExecutorInvoked,
    Never,
    OutputEvent,
    RoutingError,
    RunFinished,
    RunOptionError,
    RunStarted,
    RunStatus,
    SuperstepFinished,
    SuperstepLimitError,
    SuperstepStarted,
    UnhandledMessageError,
    VisitLimitError,
    WorkflowContext,
    executor,
    handler,
)
from plait_builders import Case, WorkflowBuilder

pytestmark = pytest.mark.anyio


def relay(id: str, log: list[Any] | None = None) -> Executor:
    """An executor that records (id, superstep, message) and sends the message on."""

    @executor(id=id)
    async def step(message: Any, ctx: WorkflowContext[Any]) -> None:
        if log is not None:
            log.append((id, ctx.superstep, message))
        await ctx.send_message(message)

    return step


def sink(id: str, log: list[Any] | None = None) -> Executor:
    """An executor that yields every message it gets as a workflow output."""

    @executor(id=id)
    async def out(message: Any, ctx: WorkflowContext[Never, Any]) -> None:
        if log is not None:
            log.append((id, ctx.superstep, message))
        await ctx.yield_output(message)

    return out


async def test_the_readme_shape() -> None:
    @executor(id="upper")
    async def upper(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())

    @executor(id="reverse")
    async def reverse(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text[::-1])

    wf = WorkflowBuilder().add_edge(upper, reverse).set_start(upper).build()
    result = await wf.run("hello world")
    assert result.outputs == ["DLROW OLLEH"]
    assert result.status is RunStatus.IDLE
    assert result.supersteps == 2


async def test_chain_delivers_in_order() -> None:
    log: list[Any] = []
    nodes = [relay(f"n{i}", log) for i in range(5)]
    builder = WorkflowBuilder()
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    builder.add_edge(nodes[-1], sink("end", log))
    result = await builder.set_start(nodes[0]).build().run("m")
    assert [(i, s) for i, s, _ in log] == [(f"n{k}", k + 1) for k in range(5)] + [("end", 6)]
    assert result.outputs == ["m"]


async def test_a_returned_value_is_sent_on() -> None:
    @executor(id="double")
    async def double(x: int) -> int:
        return x * 2

    wf = WorkflowBuilder().add_edge(double, sink("out")).set_start(double).build()
    assert (await wf.run(21)).outputs == [42]


async def test_fan_out_reaches_every_target_in_the_same_superstep() -> None:
    log: list[Any] = []
    targets = [sink(f"t{i}", log) for i in range(4)]
    wf = WorkflowBuilder().add_fan_out(relay("src"), targets).set_start("src").build()
    result = await wf.run("x")
    assert sorted(log) == [(f"t{i}", 2, "x") for i in range(4)]
    assert result.outputs == ["x"] * 4


async def test_fan_out_selection_picks_targets() -> None:
    targets = [sink("even"), sink("odd")]

    def pick(message: int, names: list[str]) -> list[str]:
        return [names[message % 2]]

    wf = WorkflowBuilder().add_fan_out(relay("src"), targets, selection=pick).set_start("src")
    workflow = wf.build()
    assert (await workflow.run(3)).outputs == [3]
    assert [
        e.executor_id for e in (await workflow.run(4)).events if isinstance(e, OutputEvent)
    ] == ["even"]


async def test_fan_in_fires_once_after_every_source_in_declaration_order() -> None:
    """``slow`` sends one superstep later than ``fast``; the merge still lists ``slow`` first."""
    log: list[Any] = []
    fast, slow, slow2 = relay("fast"), relay("slow"), relay("slow2")
    collect = sink("collect", log)
    wf = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [fast, slow])
        .add_edge(slow, slow2)
        .add_fan_in([slow2, fast], collect, merge="list")
        .set_start("src")
        .build()
    )
    result = await wf.run("v")
    assert log == [("collect", 4, ["v", "v"])]
    assert result.outputs == [["v", "v"]]


async def test_fan_in_keyed_merge_keeps_source_order() -> None:
    @executor(id="a")
    async def a(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"A:{x}")

    @executor(id="b")
    async def b(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"B:{x}")

    wf = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [a, b])
        .add_fan_in([b, a], sink("out"), merge="keyed")
        .set_start("src")
        .build()
    )
    (merged,) = (await wf.run("q")).outputs
    assert merged == {"outputs": {"b": "B:q", "a": "A:q"}, "order": ["b", "a"]}


async def test_switch_takes_first_matching_case_else_default() -> None:
    big, small, other = sink("big"), sink("small"), sink("other")
    wf = (
        WorkflowBuilder()
        .add_switch(
            relay("src"),
            [Case(lambda n: n > 100, big), (lambda n: n > 10, small), (lambda n: n > 1, small)],
            default=other,
        )
        .set_start("src")
        .build()
    )

    async def who(n: int) -> str:
        result = await wf.run(n)
        return next(e.executor_id for e in result.events if isinstance(e, OutputEvent))

    assert [await who(n) for n in (500, 50, 5, 0)] == ["big", "small", "small", "other"]


async def test_switch_without_match_or_default_fails_naming_the_switch() -> None:
    wf = (
        WorkflowBuilder()
        .add_switch(relay("classify"), [(lambda n: n > 0, sink("positive"))])
        .set_start("classify")
        .build()
    )
    with pytest.raises(RoutingError, match=r"switch 'switch:classify->positive'.*no default"):
        await wf.run(-1)


async def test_conditional_edges_route_a_refine_loop() -> None:
    @executor(id="refine")
    async def refine(draft: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(draft + "!")

    done = sink("done")
    wf = (
        WorkflowBuilder()
        .add_edge(refine, refine, condition=lambda d: len(d) < 5)
        .add_edge(refine, done, condition=lambda d: len(d) >= 5)
        .set_start(refine)
        .build()
    )
    result = await wf.run("hi")
    assert result.outputs == ["hi!!!"]
    assert result.supersteps == 4


async def test_cycles_are_bounded_by_max_supersteps() -> None:
    forever = relay("forever")
    wf = WorkflowBuilder().add_edge(forever, forever).set_start(forever).build()
    with pytest.raises(SuperstepLimitError, match=r"max_supersteps=100.*forever") as info:
        await wf.run(0)
    assert info.value.executor_id == "forever"
    with pytest.raises(SuperstepLimitError, match="max_supersteps=7"):
        await wf.run(0, max_supersteps=7)
    failed = await wf.run(0, max_supersteps=3, raise_on_failure=False)
    assert failed.status is RunStatus.FAILED
    assert failed.supersteps == 3


async def test_cycles_are_bounded_by_a_visit_limit() -> None:
    ping, pong = relay("ping"), relay("pong")
    wf = WorkflowBuilder().add_edge(ping, pong).add_edge(pong, ping).set_start(ping).build()
    with pytest.raises(VisitLimitError, match=r"'ping' exceeded its visit limit max_visits=3"):
        await wf.run(0, max_visits=3)
    with pytest.raises(VisitLimitError, match=r"'pong'.*max_visits=2"):
        await wf.run(0, executor_max_visits={"pong": 2})

    @executor(id="limited", max_visits=4)
    async def limited(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x)

    own = WorkflowBuilder().add_edge(limited, limited).set_start(limited).build()
    with pytest.raises(VisitLimitError, match=r"'limited'.*max_visits=4") as info:
        await own.run(0)
    assert info.value.superstep == 5


async def test_a_failure_cancels_siblings_and_names_executor_and_superstep() -> None:
    cancelled: list[str] = []

    @executor(id="slow")
    async def slow(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.append("slow")
            raise
        await ctx.yield_output("never")

    @executor(id="boom")
    async def boom(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("bad input")

    wf = WorkflowBuilder().add_fan_out(relay("src"), [slow, boom]).set_start("src").build()
    with anyio.fail_after(5):
        with pytest.raises(ExecutorFailedError, match=r"'boom' failed in superstep 2") as info:
            await wf.run(1)
    assert cancelled == ["slow"]
    assert info.value.executor_id == "boom" and info.value.superstep == 2
    assert isinstance(info.value.__cause__, ValueError)
    result = info.value.result  # type: ignore[attr-defined]
    assert result.status is RunStatus.FAILED
    assert isinstance(result.events[-1], RunFinished)
    assert result.events[-1].status is RunStatus.FAILED

    events = []
    with pytest.raises(ExecutorFailedError):
        async with wf.stream(1) as stream:
            async for event in stream:
                events.append(event)
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.FAILED


@pytest.mark.parametrize("order", ["failing first", "waiting first"])
async def test_a_failure_that_never_waits_cancels_a_sibling_that_waits(order: str) -> None:
    # on asyncio, handlers that never wait run one after another in one task: a failure
    # there still cancels the sibling that waits, whichever of them starts first
    cancelled: list[str] = []

    @executor(id="slow")
    async def slow(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.append("slow")
            raise

    @executor(id="boom")
    async def boom(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        raise ValueError("bad input")

    targets = [boom, slow] if order == "failing first" else [slow, boom]
    wf = WorkflowBuilder().add_fan_out(relay("src"), targets).set_start("src").build()
    with anyio.fail_after(5):
        with pytest.raises(ExecutorFailedError, match=r"'boom' failed in superstep 2"):
            await wf.run(1)
    assert cancelled == ["slow"]


async def test_every_handler_of_a_parallel_superstep_has_its_own_context_variables() -> None:
    # as in a task of its own: what one handler sets is not seen by the next one
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def setter(id: str) -> Executor:
        @executor(id=id)
        async def sets(x: Any, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"{id} saw {var.get()}")
            var.set(id)
            if id == "b":
                await anyio.lowlevel.checkpoint()  # (a handler that waits keeps its own)
                assert var.get() == "b"

        return sets

    names = ["a", "b", "c", "d"]
    wf = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [setter(n) for n in names])
        .set_start("src")
        .build()
    )
    result = await wf.run(1)
    assert sorted(result.outputs) == [f"{n} saw unset" for n in names]
    assert var.get() == "unset"


async def test_a_handler_that_waits_in_a_cancel_scope_among_ones_that_never_wait() -> None:
    # its cancel scope is its own task's: the timeout ends its wait, not the superstep
    def quick(id: str) -> Executor:
        @executor(id=id)
        async def out(x: Any, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(id)

        return out

    @executor(id="timed")
    async def timed(x: Any, ctx: WorkflowContext[Never, str]) -> None:
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep(30)
        await ctx.yield_output("timed out" if scope.cancelled_caught else "slept")

    targets = [quick("q1"), timed, quick("q2"), quick("q3")]
    wf = WorkflowBuilder().add_fan_out(relay("src"), targets).set_start("src").build()
    with anyio.fail_after(5):
        result = await wf.run(1)
    assert sorted(result.outputs) == ["q1", "q2", "q3", "timed out"]


class Both(Executor):
    """Handles str and int with different handlers."""

    @handler
    async def on_text(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"text:{text}")

    @handler
    async def on_number(self, number: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"number:{number}")


async def test_messages_reach_the_handler_for_their_type() -> None:
    @executor(id="emit")
    async def emit(n: int, ctx: WorkflowContext[str | int]) -> None:
        await ctx.send_message(n)
        await ctx.send_message(str(n))

    wf = WorkflowBuilder().add_edge(emit, Both("both")).set_start(emit).build()
    assert (await wf.run(7)).outputs == ["number:7", "text:7"]


async def test_an_unhandled_type_is_a_build_error_when_types_are_known() -> None:
    @executor(id="floats")
    async def floats(n: int, ctx: WorkflowContext[float]) -> None:
        await ctx.send_message(float(n))

    with pytest.raises(
        Exception, match=r"'both' cannot handle float from 'floats' \(it accepts: str, int\)"
    ):
        WorkflowBuilder().add_edge(floats, Both("both")).set_start(floats).build()


async def test_an_unhandled_type_is_a_run_error_naming_executor_and_type() -> None:
    @executor(id="anything")
    async def anything(n: int, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(float(n))

    wf = WorkflowBuilder().add_edge(anything, Both("both")).set_start(anything).build()
    with pytest.raises(UnhandledMessageError, match=r"'both' has no handler.*type float") as info:
        await wf.run(1)
    assert info.value.executor_id == "both"


async def test_a_message_with_nowhere_to_go_is_an_error() -> None:
    @executor(id="lonely")
    async def lonely(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)

    wf = WorkflowBuilder().add_executor(lonely).set_start(lonely).build()
    with pytest.raises(UnhandledMessageError, match="'lonely' sent a message of type int"):
        await wf.run(1)


async def test_explicit_targets() -> None:
    a, b = sink("a"), sink("b")

    @executor(id="chooser")
    async def chooser(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n, target="b" if n else "nowhere")

    wf = WorkflowBuilder().add_fan_out(chooser, [a, b]).set_start(chooser).build()
    result = await wf.run(1)
    assert [e.executor_id for e in result.events if isinstance(e, OutputEvent)] == ["b"]
    with pytest.raises(UnhandledMessageError, match="to 'nowhere'"):
        await wf.run(0)


async def test_concurrent_runs_of_one_workflow_are_isolated() -> None:
    @executor(id="count")
    async def count(n: int, ctx: WorkflowContext[int, int]) -> None:
        ctx.state["seen"] = ctx.state.get("seen", 0) + 1
        runs = set(ctx.shared.get("runs", set())) | {ctx.run_id}
        await ctx.set_shared_state("runs", runs)
        await anyio.lowlevel.checkpoint()
        if ctx.state["seen"] < n:
            await ctx.send_message(n)
        else:
            await ctx.yield_output((ctx.state["seen"], len(runs)))

    wf = WorkflowBuilder().add_edge(count, count).set_start(count).build()
    results: dict[int, Any] = {}

    async def one(n: int) -> None:
        results[n] = (await wf.run(n)).outputs

    async with anyio.create_task_group() as tg:
        for n in (3, 5, 8):
            tg.start_soon(one, n)
    assert results == {3: [(3, 1)], 5: [(5, 1)], 8: [(8, 1)]}


async def test_fan_in_waits_for_every_source_by_default() -> None:
    a = relay("a")
    b = relay("b")
    wf = (
        WorkflowBuilder()
        .add_edge(relay("src"), a)
        .add_edge("src", b, condition=lambda n: n > 0)
        .add_fan_in([a, b], sink("join"))
        .set_start("src")
        .build()
    )
    assert (await wf.run(1)).outputs == [[1, 1]]
    quiet = await wf.run(0)
    assert quiet.outputs == [] and quiet.status is RunStatus.IDLE


async def test_fan_in_when_available_fires_once_silent_sources_cannot_send() -> None:
    a, b, b2 = relay("a"), relay("b"), relay("b2")
    wf = (
        WorkflowBuilder()
        .add_edge(relay("src"), a)
        .add_edge("src", b, condition=lambda n: n > 0)
        .add_edge(b, b2)
        .add_fan_in([a, b2], sink("join"), when="available")
        .set_start("src")
        .build()
    )
    assert (await wf.run(1)).outputs == [[1, 1]]  # b2 arrives later: it still waits for it
    assert (await wf.run(0)).outputs == [[0]]  # b can no longer send: fire with a alone


async def _peak_concurrency(wf: Any, message: Any, **options: Any) -> int:
    result = await wf.run(message, **options)
    return int(max(result.outputs))


def _tracked(id: str, gauge: dict[str, int]) -> Executor:
    @executor(id=id)
    async def work(n: int, ctx: WorkflowContext[Never, int]) -> None:
        gauge["now"] += 1
        gauge["peak"] = max(gauge["peak"], gauge["now"])
        await anyio.sleep(0.01)
        gauge["now"] -= 1
        await ctx.yield_output(gauge["peak"])

    return work


async def test_max_concurrency_bounds_static_fan_out() -> None:
    gauge = {"now": 0, "peak": 0}
    workers = [_tracked(f"w{i}", gauge) for i in range(12)]
    wf = WorkflowBuilder().add_fan_out(relay("src"), workers).set_start("src").build()
    assert await _peak_concurrency(wf, 1, max_concurrency=3) == 3
    gauge.update(now=0, peak=0)
    assert await _peak_concurrency(wf, 1) == 12


async def test_max_concurrency_bounds_dynamic_sends() -> None:
    gauge = {"now": 0, "peak": 0}

    @executor(id="spray")
    async def spray(n: int, ctx: WorkflowContext[int]) -> None:
        for i in range(n):
            await ctx.send_message(i)

    worker = _tracked("worker", gauge)
    wf = WorkflowBuilder().add_edge(spray, worker).set_start(spray).build()
    # one executor's messages run in order by default ...
    assert await _peak_concurrency(wf, 10) == 1
    # ... concurrently when it allows it, and still within the run's limit
    gauge.update(now=0, peak=0)
    assert await _peak_concurrency(wf, 10, executor_concurrency={"worker": 8}) == 8
    gauge.update(now=0, peak=0)
    opts = {"executor_concurrency": {"worker": 8}, "max_concurrency": 2}
    assert await _peak_concurrency(wf, 10, **opts) == 2


async def test_unknown_or_bad_run_options_are_errors() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    with pytest.raises(RunOptionError, match=r"unknown run option\(s\): max_concurency"):
        await wf.run(1, max_concurency=2)
    with pytest.raises(RunOptionError, match="max_concurrency must be a positive int"):
        await wf.run(1, max_concurrency=0)
    with pytest.raises(RunOptionError, match="unknown executor 'ghost'"):
        await wf.run(1, executor_concurrency={"ghost": 2})
    with pytest.raises(RunOptionError, match="unknown run option"):
        WorkflowBuilder(max_superstep=3)


async def test_stream_yields_every_event_in_order() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    async with wf.stream("x") as stream:
        events = [event async for event in stream]
    kinds = [type(e) for e in events]
    assert kinds == [
        RunStarted,
        SuperstepStarted,
        ExecutorInvoked,
        ExecutorCompleted,
        SuperstepFinished,
        SuperstepStarted,
        ExecutorInvoked,
        OutputEvent,
        ExecutorCompleted,
        SuperstepFinished,
        RunFinished,
    ]
    assert events[-1].status is RunStatus.IDLE  # type: ignore[attr-defined]
    assert events[7].data == "x"  # type: ignore[attr-defined]


async def test_run_collects_only_lifecycle_events_unless_asked() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    lifecycle = (await wf.run("x")).events
    assert [type(e) for e in lifecycle] == [RunStarted, OutputEvent, RunFinished]
    everything = (await wf.run("x", events="all")).events
    assert len(everything) == 11


async def test_streaming_is_live() -> None:
    """The consumer sees the first output before the run ends."""
    gate = anyio.Event()

    @executor(id="first")
    async def first(x: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("early")
        await ctx.send_message(x)

    @executor(id="second")
    async def second(x: str, ctx: WorkflowContext[Never, str]) -> None:
        await gate.wait()
        await ctx.yield_output("late")

    wf = WorkflowBuilder().add_edge(first, second).set_start(first).build()
    seen = []
    with anyio.fail_after(5):
        async with wf.stream("x", events="lifecycle") as stream:
            async for event in stream:
                if isinstance(event, OutputEvent):
                    seen.append(event.data)
                    gate.set()
    assert seen == ["early", "late"]


def test_run_sync_for_scripts() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    assert wf.run_sync("s").outputs == ["s"]
    assert wf.run_sync("t", backend="trio").outputs == ["t"]


async def test_a_run_of_handlers_that_never_await_can_still_be_cancelled() -> None:
    @executor(id="spin")
    async def spin(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)  # completes without ever suspending

    wf = WorkflowBuilder().add_edge(spin, spin).set_start(spin).build()
    with anyio.fail_after(20):  # a guard for the test itself, not a timing assertion
        with anyio.move_on_after(0.05) as scope:
            await wf.run(0, max_supersteps=10**9)
    assert scope.cancelled_caught


async def test_stopping_a_stream_early_cancels_the_run_and_leaves_the_caller_alone() -> None:
    cancelled = anyio.Event()

    @executor(id="ticker")
    async def ticker(n: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.yield_output(n)
        try:
            await anyio.sleep(0.01)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        await ctx.send_message(n + 1)

    wf = WorkflowBuilder().add_edge(ticker, ticker).set_start(ticker).build()
    seen = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            async for event in wf.stream(0, task_group=tg, max_supersteps=10_000):
                if isinstance(event, OutputEvent):
                    seen.append(event.data)
                    if len(seen) == 3:
                        break
            # the abandoned iterator is finalised; the run stops, and this task is not
            # cancelled; the caller's group waits for the run to end
            await cancelled.wait()
            await anyio.sleep(0.02)
    assert seen == [0, 1, 2]


async def test_stream_with_aclosing_also_stops_the_run() -> None:
    from contextlib import aclosing

    cancelled = anyio.Event()
    handled: list[int] = []

    @executor(id="ticker")
    async def ticker(n: int, ctx: WorkflowContext[int]) -> None:
        handled.append(n)
        try:
            await anyio.sleep(0.01)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        await ctx.send_message(n + 1)

    wf = WorkflowBuilder().add_edge(ticker, ticker).set_start(ticker).build()
    with anyio.fail_after(10):  # a guard for the test itself, not a timing assertion
        async with anyio.create_task_group() as tg:
            async with aclosing(wf.stream(0, task_group=tg, max_supersteps=10_000)) as events:
                async for event in events:
                    if isinstance(event, SuperstepFinished) and event.superstep == 5:
                        break
            # closing the stream cancelled the handler that was running when we left
            await cancelled.wait()
    stopped_at = list(handled)
    for _ in range(20):
        await anyio.sleep(0.01)  # this task was not cancelled by the closed stream
    assert handled == stopped_at  # and no superstep ran after the close
    assert 5 <= len(handled) < 10_000


async def test_a_stream_outside_any_task_group_says_how_to_run_it() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    with pytest.raises(RuntimeError, match=r"async with .*task_group=tg"):
        async for _ in wf.stream("x"):
            pass


async def test_a_stream_in_the_callers_task_group_yields_every_event() -> None:
    wf = WorkflowBuilder().add_edge(relay("a"), sink("b")).set_start("a").build()
    async with anyio.create_task_group() as tg:
        stream = wf.stream("x", task_group=tg)
        events = [event async for event in stream]
        with pytest.raises(RuntimeError, match="iterated once"):
            stream.__aiter__()
    assert [e.data for e in events if isinstance(e, OutputEvent)] == ["x"]
    assert isinstance(events[-1], RunFinished) and events[-1].status is RunStatus.IDLE


class _Halt(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor SystemExit."""


async def test_a_base_exception_in_a_parallel_superstep_is_raised_as_itself() -> None:
    # on trio, the task group of a parallel superstep wrapped it in a BaseExceptionGroup
    @executor(id="fork")
    async def fork(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="halts")
    async def halts(text: str, ctx: WorkflowContext[Never, str]) -> None:
        raise _Halt("stop here")

    @executor(id="echoes")
    async def echoes(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)

    wf = WorkflowBuilder("halting").add_fan_out(fork, [halts, echoes]).set_start(fork).build()
    with pytest.raises(_Halt, match="stop here"):
        await wf.run("x")
