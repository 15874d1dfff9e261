"""Run options an operator's tool needs: ``stop`` at a superstep boundary (what Ctrl-C in
``plait run`` does), ``on_event`` (a progress display's feed) and ``checkpoint_metadata``."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import anyio
import pytest
from durable_helpers import counting_chain
from plait import (
    Executor,
    ExecutorCompleted,
    ExecutorInvoked,
    Never,
    RunFinished,
    RunOptionError,
    RunStatus,
    SuperstepFinished,
    WorkflowContext,
    WorkflowEvent,
    executor,
    handler,
)
from plait_builders import WorkflowBuilder
from plait_durable import open_store

pytestmark = pytest.mark.anyio


def store_url() -> str:
    return f"memory://{uuid.uuid4().hex}"


def stopping_chain(n: int, stop_after: int, flag: Any) -> Any:
    """A chain of n executors; the one at index ``stop_after`` sets ``flag`` as it runs."""

    def node(i: int) -> Any:
        @executor(id=f"s{i}")
        async def add(x: int, ctx: WorkflowContext[int, int]) -> None:
            if i == stop_after:
                flag.set()
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return add

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder("stoppable", max_supersteps=n + 5).add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_stop_ends_the_run_at_the_boundary_and_resume_completes_it(
    durability: str,
) -> None:
    url = store_url()
    flag = threading.Event()
    wf = stopping_chain(6, stop_after=2, flag=flag)
    result = await wf.run(10, checkpoint=url, durability=durability, stop=flag)
    # the superstep that asked to stop finished; nothing after it ran
    assert result.status is RunStatus.RUNNING
    assert result.supersteps == 3
    assert result.outputs == []
    store = open_store(url)
    latest = await store.latest(result.run_id)
    assert latest is not None and latest.status == "running"
    assert latest.superstep == 3
    resumed = await wf.resume(result.run_id, url)
    assert resumed.status is RunStatus.IDLE
    assert resumed.outputs == [16]
    assert resumed.supersteps == 6


class _Pair(Executor):
    """Keeps what it receives in its state; yields both once the second arrives."""

    @handler
    async def take(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        got = [*ctx.state.get("got", []), text]
        ctx.state["got"] = got
        if len(got) == 2:
            await ctx.yield_output("+".join(sorted(got)))


@pytest.mark.parametrize("durability", ["sync", "async"])
async def test_a_run_stopped_and_resumed_twice_keeps_the_state_of_executors_that_waited(
    durability: str,
) -> None:
    # 'pair' keeps the fork's message from superstep 2 while the other one goes round
    # three hops; the first resume stops before 'pair' runs again, so the checkpoints it
    # writes must still hold what 'pair' kept (the first one a resumed run writes used to
    # hold only the states of executors that ran since the resume)
    flag = threading.Event()
    stop_in: set[str] = set()

    def hop(name: str) -> Any:
        @executor(id=name)
        async def run(text: str, ctx: WorkflowContext[str]) -> None:
            if name in stop_in:
                flag.set()
            await ctx.send_message(f"{text}.{name}")

        return run

    @executor(id="fork")
    async def fork(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    pair, h1, h2, h3 = _Pair("pair"), hop("h1"), hop("h2"), hop("h3")
    wf = (
        WorkflowBuilder("pair")
        .add_fan_out(fork, [pair, h1])
        .add_edge(h1, h2)
        .add_edge(h2, h3)
        .add_edge(h3, pair)
        .set_start(fork)
        .build()
    )
    url = store_url()
    stop_in.add("h1")
    first = await wf.run("x", checkpoint=url, durability=durability, stop=flag)
    assert (first.status, first.supersteps) == (RunStatus.RUNNING, 2)
    flag.clear()
    stop_in.clear()
    stop_in.add("h2")
    second = await wf.resume(first.run_id, url, durability=durability, stop=flag)
    assert (second.status, second.supersteps, second.outputs) == (RunStatus.RUNNING, 3, [])
    flag.clear()
    stop_in.clear()
    third = await wf.resume(first.run_id, url, durability=durability)
    assert third.status is RunStatus.IDLE
    assert third.outputs == ["x+x.h1.h2.h3"]


async def test_stop_set_before_the_run_still_runs_one_superstep() -> None:
    flag = anyio.Event()
    flag.set()
    result = await counting_chain(4).run(0, checkpoint=store_url(), stop=flag)
    assert (result.status, result.supersteps) == (RunStatus.RUNNING, 1)


async def test_stop_is_ignored_once_nothing_is_pending() -> None:
    flag = threading.Event()
    wf = stopping_chain(3, stop_after=2, flag=flag)
    result = await wf.run(0, stop=flag)
    assert flag.is_set()
    assert (result.status, result.outputs) == (RunStatus.IDLE, [3])


async def test_stop_must_be_a_flag() -> None:
    with pytest.raises(RunOptionError, match="run option stop must have an is_set"):
        await counting_chain(2).run(0, stop=True)


async def test_on_event_sees_every_event_as_it_happens() -> None:
    seen: list[WorkflowEvent] = []
    result = await counting_chain(3).run(0, events="all", on_event=seen.append)
    assert result.events == []  # they went to on_event instead
    invoked = [e.executor_id for e in seen if isinstance(e, ExecutorInvoked)]
    completed = [e.executor_id for e in seen if isinstance(e, ExecutorCompleted)]
    assert invoked == completed == ["n0", "n1", "n2"]
    assert [e.superstep for e in seen if isinstance(e, SuperstepFinished)] == [1, 2, 3]
    assert isinstance(seen[-1], RunFinished) and seen[-1].status is RunStatus.IDLE


async def test_on_event_also_feeds_resume_and_stream() -> None:
    url = store_url()
    flag = threading.Event()
    wf = stopping_chain(4, stop_after=0, flag=flag)
    first = await wf.run(1, checkpoint=url, stop=flag)
    seen: list[WorkflowEvent] = []
    resumed = await wf.resume(first.run_id, url, events="all", on_event=seen.append)
    assert resumed.outputs == [5]
    assert [e.executor_id for e in seen if isinstance(e, ExecutorInvoked)] == ["s1", "s2", "s3"]
    streamed: list[WorkflowEvent] = []
    async with wf.stream(1, on_event=streamed.append) as events:
        yielded = [event async for event in events]
    assert [type(e) for e in streamed] == [type(e) for e in yielded]


async def test_on_event_must_be_callable() -> None:
    with pytest.raises(RunOptionError, match="run option on_event must be callable"):
        await counting_chain(2).run(0, on_event="print")


async def test_checkpoint_metadata_is_on_every_checkpoint() -> None:
    url = store_url()
    meta = {"cli": {"target": "/srv/flows/app.yaml", "allow_imports": False, "args": [1, None]}}
    result = await counting_chain(3).run(0, checkpoint=url, checkpoint_metadata=meta)
    store = open_store(url)
    infos = await store.list(result.run_id)
    assert len(infos) == 4
    for info in infos:
        checkpoint = await store.load(info.checkpoint_id)
        assert checkpoint.metadata["cli"] == meta["cli"]
        assert checkpoint.metadata["workflow"] == "chain"


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"workflow": "x"}, "may not set workflow"),
        ({"a": object()}, r"checkpoint_metadata\['a'\] must be JSON-ready"),
        ({"a": {1: "x"}}, r"checkpoint_metadata\['a'\] has a non-string key 1"),
        ({"a": [1, {2, 3}]}, r"checkpoint_metadata\['a'\]\[1\] must be JSON-ready"),
        ([("a", 1)], "must be a dict"),
    ],
)
async def test_checkpoint_metadata_must_be_json_ready_and_not_the_kernels(
    meta: Any, message: str
) -> None:
    with pytest.raises(RunOptionError, match=message):
        await counting_chain(2).run(0, checkpoint=store_url(), checkpoint_metadata=meta)


async def test_pending_requests_reads_a_stored_run_without_resuming_it() -> None:
    class Approval(Executor):
        @handler
        async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            ctx.state["text"] = text
            await ctx.request_info({"question": "publish?", "text": text}, bool)

        @handler
        async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"published: {ctx.state['text']}" if approved else "no")

    url = store_url()
    wf = WorkflowBuilder("gate").add_executor(Approval("approval")).set_start("approval").build()
    waiting = await wf.run("draft", checkpoint=url)
    assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    store = open_store(url)
    before = await store.list(waiting.run_id)
    (request,) = await wf.pending_requests(waiting.run_id, url)
    assert (request.executor_id, request.response_type, request.request) == (
        "approval",
        bool,
        {"question": "publish?", "text": "draft"},
    )
    assert await store.list(waiting.run_id) == before  # nothing written, no lease kept
    done = await wf.resume(waiting.run_id, url, responses={request.request_id: True})
    assert done.outputs == ["published: draft"]
    assert await wf.pending_requests(waiting.run_id, url) == []


async def test_watch_is_a_live_view_of_the_run() -> None:
    from plait.spi import RunWatch

    views: list[RunWatch] = []
    seen: list[tuple[int, tuple[str, ...], int]] = []

    def node(i: int) -> Any:
        @executor(id=f"w{i}")
        async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
            (view,) = views
            seen.append((view.superstep, view.running, view.outputs))
            await ctx.yield_output(x)
            if i < 2:
                await ctx.send_message(x + 1)

        return step

    a, b, c = node(0), node(1), node(2)
    wf = WorkflowBuilder("watched").add_edge(a, b).add_edge(b, c).set_start(a).build()
    result = await wf.run(0, watch=views.append)
    assert result.outputs == [0, 1, 2]
    assert seen == [(1, ("w0",), 0), (2, ("w1",), 1), (3, ("w2",), 2)]
    (view,) = views
    assert (view.run_id, view.workflow, view.superstep, view.outputs) == (
        result.run_id,
        "watched",
        3,
        3,
    )
    assert view.pending_requests == 0 and view.retrying == {}


async def test_watch_shows_an_invocation_being_retried() -> None:
    from plait import RetryPolicy
    from plait.spi import RunWatch

    views: list[RunWatch] = []
    during: list[dict[str, int]] = []

    @executor(id="flaky", retry=RetryPolicy(max_attempts=3, backoff="fixed", delay=0.0))
    async def flaky(x: int, ctx: WorkflowContext[Never, int]) -> None:
        during.append(views[0].retrying)
        if len(during) < 3:
            raise RuntimeError("not yet")
        await ctx.yield_output(x)

    wf = WorkflowBuilder("retried").add_executor(flaky).set_start(flaky).build()
    result = await wf.run(7, watch=views.append)
    assert result.outputs == [7]
    assert during == [{}, {"flaky": 1}, {"flaky": 2}]
    assert views[0].retrying == {}


async def test_watch_names_a_retried_executor_whatever_its_id_holds() -> None:
    from plait import RetryPolicy
    from plait.spi import RunWatch

    views: list[RunWatch] = []
    during: list[dict[str, int]] = []

    @executor(id="team:1:flaky", retry=RetryPolicy(max_attempts=2, backoff="fixed", delay=0.0))
    async def flaky(x: int, ctx: WorkflowContext[Never, int]) -> None:
        during.append(views[0].retrying)
        if len(during) < 2:
            raise RuntimeError("not yet")
        await ctx.yield_output(x)

    wf = WorkflowBuilder("retried").add_executor(flaky).set_start(flaky).build()
    assert (await wf.run(7, watch=views.append)).outputs == [7]
    assert during == [{}, {"team:1:flaky": 1}]


async def test_watch_counts_the_messages_each_executor_handles_in_a_superstep() -> None:
    from plait.spi import RunWatch

    views: list[RunWatch] = []
    during: list[dict[str, int]] = []

    @executor(id="split")
    async def split(n: int, ctx: WorkflowContext[int]) -> None:
        for i in range(n):
            await ctx.send_message(i)

    @executor(id="each")
    async def each(i: int, ctx: WorkflowContext[Never, int]) -> None:
        during.append(views[0].deliveries)
        await ctx.yield_output(i)

    wf = WorkflowBuilder("split").add_edge(split, each).set_start(split).build()
    result = await wf.run(3, watch=views.append)
    assert sorted(result.outputs) == [0, 1, 2]
    assert during == [{"each": 3}] * 3


async def test_watch_status_says_what_the_run_s_observers_say(
    plait_register_plugin: Any,
) -> None:
    """``RunWatch.status`` merges the observers' ``status()`` as the run goes; a run no
    plugin observes has none (what a live display shows beside the superstep)."""
    from plait import hookimpl
    from plait.spi import RunObserver, RunWatch

    class Counting(RunObserver):
        def __init__(self) -> None:
            self.steps = 0

        def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
            self.steps = superstep

        def status(self) -> dict[str, str]:
            return {"counted": f"{self.steps} step(s)"}

    class Quiet(RunObserver):
        pass

    class Observers:
        def __init__(self, observer: Any) -> None:
            self.observer = observer

        @hookimpl
        def plait_observe_run(self, run_id: str) -> Any:
            return self.observer() if self.observer is not None else None

    views: list[RunWatch] = []
    during: list[dict[str, str]] = []

    def node(i: int) -> Any:
        @executor(id=f"s{i}")
        async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
            during.append(views[-1].status)
            if i < 1:
                await ctx.send_message(x + 1)
            else:
                await ctx.yield_output(x)

        return step

    a, b = node(0), node(1)
    wf = WorkflowBuilder("status").add_edge(a, b).set_start(a).build()
    assert (await wf.run(0, watch=views.append)).outputs == [1]
    assert during == [{}, {}]
    plait_register_plugin(Observers(Counting), "status-counting")
    plait_register_plugin(Observers(Quiet), "status-quiet")
    assert (await wf.run(0, watch=views.append)).outputs == [1]
    assert during[2:] == [{"counted": "1 step(s)"}, {"counted": "2 step(s)"}]
