"""The per-invocation observer (``plait.observe``): what a plugin implementing
``plait_observe_run`` is told, through the real runner, routing and builder plugins — and
that a run nobody observes runs the plain code."""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import plait
import pytest
from plait import (
    ExecutorFailedError,
    InvocationFailure,
    Never,
    RetryPolicy,
    RunStatus,
    Workflow,
    WorkflowContext,
    executor,
)
from plait._runner import Runner, RunState
from plait.spi import Invocation, PluginManager, RunObserver, RunOptions
from plait_builders import WorkflowBuilder
from plait_testing import RegisterPlugin

pytestmark = pytest.mark.anyio

#: set by the recorder's invocation_started, read by handlers
ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("active", default=None)


class Handle:
    """What the recorder returns per invocation."""

    def __init__(self, invocation: Invocation, token: contextvars.Token[str | None]) -> None:
        self.invocation = invocation
        self.token = token
        self.name = f"{invocation.executor_id}@{invocation.superstep}.{invocation.index}"

    def __repr__(self) -> str:
        return self.name


class Recorder(RunObserver):
    """Records every call as a tuple; handles are named ``executor@superstep.index``."""

    def __init__(
        self, log: list[tuple[Any, ...]], handles: list[Handle], run_id: str, superstep: int
    ) -> None:
        self.log = log
        self.handles = handles
        log.append(("run", run_id, superstep))

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.log.append(("superstep", superstep, executor_ids))

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        self.log.append(("/superstep", superstep, type(error).__name__ if error else None))

    def invocation_started(self, invocation: Invocation) -> Any:
        handle = Handle(invocation, ACTIVE.set(f"{invocation.executor_id}"))
        senders = tuple(sorted(h.name for h in invocation.senders))
        self.log.append(("invoke", handle.name, senders))
        self.handles.append(handle)
        return handle

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        self.log.append(("retry", handle.name, attempt, type(error).__name__))

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        ACTIVE.reset(handle.token)
        self.log.append(("/invoke", handle.name, attempt, status))

    def run_finished(self, status: str, error: BaseException | None) -> None:
        self.log.append(("/run", status, type(error).__name__ if error else None))

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        self.log.append(("request", executor_id, superstep))

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        self.log.append(("checkpoint", superstep, status))


class ObservingPlugin:
    """A plugin observing every run (or none, with ``observe=False``)."""

    def __init__(self, observe: bool = True) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.handles: list[Handle] = []
        self.observe = observe

    @plait.hookimpl
    def plait_observe_run(self, run_id: str, workflow: Any, superstep: int) -> Any:
        if not self.observe:
            return None
        return Recorder(self.log, self.handles, run_id, superstep)


def relay(id: str) -> plait.Executor:
    @executor(id=id)
    async def step(message: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(message)

    return step


def sink(id: str, seen: list[Any] | None = None) -> plait.Executor:
    @executor(id=id)
    async def out(message: Any, ctx: WorkflowContext[Never, Any]) -> None:
        if seen is not None:
            seen.append(ACTIVE.get())
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


def names(log: list[tuple[Any, ...]], kind: str) -> list[tuple[Any, ...]]:
    return [entry for entry in log if entry[0] == kind]


@pytest.fixture
def recorder(register_plugin: RegisterPlugin) -> ObservingPlugin:
    plugin = ObservingPlugin()
    register_plugin(plugin, "recorder")
    return plugin


# -- nobody observes: the plain code ------------------------------------------------------


def plain_runner(workflow: Workflow, manager: PluginManager) -> Runner:
    state = RunState("r", None)
    state.observer = manager.observe_run("r", workflow, 0)
    return Runner(workflow._graph, RunOptions(), state, live=False)


def test_a_run_nobody_observes_runs_the_plain_methods(register_plugin: RegisterPlugin) -> None:
    workflow = chain()
    manager = plait.get_plugin_manager()
    register_plugin(ObservingPlugin(observe=False), "declines")
    runner = plain_runner(workflow, manager)
    assert runner.state.observer is None
    assert runner.observer is None
    for name in ("_invoke", "run_invocation", "_apply", "_flush", "run"):
        assert name not in vars(runner), name
        assert getattr(runner, name).__func__ is getattr(Runner, name)
    assert type(runner.main.outbox) is list


def test_an_observed_run_is_told_through_the_seam_not_patched(recorder: ObservingPlugin) -> None:
    runner = plain_runner(chain(), plait.get_plugin_manager())
    assert runner.state.observer is not None
    assert runner.observer is runner.state.observer  # the control for the test above
    # observation is explicit calls at the loop's points: no method rebound, no list
    # subclass tagging messages
    for name in ("_invoke", "run_invocation", "_apply", "_flush", "run"):
        assert name not in vars(runner), name
        assert getattr(runner, name).__func__ is getattr(Runner, name)
    assert type(runner.main.outbox) is list


def test_no_hook_implementation_means_no_hook_call(
    plait_plugin_manager: PluginManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real: Any = plait_plugin_manager.pm.hook.plait_observe_run

    class Spy:
        def get_hookimpls(self) -> Any:
            return real.get_hookimpls()

        def __call__(self, **kwargs: Any) -> Any:
            calls.append("called")
            return real(**kwargs)

    monkeypatch.setattr(plait_plugin_manager.pm.hook, "plait_observe_run", Spy())
    assert plait_plugin_manager.observe_run("r", None, 0) is None
    assert calls == []
    monkeypatch.undo()
    plait_plugin_manager.register(ObservingPlugin(), "recorder")  # the control: now it is
    monkeypatch.setattr(plait_plugin_manager.pm.hook, "plait_observe_run", Spy())
    assert plait_plugin_manager.observe_run("r", None, 0) is not None
    assert calls == ["called"]


# -- what an observer is told ---------------------------------------------------------------


async def test_a_chain_run_supersteps_invocations_and_senders(recorder: ObservingPlugin) -> None:
    result = await chain().run("x")
    assert result.outputs == ["x"]
    assert recorder.log == [
        ("run", result.run_id, 0),
        ("superstep", 1, ("a",)),
        ("invoke", "a@1.0", ()),
        ("/invoke", "a@1.0", 1, "ok"),
        ("/superstep", 1, None),
        ("superstep", 2, ("b",)),
        ("invoke", "b@2.0", ("a@1.0",)),
        ("/invoke", "b@2.0", 1, "ok"),
        ("/superstep", 2, None),
        ("superstep", 3, ("c",)),
        ("invoke", "c@3.0", ("b@2.0",)),
        ("/invoke", "c@3.0", 1, "ok"),
        ("/superstep", 3, None),
        ("/run", "idle", None),
    ]


async def test_the_observer_context_is_the_handlers_context(recorder: ObservingPlugin) -> None:
    seen: list[Any] = []
    workflow = WorkflowBuilder().add_edge(relay("a"), sink("c", seen)).set_start("a").build()
    await workflow.run(1)
    assert seen == ["c"]
    assert ACTIVE.get() is None  # reset by invocation_finished


async def test_a_fan_in_links_to_every_branch_and_a_fan_out_to_its_source(
    recorder: ObservingPlugin,
) -> None:
    workflow = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [relay("x"), relay("y"), relay("z")])
        .add_fan_in(["x", "y", "z"], sink("join"))
        .set_start("src")
        .build()
    )
    result = await workflow.run(1)
    assert result.outputs == [[1, 1, 1]]
    invokes = names(recorder.log, "invoke")  # the branches start in any order (trio)
    assert sorted(invokes) == [
        ("invoke", "join@3.0", ("x@2.0", "y@2.0", "z@2.0")),
        ("invoke", "src@1.0", ()),
        ("invoke", "x@2.0", ("src@1.0",)),
        ("invoke", "y@2.0", ("src@1.0",)),
        ("invoke", "z@2.0", ("src@1.0",)),
    ]


async def test_a_fan_in_across_supersteps_keeps_the_early_senders(
    recorder: ObservingPlugin,
) -> None:
    # x arrives in superstep 2, y (after a detour through "slow") in superstep 3
    workflow = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [relay("x"), relay("slow")])
        .add_edge("slow", relay("y"))
        .add_fan_in(["x", "y"], sink("join"))
        .set_start("src")
        .build()
    )
    await workflow.run(1)
    (join,) = [e for e in names(recorder.log, "invoke") if e[1].startswith("join")]
    assert join == ("invoke", "join@4.0", ("x@2.0", "y@3.0"))


async def test_messages_of_one_executor_link_by_index(recorder: ObservingPlugin) -> None:
    def tag(id: str) -> plait.Executor:
        @executor(id=id)
        async def step(message: Any, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(f"from {id}")

        return step

    workflow = (
        WorkflowBuilder()
        .add_fan_out(relay("src"), [tag("p"), tag("q")])
        .add_edge("p", sink("out"))
        .add_edge("q", "out")
        .set_start("src")
        .build()
    )
    await workflow.run(1)
    # p and q run concurrently: whichever sent first is message 0 of "out"
    outs = {
        handle.name: (handle.invocation.message, [s.name for s in handle.invocation.senders])
        for handle in recorder.handles
        if handle.invocation.executor_id == "out"
    }
    assert sorted(outs.values()) == [("from p", ["p@2.0"]), ("from q", ["q@2.0"])]
    assert sorted(outs) == ["out@3.0", "out@3.1"]


async def test_retries_are_told_with_their_attempts(recorder: ObservingPlugin) -> None:
    @executor(id="flaky")
    async def flaky(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"{text}{ctx.attempt}")
        if ctx.attempt < 3:
            raise ConnectionError("blip")

    workflow = (
        WorkflowBuilder()
        .add_executor(flaky, retry=RetryPolicy(max_attempts=3, delay=0))
        .add_edge(flaky, sink("c"))
        .set_start(flaky)
        .build()
    )
    result = await workflow.run("t")
    assert result.outputs == ["t3"]
    log = recorder.log
    assert names(log, "retry") == [
        ("retry", "flaky@1.0", 1, "ConnectionError"),
        ("retry", "flaky@1.0", 2, "ConnectionError"),
    ]
    assert ("/invoke", "flaky@1.0", 3, "ok") in log
    # only the committed attempt's message was sent, and it links to the invocation
    assert ("invoke", "c@2.0", ("flaky@1.0",)) in log


async def test_a_failure_ends_invocation_superstep_and_run_with_it(
    recorder: ObservingPlugin,
) -> None:
    @executor(id="boom")
    async def boom(text: str, ctx: WorkflowContext[str]) -> None:
        raise ValueError("no")

    workflow = WorkflowBuilder().add_edge(relay("a"), boom).set_start("a").build()
    with pytest.raises(ExecutorFailedError):
        await workflow.run("t")
    assert recorder.log[-3:] == [
        ("/invoke", "boom@2.0", 1, "failed"),
        ("/superstep", 2, "ExecutorFailedError"),
        ("/run", "failed", "ExecutorFailedError"),
    ]


async def test_a_failing_branch_cancels_its_siblings_as_cancelled(
    recorder: ObservingPlugin,
) -> None:
    @executor(id="boom")
    async def boom(text: int, ctx: WorkflowContext[Never]) -> None:
        raise ValueError("no")

    @executor(id="waits")
    async def waits(text: int, ctx: WorkflowContext[Never]) -> None:
        await anyio.sleep(30)

    workflow = WorkflowBuilder().add_fan_out(relay("src"), [boom, waits]).set_start("src").build()
    with pytest.raises(ExecutorFailedError):
        await workflow.run(1)
    finished = {e[1]: e[3] for e in names(recorder.log, "/invoke")}
    assert finished == {"src@1.0": "ok", "boom@2.0": "failed", "waits@2.0": "cancelled"}


async def test_an_error_edge_takes_a_failed_invocation(recorder: ObservingPlugin) -> None:
    seen: list[Any] = []

    @executor(id="boom")
    async def boom(text: str, ctx: WorkflowContext[str]) -> None:
        raise ValueError("no")

    @executor(id="handler")
    async def on_failure(failure: InvocationFailure, ctx: WorkflowContext[Never, str]) -> None:
        seen.append(failure.executor_id)
        await ctx.yield_output("handled")

    workflow = (
        WorkflowBuilder()
        .add_edge(relay("a"), boom)
        .add_error_edge(boom, on_failure)
        .set_start("a")
        .build()
    )
    result = await workflow.run("t")
    assert result.outputs == ["handled"]
    assert ("/invoke", "boom@2.0", 1, "failed") in recorder.log
    assert ("/invoke", "handler@3.0", 1, "ok") in recorder.log
    assert recorder.log[-1] == ("/run", "idle", None)


async def test_a_durable_run_is_observed(recorder: ObservingPlugin) -> None:
    result = await chain().run("x", checkpoint="memory://observe")
    assert result.outputs == ["x"]
    assert names(recorder.log, "/invoke") == [
        ("/invoke", "a@1.0", 1, "ok"),
        ("/invoke", "b@2.0", 1, "ok"),
        ("/invoke", "c@3.0", 1, "ok"),
    ]
    assert recorder.log[-1] == ("/run", "idle", None)
    # the checkpoints are told through the same seam, each after its superstep's work
    assert names(recorder.log, "checkpoint") == [
        ("checkpoint", 0, "running"),
        ("checkpoint", 1, "running"),
        ("checkpoint", 2, "running"),
        ("checkpoint", 3, "idle"),
    ]
    third = recorder.log.index(("checkpoint", 3, "idle"))
    assert recorder.log.index(("/invoke", "c@3.0", 1, "ok")) < third


async def test_a_request_for_outside_input_is_observed(recorder: ObservingPlugin) -> None:
    @executor(id="ask")
    async def ask(message: str, ctx: WorkflowContext[Never]) -> None:
        await ctx.request_info("approve?", bool)

    workflow = WorkflowBuilder("asking").add_executor(ask).set_start(ask).build()
    result = await workflow.run("x")
    assert result.status.value == "idle_with_pending_requests"
    assert names(recorder.log, "request") == [("request", "ask", 1)]


async def test_a_nested_run_is_observed_inside_the_invoking_executor(
    recorder: ObservingPlugin,
) -> None:
    inner = WorkflowBuilder("inner").add_edge(relay("i1"), sink("i2")).set_start("i1").build()
    outer = (
        WorkflowBuilder("outer")
        .add_edge(relay("a"), inner.as_executor("nested"))
        .add_edge("nested", sink("c"))
        .set_start("a")
        .build()
    )
    result = await outer.run("x")
    assert result.outputs == ["x"]
    log = recorder.log
    start = log.index(("invoke", "nested@2.0", ("a@1.0",)))
    end = log.index(("/invoke", "nested@2.0", 1, "ok"))
    inside = log[start + 1 : end]
    assert inside[0][0] == "run" and inside[-1] == ("/run", "idle", None)
    assert ("invoke", "i2@2.0", ("i1@1.0",)) in inside
    assert ("invoke", "c@3.0", ("nested@2.0",)) in log


async def test_two_observers_each_get_their_own_handles(
    recorder: ObservingPlugin, register_plugin: RegisterPlugin
) -> None:
    second = ObservingPlugin()
    register_plugin(second, "second")
    await chain().run("x")
    assert names(recorder.log, "invoke") == names(second.log, "invoke")
    assert ("invoke", "c@3.0", ("b@2.0",)) in second.log


class Keeper(RunObserver):
    """Keeps ``{"run": id, "after": superstep}`` with the run's checkpoints."""

    def __init__(self, run_id: str, superstep: int) -> None:
        self.kept = {"run": run_id, "after": superstep}

    def checkpoint_metadata(self) -> Any:
        return self.kept


class KeepingPlugin:
    """An observer plugin that takes ``resumed`` (the other plugins here leave it out)."""

    def __init__(self) -> None:
        self.resumed: list[Any] = []

    @plait.hookimpl
    def plait_observe_run(self, run_id: str, workflow: Any, superstep: int, resumed: Any) -> Any:
        self.resumed.append(resumed)
        return Keeper(run_id, superstep)


async def test_what_an_observer_keeps_with_checkpoints_comes_back_when_the_run_resumes(
    register_plugin: RegisterPlugin, recorder: ObservingPlugin
) -> None:
    import threading

    from plait_durable import open_store

    keeping = KeepingPlugin()
    register_plugin(keeping, name="keeping")
    url = "memory://observe-keep"
    stop = threading.Event()
    stop.set()  # each run goes one superstep, then stops (resumable)
    first = await chain().run("x", checkpoint=url, stop=stop)
    latest = await open_store(url).latest(first.run_id)
    assert latest is not None
    assert latest.metadata["observers"] == {"run": first.run_id, "after": 0}
    await chain().resume(first.run_id, url, stop=stop)
    await chain().resume(first.run_id, url)
    assert keeping.resumed == [
        None,  # a fresh run
        {"run": first.run_id, "after": 0},  # what the first process kept
        {"run": first.run_id, "after": 1},  # what the second kept
    ]
    # the plugin that leaves ``resumed`` out is still called, with what it takes
    assert [entry[2] for entry in names(recorder.log, "run")] == [0, 1, 2]


async def test_a_run_may_not_set_the_observers_checkpoint_metadata() -> None:
    from plait import RunOptionError

    with pytest.raises(RunOptionError, match="may not set observers"):
        await chain().run("x", checkpoint="memory://x", checkpoint_metadata={"observers": {}})


async def test_the_event_stream_is_told_through_the_same_seam() -> None:
    from plait import EventObserver, ExecutorInvoked, SuperstepStarted

    seen: list[Any] = []
    state = RunState("r", seen.append)
    state.observer = EventObserver(seen.append)
    runner = Runner(chain()._graph, RunOptions(), state, live=False)
    assert runner.observer is not None
    assert await runner.run({"a": ["x"]}) is RunStatus.IDLE
    assert [type(e).__name__ for e in seen[:3]] == [
        SuperstepStarted.__name__,
        ExecutorInvoked.__name__,
        "ExecutorCompleted",
    ]
    assert [e.superstep for e in seen if isinstance(e, SuperstepStarted)] == [1, 2, 3]
