"""The pipelined schedule gives the superstep schedule's results (issue 22, invariant 1).

Differential property tests: plait-testing's schedule contract
(``plait_testing.schedules.ScheduleContract``) draws random graphs — fan-out, fan-in
(``all`` and ``available``), switches and conditional edges, counter-bounded loops,
executors handling one superstep's messages up to 4 at a time or one at a time as they
arrive (``order="arrival"``; both start each message without waiting for the superstep's
others, named by its delivery id), requests for input that it answers — whose executors
are hash-based transforms of their message and state. Each graph runs once in the
superstep schedule, then in the pipelined schedule under 50 seeds of random handler sleeps
and ``max_lead`` 0, 1, 3 and unbounded, on trio's mock clock (so the sleeps cost no wall
time and the interleavings differ with every seed), and under 2 on asyncio. Every run must
give the same outputs in the same order, the same per-executor sequence of (superstep,
message id, message), the same final executor states and visits — or the same error at the
same (executor, superstep). Graphs it once found wrong are regression tests here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from plait import (
    Executor,
    RunOptionError,
    Workflow,
    WorkflowContext,
    WorkflowRunError,
    executor,
    handler,
)
from plait_builders import WorkflowBuilder
from plait_stores import MemoryCheckpointStore
from plait_testing.schedules import (
    DrawnGraph as Graph,
    DrawnNode as Node,
    ScheduleContract,
    run_drawn,
)
from trio.testing import MockClock

SEEDS = 50
LEADS = (0, 1, 3, None)


class TestPipelinedScheduleContract(ScheduleContract):
    """plait-testing's schedule contract, at each ``max_lead`` (the seeds go round them).

    15 new graphs a run (a few seconds); a hunt with 400 a run found the two below the
    pipelined schedule got wrong (regression tests), then none in 1,600 more and in 800
    from a denser variant (more fan-ins, loops, concurrency) after their fixes.
    """

    options = tuple({"schedule": "pipelined", "max_lead": lead} for lead in LEADS)
    examples = 15
    seeds = SEEDS


def same_as_the_superstep_run(graph: Graph, seed: int, lead: int | None) -> None:
    """A drawn graph the pipelined schedule once got wrong: on the seed and ``max_lead``
    that showed it, then as the contract runs it (a run that stalls fails naming the
    graph)."""
    expected = run_drawn(graph)
    got = run_drawn(graph, seed, schedule="pipelined", max_lead=lead)
    assert got == expected
    for seed in range(SEEDS):
        lead = LEADS[seed % len(LEADS)]
        got = run_drawn(graph, seed, schedule="pipelined", max_lead=lead)
        assert got == expected, f"seed {seed}, max_lead {lead}"


def test_an_arrival_fan_in_waits_for_a_back_edge_feeding_it_an_earlier_superstep() -> None:
    # n3, a fan-in of all of n0, n1 and n2 taking its messages on arrival (4 at a time),
    # is fed at superstep 3 by n5's back edge and at 4 by the fan-in: its group of 4 used
    # to start while n5 (superstep 2) still ran; n5's message then waited for the group
    # of 4 to end, and the group of 4 for n3's work at 3 (which could send it more)
    nodes = (
        Node("n0", "start", (), 1, False, "conditional", None, 2, False, None),
        Node("n1", "edge", ("n0",), 1, False, "direct", None, 2, False, None),
        Node("n2", "edge", ("n1",), 1, False, "direct", None, 2, False, None),
        Node("n3", "fanin_all", ("n0", "n1", "n2"), 4, False, "fan_out", None, 3, False, 4),
        Node("n4", "fanin_available", ("n1", "n2"), 4, False, "conditional", None, 1, False, None),
        Node("n5", "edge", ("n0",), 1, False, "direct", "n3", 1, False, 2),
        Node("n6", "edge", ("n4",), 4, False, "conditional", None, 3, False, 2),
        Node("n7", "fanin_available", ("n1", "n3", "n5"), 2, False, "direct", None, 2, False, None),
    )
    same_as_the_superstep_run(Graph(nodes, 100, ("f", "f", "c")), seed=2, lead=3)


def test_a_fan_in_waits_for_a_message_an_available_fan_in_still_holds() -> None:
    # n5, a fan-in of all of n1, n3 and n4 (taking its messages on arrival), gets n1's
    # message of superstep 4 and n3's and n4's of 5; n3 is fed by an available fan-in
    # whose buffers held n1's message of 4 until the barrier of 4 flushed it: n5's fan-in
    # used to route n4's message of 5 before that flush and n3's alone after it, so
    # n3's completed the round and n5's delivery at 6 got another id
    nodes = (
        Node("n0", "start", (), 2, False, "direct", None, 1, False, 4),
        Node("n1", "edge", ("n0",), 1, False, "switch", None, 3, False, None),
        Node("n2", "edge", ("n0",), 1, False, "fan_out", "n1", 3, False, None),
        Node("n3", "fanin_available", ("n0", "n1"), 1, False, "conditional", None, 1, False, None),
        Node("n4", "edge", ("n1",), 1, False, "fan_out", None, 2, False, None),
        Node("n5", "fanin_all", ("n1", "n3", "n4"), 2, False, "fan_out", None, 2, False, None),
        Node("n6", "fanin_all", ("n1", "n2"), 2, False, "switch", None, 2, False, None),
        Node("n7", "edge", ("n2",), 1, False, "switch", "n1", 2, False, None),
        Node("n8", "edge", ("n2",), 1, False, "direct", "n7", 1, False, None),
    )
    same_as_the_superstep_run(Graph(nodes, 6, ("f",)), seed=3, lead=None)


def test_max_lead_must_be_a_non_negative_int() -> None:
    from plait.spi import PluginManager, RunOptions
    from plait_pipeline import PipelineOptions

    with pytest.raises(RunOptionError, match="max_lead must be a non-negative int"):
        PipelineOptions(max_lead=-1)
    for bad in (-1, True, 1.5):
        with pytest.raises(RunOptionError, match=f"max_lead must be .*got {bad!r}"):
            RunOptions.from_kwargs({"schedule": "pipelined"}, {"max_lead": bad}, PluginManager())
    with pytest.raises(RunOptionError, match="schedule must be the name of a schedule"):
        from plait.spi import RunOptions

        RunOptions(schedule=3)


# -- the schedule's point, on the mock clock ---------------------------------------------------


def langgraph_6320(started: dict[str, float], **defaults: Any) -> Workflow:
    """LangGraph #6320: ``fast`` (0.1 s) then ``after_fast`` (1.0 s), beside ``slow`` (1.2 s)."""

    def step(eid: str, seconds: float, sends: bool) -> Any:
        @executor(id=eid)
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            started[eid] = anyio.current_time()
            await anyio.sleep(seconds)
            if sends:
                await ctx.send_message(message)
            else:
                await ctx.yield_output(eid)

        return run

    start = step("start", 0, True)
    fast, after, slow = (
        step("fast", 0.1, True),
        step("after_fast", 1.0, False),
        step("slow", 1.2, False),
    )
    builder = WorkflowBuilder("lg6320", **defaults).add_fan_out(start, [fast, slow])
    return builder.add_edge(fast, after).set_start(start).build()


def timed(workflow: Workflow, **options: Any) -> tuple[float, Any]:
    async def go() -> tuple[float, Any]:
        began = anyio.current_time()
        result = await workflow.run("go", **options)
        return anyio.current_time() - began, result

    clock = MockClock(autojump_threshold=0)
    outcome: tuple[float, Any] = anyio.run(go, backend="trio", backend_options={"clock": clock})
    return outcome


def test_a_fast_branch_does_not_wait_for_its_slow_sibling() -> None:
    barrier: dict[str, float] = {}
    took, result = timed(langgraph_6320(barrier))
    assert barrier["after_fast"] == pytest.approx(1.2) and took == pytest.approx(2.2)
    pipelined: dict[str, float] = {}
    took_p, result_p = timed(langgraph_6320(pipelined), schedule="pipelined")
    assert pipelined["after_fast"] == pytest.approx(0.1) and took_p == pytest.approx(1.2)
    assert result_p.outputs == result.outputs == ["slow", "after_fast"]  # canonical order
    assert result_p.supersteps == result.supersteps == 3


def item_stages(
    calls: list[tuple[str, int, str]], width: int, order: str | None = None, **defaults: Any
) -> Workflow:
    """12 items through 3 stages of 1 s each, ``width`` at a time (``order``: of stage0 and
    stage1)."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[int]) -> None:
        for i in range(12):
            await ctx.send_message(i)

    def stage(k: int) -> Any:
        @executor(id=f"stage{k}", max_concurrency=width)
        async def work(n: int, ctx: WorkflowContext[int, str]) -> None:
            calls.append((f"stage{k}", ctx.superstep, ctx.idempotency_key))
            await anyio.sleep(1)
            if k == 2:
                await ctx.yield_output(f"{n}:{ctx.idempotency_key.rsplit(':', 1)[1]}")
            else:
                await ctx.send_message(n)

        return work

    stages = [stage(k) for k in range(3)]
    builder = WorkflowBuilder("items", **defaults).add_executor(stages[0], order=order)
    builder.add_executor(stages[1], order=order).add_edge(start, stages[0])
    builder.add_edge(stages[0], stages[1])
    return builder.add_edge(stages[1], stages[2]).set_start(start).build()


def test_executors_with_concurrency_take_their_messages_as_they_arrive() -> None:
    calls: list[tuple[str, int, str]] = []
    took, result = timed(item_stages(calls, 4), run_id="items")
    assert took == pytest.approx(9.0)  # 3 stages x 3 rounds of 4
    barrier_calls, calls[:] = sorted(calls), []
    took_p, result_p = timed(item_stages(calls, 4), schedule="pipelined", run_id="items")
    # a stage starts an item as the last stage ends it: 3 rounds, then 2 more stages
    assert took_p == pytest.approx(5.0)
    # the same outputs in the same (canonical) order, the same supersteps and message ids
    assert result_p.outputs == result.outputs
    assert [int(out.split(":")[0]) for out in result.outputs] == list(range(12))
    assert sorted(calls) == barrier_calls
    assert len({key for _, _, key in calls}) == 36  # each message its own id
    assert result_p.supersteps == result.supersteps == 4


def test_order_arrival_takes_messages_one_at_a_time_as_they_arrive() -> None:
    calls: list[tuple[str, int, str]] = []
    took, result = timed(item_stages(calls, 1, order="arrival"), run_id="items")
    barrier_calls, calls[:] = sorted(calls), []
    options = {"schedule": "pipelined", "run_id": "items"}
    took_p, result_p = timed(item_stages(calls, 1, order="arrival"), **options)
    # stage0 commits each item as it ends it, and stage1 starts it then, one at a time;
    # stage2 (order canonical) waits for its superstep's 12 messages
    assert took == pytest.approx(36.0) and took_p == pytest.approx(25.0)
    assert result_p.outputs == result.outputs and sorted(calls) == barrier_calls
    with pytest.raises(ValueError, match="order must be 'canonical' or 'arrival'"):
        WorkflowBuilder("x").add_executor(item_stages([], 1).executors["stage0"], order="fifo")


@pytest.mark.parametrize("first", ["superstep", "pipelined"])
@pytest.mark.parametrize("then", ["superstep", "pipelined"])
def test_delivery_ids_survive_a_checkpoint_and_resume(first: str, then: str) -> None:
    # stopped once stage1 has run (its messages to stage2 pending in the checkpoint), the
    # resumed run names stage2's messages as the uninterrupted run does
    calls: list[tuple[str, int, str]] = []

    async def play() -> tuple[Any, Any, list[tuple[str, int, str]]]:
        clean = await item_stages(calls, 4).run("go", run_id="ids")
        expected, calls[:] = sorted(calls), []
        stop = anyio.Event()
        workflow = item_stages(calls, 4)
        store = MemoryCheckpointStore()

        async def stop_in_stage1() -> None:
            while not any(eid == "stage1" for eid, _, _ in calls):
                await anyio.sleep(0.01)
            stop.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_in_stage1)
            options = {"checkpoint": store, "schedule": first, "stop": stop}
            stopped = await workflow.run("go", run_id="ids", **options)
        assert stopped.status.value == "running"
        assert not any(eid == "stage2" for eid, _, _ in calls)
        done = await workflow.resume("ids", store, schedule=then)
        return clean, done, expected

    clock = MockClock(autojump_threshold=0)
    clean, done, expected = anyio.run(play, backend="trio", backend_options={"clock": clock})
    assert done.outputs == clean.outputs
    assert sorted(set(calls)) == expected


def test_an_order_that_is_not_known_is_refused_where_it_is_set() -> None:
    with pytest.raises(ValueError, match="executor 'odd': order must be"):

        @executor(id="odd", order="random")
        async def odd(message: str) -> None: ...

    from plait import NodeSpec

    with pytest.raises(ValueError, match="NodeSpec.order must be one of 'canonical', 'arrival'"):
        NodeSpec(id="n", order="lifo")


def nested_beside_a_chain(started: dict[str, float]) -> Workflow:
    """``start`` fans out to a nested workflow (two steps of 1 s, one superstep of the
    outer run) and to a chain of three 0.5 s steps."""

    def step(eid: str, seconds: float, last: bool = False) -> Any:
        @executor(id=eid)
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            started[eid] = anyio.current_time()
            await anyio.sleep(seconds)
            if last:
                await ctx.yield_output(f"{eid}:{message}:{ctx.superstep}")
            else:
                await ctx.send_message(message)

        return run

    inner = (
        WorkflowBuilder("inner")
        .add_edge(step("think", 1.0), step("answer", 1.0, last=True))
        .set_start("think")
        .build()
    )
    chain = [step("c1", 0.5), step("c2", 0.5), step("c3", 0.5, last=True)]
    deep = inner.as_executor("deep")  # what the inner workflow yields, it sends on
    return (
        WorkflowBuilder("outer")
        .add_fan_out(step("start", 0), [deep, chain[0]])
        .add_edge(deep, step("report", 0, last=True))
        .add_edge(chain[0], chain[1])
        .add_edge(chain[1], chain[2])
        .set_start("start")
        .build()
    )


def test_a_nested_workflow_beside_a_chain_gives_the_same_outputs_pipelined() -> None:
    barrier: dict[str, float] = {}
    took, result = timed(nested_beside_a_chain(barrier))
    pipelined: dict[str, float] = {}
    took_p, result_p = timed(nested_beside_a_chain(pipelined), schedule="pipelined")
    assert result_p.outputs == result.outputs and len(result.outputs) == 2
    assert result_p.supersteps == result.supersteps
    # the chain's c2 waits for the nested workflow (2 s) at the barrier, not pipelined
    assert barrier["c2"] == pytest.approx(2.0) and pipelined["c2"] == pytest.approx(0.5)
    assert took == pytest.approx(3.0) and took_p == pytest.approx(2.0)


def test_a_run_watch_shows_what_the_pipelined_schedule_runs() -> None:
    views: dict[str, Any] = {}
    seen: list[tuple[int, tuple[str, ...], dict[str, int]]] = []

    def step(eid: str, seconds: float, sends: bool) -> Any:
        @executor(id=eid)
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            await anyio.sleep(seconds)
            if eid == "after_fast":  # slow (superstep 2) still runs beside it
                view = views["watch"]
                seen.append((view.superstep, view.running, view.deliveries))
            if sends:
                await ctx.send_message(message)
            else:
                await ctx.yield_output(eid)

        return run

    start, fast = step("start", 0, True), step("fast", 0.1, True)
    slow, after = step("slow", 1.2, False), step("after_fast", 0.5, False)
    workflow = (
        WorkflowBuilder("watched")
        .add_fan_out(start, [fast, slow])
        .add_edge(fast, after)
        .set_start(start)
        .build()
    )
    took, _ = timed(workflow, schedule="pipelined", watch=lambda w: views.update(watch=w))
    assert took == pytest.approx(1.2)
    # the lowest superstep with work is 2 (slow), and both executors run now
    assert seen == [(2, ("slow", "after_fast"), {"slow": 1, "after_fast": 1})]
    assert views["watch"].superstep == 3  # after the run: the last superstep


def test_a_workflow_may_default_to_the_pipelined_schedule_and_max_lead_zero_is_the_barrier() -> (
    None
):
    started: dict[str, float] = {}
    workflow = langgraph_6320(started, schedule="pipelined")
    assert workflow.spec.options["schedule"] == "pipelined"
    timed(workflow)
    assert started["after_fast"] == pytest.approx(0.1)
    timed(workflow, max_lead=0)
    assert started["after_fast"] == pytest.approx(1.2)
    timed(workflow, schedule="superstep")
    assert started["after_fast"] == pytest.approx(1.2)


# -- human in the loop and checkpoints across schedules --------------------------------------


def asking(log: list[tuple[str, int]]) -> Workflow:
    """``start`` fans out to ``ask``, which asks for a number, and a 4-step ``chain`` that
    keeps running meanwhile; ``join`` (a fan-in) waits for the answer and the chain."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        log.append(("start", ctx.superstep))
        await ctx.send_message(message)

    class Ask(Executor):
        @handler
        async def ask(self, message: str, ctx: WorkflowContext[str]) -> None:
            log.append(("ask", ctx.superstep))
            await ctx.request_info(f"a number for {message}?", int)

        @handler
        async def answered(self, number: int, ctx: WorkflowContext[str]) -> None:
            log.append(("answered", ctx.superstep))
            await ctx.send_message(f"{number * 2}")

    def link(i: int) -> Any:
        @executor(id=f"chain{i}")
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            log.append((f"chain{i}", ctx.superstep))
            await anyio.sleep(0.01)
            await ctx.yield_output(f"chain{i}@{ctx.superstep}")
            await ctx.send_message(message + str(i))

        return run

    @executor(id="join")
    async def join(parts: list[str], ctx: WorkflowContext[Any, str]) -> None:
        log.append(("join", ctx.superstep))
        await ctx.yield_output("+".join(parts))

    chain = [link(i) for i in range(4)]
    ask = Ask("ask")
    builder = WorkflowBuilder("asking").add_fan_out(start, [ask, chain[0]])
    for a, b in zip(chain, chain[1:]):
        builder.add_edge(a, b)
    builder.add_fan_in([ask, chain[-1]], join)
    return builder.set_start(start).build()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("first", "then"),
    [("pipelined", "pipelined"), ("pipelined", "superstep"), ("superstep", "pipelined")],
)
async def test_a_request_waits_while_other_branches_run_and_resumes_in_either_schedule(
    first: str, then: str
) -> None:
    clean_log: list[tuple[str, int]] = []
    clean_store = MemoryCheckpointStore()
    workflow = asking(clean_log)
    asked = await workflow.run("x", run_id="clean", checkpoint=clean_store)
    (request,) = asked.pending_requests
    clean = await workflow.resume("clean", clean_store, responses={request.request_id: 21})

    log: list[tuple[str, int]] = []
    store = MemoryCheckpointStore()
    workflow = asking(log)
    waiting = await workflow.run("x", run_id="r", checkpoint=store, schedule=first)
    assert waiting.status.value == "idle_with_pending_requests"
    assert ("chain3", 5) in log  # the chain ran on while the request waited
    (request,) = waiting.pending_requests
    assert request.superstep == 2
    done = await workflow.resume("r", store, responses={request.request_id: 21}, schedule=then)
    assert done.outputs == clean.outputs
    assert done.outputs[-1] == "42+x0123"
    assert sorted(log) == sorted(clean_log)


@pytest.mark.anyio
async def test_every_event_of_a_superstep_run_is_streamed_by_a_pipelined_one() -> None:
    def names(events: list[Any]) -> list[str]:
        return sorted(f"{type(e).__name__}:{getattr(e, 'superstep', '')}" for e in events)

    plain = await asking([]).run("x", events="all")
    pipelined = await asking([]).run("x", events="all", schedule="pipelined")
    assert names(pipelined.events) == names(plain.events)
    assert pipelined.outputs == plain.outputs


@pytest.mark.anyio
@pytest.mark.parametrize("schedule", ["superstep", "pipelined"])
async def test_a_resumed_runs_checkpoints_keep_the_state_of_executors_that_have_not_run_since(
    schedule: str,
) -> None:
    @executor(id="counter")
    async def counter(message: str, ctx: WorkflowContext[str]) -> None:
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        await ctx.send_message(message)

    class Ask(Executor):
        @handler
        async def ask(self, message: str, ctx: WorkflowContext[str, str]) -> None:
            await ctx.request_info("a number?", int)

        @handler
        async def got(self, number: int, ctx: WorkflowContext[str, str]) -> None:
            await ctx.yield_output(f"got {number}")
            if number < 2:
                await ctx.request_info("another?", int)

    workflow = WorkflowBuilder("twice").add_edge(counter, Ask("ask")).set_start(counter).build()
    store = MemoryCheckpointStore()
    result = await workflow.run("x", run_id="r", checkpoint=store, schedule=schedule)
    for number in (1, 2):
        (request,) = result.pending_requests
        result = await workflow.resume(
            "r", store, responses={request.request_id: number}, schedule=schedule
        )
        latest = await store.latest("r")
        assert latest is not None
        assert latest.state["executor_state"]["counter"] == {"n": 1}
    assert result.outputs == ["got 1", "got 2"]


def two_chains(name: str, log: list[tuple[str, int]], ran: Callable[[str], None]) -> Workflow:
    """``start`` fans out to a fast chain ``a0..a3`` and a slow one ``b0..b3``; each link
    logs (its id, its superstep), calls ``ran`` with its id, then sends on (the last one
    yields ``"<id>:<message>"``)."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    def link(link_id: str, seconds: float, last: bool) -> Any:
        @executor(id=link_id)
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            log.append((link_id, ctx.superstep))
            await anyio.sleep(seconds)
            ran(link_id)
            if last:
                await ctx.yield_output(f"{link_id}:{message}")
            else:
                await ctx.send_message(message + link_id)

        return run

    a = [link(f"a{i}", 0.001, i == 3) for i in range(4)]
    b = [link(f"b{i}", 0.05, i == 3) for i in range(4)]
    builder = WorkflowBuilder(name).add_fan_out(start, [a[0], b[0]])
    for chain in (a, b):
        for x, y in zip(chain, chain[1:]):
            builder.add_edge(x, y)
    return builder.set_start(start).build()


@pytest.mark.anyio
@pytest.mark.parametrize("durability", ["sync", "exit"])
@pytest.mark.parametrize("resume_in", ["pipelined", "superstep"])
async def test_a_stopped_pipelined_run_resumes_to_the_same_outputs(
    durability: str, resume_in: str
) -> None:
    # in ``exit`` durability the run's one checkpoint is the cut taken as it stopped
    stop = anyio.Event()
    log: list[tuple[str, int]] = []

    def ran(name: str) -> None:
        if name == "a2":
            stop.set()  # Ctrl-C, as plait run sets it, with the chains apart

    workflow = two_chains("stoppable", log, ran)
    clean = await workflow.run("m")
    stop = anyio.Event()  # (the clean run set the first one)
    store = MemoryCheckpointStore()
    log.clear()
    options = {"durability": durability, "schedule": "pipelined", "stop": stop}
    stopped = await workflow.run("m", run_id="s", checkpoint=store, **options)
    assert stopped.status.value == "running"
    assert len(log) < 8  # stopped before the end
    done = await workflow.resume("s", store, schedule=resume_in)
    assert done.outputs == clean.outputs == ["a3:ma0a1a2", "b3:mb0b1b2"]
    assert sorted(set(log)) == sorted({(f"{c}{i}", i + 2) for c in "ab" for i in range(4)})


@pytest.mark.anyio
@pytest.mark.parametrize("resume_in", ["pipelined", "superstep"])
async def test_a_pipelined_run_failing_mid_pipeline_in_exit_durability_resumes_its_cut(
    resume_in: str,
) -> None:
    # the run's checkpoint is the cut taken as it failed: each pending message keeps its
    # superstep and the failed invocation's message is back at its queue's head
    log: list[tuple[str, int]] = []
    broken = {"a2"}

    def ran(name: str) -> None:
        if name in broken:
            raise RuntimeError(f"{name} is broken")

    workflow = two_chains("failing", log, ran)
    store = MemoryCheckpointStore()
    with pytest.raises(WorkflowRunError, match="a2 is broken"):
        await workflow.run(
            "m", run_id="f", checkpoint=store, durability="exit", schedule="pipelined"
        )
    failed = await store.latest("f")
    assert failed is not None and failed.status == "failed"
    assert failed.metadata["error"]["executor"] == "a2"
    broken.clear()
    log.clear()
    done = await workflow.resume("f", store, schedule=resume_in)
    assert done.outputs == ["a3:ma0a1a2", "b3:mb0b1b2"]
    # a2 runs again at its own superstep; nothing runs at a superstep it would not have
    assert ("a2", 4) in log and ("a3", 5) in log
    assert all(step == int(name[1]) + 2 for name, step in log)
    assert ("a0", 2) not in log  # what committed before the failure does not run again


def test_a_yaml_parallel_block_with_branches_of_different_lengths_gives_the_same_context() -> None:
    import plait
    from plait_steps import step_context

    async def fast(prompt: str) -> str:
        await anyio.sleep(0.001)
        return "fast"

    async def slow(prompt: str) -> str:
        await anyio.sleep(0.01)
        return f"slow after {prompt.count('[')} outputs"

    document = """
workflow:
  - type: parallel
    id: block
    steps:
      - {id: quick, type: agent, name: fast}
      - type: parallel
        id: inner
        steps:
          - {id: long_a, type: agent, name: slow}
          - {id: long_b, type: agent, name: fast}
  - {id: after, type: agent, name: slow}
"""
    workflow = plait.load(document, format="steps", executors={"fast": fast, "slow": slow})
    contexts = []
    for schedule in ("superstep", "pipelined"):
        result = workflow.run_sync("go", schedule=schedule)
        contexts.append((step_context(result), result.outputs, result.supersteps))
    assert contexts[0] == contexts[1]
    assert contexts[1][0]["steps"]["after"]["output"] == "slow after 3 outputs"


def tally_beside_a_slow_branch(concurrency: int = 1) -> Workflow:
    """``tally`` (``order="arrival"``, or ``max_concurrency=concurrency`` above 1) counts
    and lists the items it takes, one commit per item, while ``slow`` keeps the pipeline
    open."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[int]) -> None:
        for n in range(4):
            await ctx.send_message(n)

    @executor(id="slow")
    async def slow(n: int, ctx: WorkflowContext[str, str]) -> None:
        await anyio.sleep(10)
        await ctx.yield_output(f"slow {n}")

    @executor(id="tally", max_concurrency=concurrency if concurrency > 1 else None)
    async def tally(n: int, ctx: WorkflowContext[str]) -> None:
        # (the order it takes them in is their arrival's: its state does not depend on it)
        ctx.state["started"] = ctx.state.get("started", 0) + 1  # (changed while it runs)
        await anyio.sleep(1 if concurrency == 1 else 1 + n)  # (concurrent: ends staggered)
        ctx.state["seen"] = sorted([*ctx.state.get("seen", []), n])
        await ctx.send_message(f"tallied {n}")

    @executor(id="sink")
    async def sink(line: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(line)

    builder = WorkflowBuilder("tally").add_fan_out(start, [tally, slow])
    if concurrency == 1:
        builder.add_executor(tally, order="arrival")
    return builder.add_edge(tally, sink).set_start(start).build()


@pytest.mark.parametrize("resume_in", ["pipelined", "superstep"])
def test_no_cut_holds_what_concurrent_invocations_changed_before_they_committed(
    resume_in: str,
) -> None:
    # tally's two concurrent invocations change one state: a cut is not taken while one
    # of them runs (it would hold a change that runs again on resume), so every cut's
    # state is one some sequential execution had, and every cut resumes to the clean end
    workflow = tally_beside_a_slow_branch(concurrency=2)

    async def play() -> tuple[Any, Any, list[tuple[Any, Any, Any]]]:
        clean_store, store = MemoryCheckpointStore(), MemoryCheckpointStore()
        clean = await workflow.run("go", run_id="clean", checkpoint=clean_store)
        clean_final = await clean_store.latest("clean")
        run = await workflow.run("go", run_id="p", checkpoint=store, schedule="pipelined")
        assert run.outputs == clean.outputs
        cuts = [await store.load(info.checkpoint_id) for info in await store.list("p")]
        resumed = []
        for checkpoint in cuts:
            if "pipeline" not in checkpoint.state:
                continue
            done = await workflow.resume(checkpoint.checkpoint_id, store, schedule=resume_in)
            resumed.append((checkpoint, done, await store.latest("p")))
        return clean, clean_final, resumed

    clock = MockClock(autojump_threshold=0)
    clean, clean_final, resumed = anyio.run(play, backend="trio", backend_options={"clock": clock})
    assert resumed  # the pipelined run wrote cuts
    expected_state = clean_final.state["executor_state"]["tally"]
    for cut, done, final in resumed:
        tally = cut.state["executor_state"].get("tally") or {}
        assert tally.get("started", 0) == len(tally.get("seen", []))  # nothing half done
        assert done.outputs == clean.outputs
        assert final.state["executor_state"]["tally"] == expected_state


@pytest.mark.parametrize("resume_in", ["pipelined", "superstep"])
def test_a_cut_holds_the_state_an_arrival_executor_committed_before_its_superstep_ended(
    resume_in: str,
) -> None:
    # every cut written while tally's superstep runs holds its state as of its last commit
    # (not as its superstep began, nor as a running invocation is changing it), so a
    # resume from any of them gives the clean run's outputs and final state
    workflow = tally_beside_a_slow_branch()

    async def play() -> tuple[Any, Any, list[tuple[Any, Any, Any]]]:
        clean_store, store = MemoryCheckpointStore(), MemoryCheckpointStore()
        clean = await workflow.run("go", run_id="clean", checkpoint=clean_store)
        clean_final = await clean_store.latest("clean")
        run = await workflow.run("go", run_id="p", checkpoint=store, schedule="pipelined")
        assert run.outputs == clean.outputs
        mid: list[Any] = []
        for info in await store.list("p"):
            checkpoint = await store.load(info.checkpoint_id)
            if (
                "pipeline" in checkpoint.state
                and 0 < len(checkpoint.state["pending"].get("tally", [])) < 4
            ):
                mid.append(checkpoint)
        resumed = []
        for checkpoint in mid:
            done = await workflow.resume(checkpoint.checkpoint_id, store, schedule=resume_in)
            final = await store.latest("p")
            resumed.append((checkpoint, done, final))
        return clean, clean_final, resumed

    clock = MockClock(autojump_threshold=0)
    clean, clean_final, resumed = anyio.run(play, backend="trio", backend_options={"clock": clock})
    assert len(resumed) == 3  # a cut after each of tally's first three commits
    expected_state = clean_final.state["executor_state"]["tally"]
    for cut, done, final in resumed:
        assert done.outputs == clean.outputs
        assert final.state["executor_state"]["tally"] == expected_state
        left = len(cut.state["pending"]["tally"])  # (the cut's, not a running one's)
        assert cut.state["executor_state"]["tally"]["started"] == 4 - left
