"""The schedule seam: ``plait-pipeline`` registers ``pipelined`` through
``plait_register_schedules``; ``RunOptions.schedule`` takes any registered name; without the
plugin, asking for it (or resuming a checkpoint taken at one of its cuts) fails before
anything runs, naming the distribution to install."""

from __future__ import annotations

from typing import Any

import attrs
import plait
import plait_pipeline
import pytest
from plait import (
    Executor,
    RunOptionError,
    UnknownNameError,
    Workflow,
    WorkflowContext,
    executor,
    handler,
)
from plait.spi import PluginManager, RunOptions
from plait_builders import WorkflowBuilder
from plait_stores import MemoryCheckpointStore

#: what an unknown "pipelined" says (plait-catalog's words)
PIPELINE_HINT = (
    "plait-pipeline (part of plait: in a checkout of plait, bash .ci/uv sync --locked; with "
    "pip, from that checkout's folder, pip install ./plugins/plait-pipeline; from a package "
    "index that has plait, pip install plait)"
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def branches(name: str, log: list[str], manager: PluginManager | None = None) -> Workflow:
    """``start`` fans out to a fast chain ``a0..a2`` and a slow one ``b0..b2``, each link
    logging its id; ``b1`` also asks for a number (answered on resume)."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    def link(link_id: str, last: bool) -> Any:
        @executor(id=link_id)
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            log.append(link_id)
            if last:
                await ctx.yield_output(f"{link_id}:{message}")
            else:
                await ctx.send_message(message + link_id)

        return run

    a = [link(f"a{i}", i == 2) for i in range(3)]
    b = [link(f"b{i}", i == 2) for i in range(3)]
    builder = WorkflowBuilder(name).add_fan_out(start, [a[0], b[0]])
    for chain in (a, b):
        for x, y in zip(chain, chain[1:]):
            builder.add_edge(x, y)
    built = builder.set_start(start).build()
    if manager is None:
        return built
    return Workflow(built.spec, dict(built.executors), plugin_manager=manager)


def without_pipeline() -> PluginManager:
    return PluginManager(disabled=["pipeline"])


def test_plait_pipeline_registers_the_pipelined_schedule_lazily() -> None:
    registry = PluginManager().registry("schedule")
    entry = registry.entry("pipelined")
    assert entry.distribution == "plait-pipeline"
    assert registry.names() == ["pipelined"]  # "superstep" is the kernel's own
    schedule = registry.get("pipelined")
    assert isinstance(schedule.resolve(), plait_pipeline.Pipelined)
    for method in ("pays", "start", "decode_cut"):
        assert callable(getattr(schedule, method))


async def test_an_unknown_schedule_fails_before_the_run_starts() -> None:
    events: list[Any] = []
    workflow = branches("unknown", [])
    with pytest.raises(UnknownNameError) as caught:
        await workflow.run("m", schedule="eager", on_event=events.append)
    assert str(caught.value) == (
        "unknown schedule 'eager' (for run option schedule; 'superstep' is the kernel's "
        "own); installed: pipelined"
    )
    assert events == []  # not even RunStarted
    with pytest.raises(RunOptionError, match="schedule must be the name of a schedule"):
        RunOptions(schedule="")


async def test_without_plait_pipeline_a_pipelined_run_names_the_distribution() -> None:
    log: list[str] = []
    workflow = branches("bare", log, without_pipeline())
    assert (await workflow.run("m")).outputs == ["a2:ma0a1", "b2:mb0b1"]  # needs nothing
    log.clear()
    for options in ({}, {"checkpoint": "memory://bare-pipeline"}):
        with pytest.raises(UnknownNameError) as caught:
            await workflow.run("m", schedule="pipelined", **options)
        assert str(caught.value).endswith(f"installed: none — it comes with {PIPELINE_HINT}")
    # its run option is its own: without it, max_lead is unknown, naming where it comes from
    with pytest.raises(RunOptionError) as unknown:
        await workflow.run("m", schedule="pipelined", max_lead=0)
    assert str(unknown.value).startswith(
        "unknown run option(s): max_lead (it comes with plait-pipeline ("
    )
    assert log == []


async def test_max_lead_is_plait_pipelines_run_option() -> None:
    options = RunOptions.from_kwargs({"schedule": "pipelined"}, {"max_lead": 2}, PluginManager())
    assert options.of(plait_pipeline.PipelineOptions).max_lead == 2
    assert options.value("max_lead") == 2
    assert RunOptions.from_kwargs({}, {}, PluginManager()).of(
        plait_pipeline.PipelineOptions
    ) == plait_pipeline.PipelineOptions(max_lead=None)  # unbounded unless the run says
    assert "max_lead" not in {a.name for a in attrs.fields(RunOptions)}
    assert PluginManager().run_options()["max_lead"].distribution == "plait-pipeline"


async def test_a_schedule_a_plugin_registers_is_asked_for_by_name() -> None:
    asked: list[tuple[str, ...]] = []

    class Patient:
        """Never takes a superstep: the superstep loop runs them all."""

        def pays(self, runner: Any, inbox: dict[str, list[Any]]) -> bool:
            asked.append(tuple(inbox))
            return False

        def start(self, runner: Any, barrier: bool) -> Any:
            raise AssertionError("never started")

        def decode_cut(self, section: Any, decode: Any) -> Any:
            raise AssertionError("never resumed")

    class Plugin:
        @plait.hookimpl
        def plait_register_schedules(self, register: Any) -> None:
            register("patient", Patient())

    manager = PluginManager()
    manager.register(Plugin(), name="patient")
    log: list[str] = []
    workflow = branches("patient", log, manager)
    result = await workflow.run("m", schedule="patient")
    assert result.outputs == ["a2:ma0a1", "b2:mb0b1"]
    # asked at each superstep with several executors, never at one with one
    assert asked == [("a0", "b0"), ("a1", "b1"), ("a2", "b2")]


class Ask(Executor):
    """Asks for a number, then sends it on (the slow chain's first link)."""

    @handler
    async def ask(self, message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_info(f"a number for {message}?", int)

    @handler
    async def answered(self, number: int, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"asked:{number}")


def asking(manager: PluginManager | None = None) -> Workflow:
    """``start`` fans out to ``ask`` (asks for a number) and a 3-link chain."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    def link(i: int) -> Any:
        @executor(id=f"c{i}")
        async def run(message: str, ctx: WorkflowContext[str, str]) -> None:
            if i == 2:
                await ctx.yield_output(f"c2:{message}")
            else:
                await ctx.send_message(message + str(i))

        return run

    chain = [link(i) for i in range(3)]
    builder = WorkflowBuilder("asking").add_fan_out(start, [Ask("ask"), chain[0]])
    builder.add_edge(chain[0], chain[1]).add_edge(chain[1], chain[2])
    built = builder.set_start(start).build()
    if manager is None:
        return built
    return Workflow(built.spec, dict(built.executors), plugin_manager=manager)


async def test_a_pipelined_cut_resumes_only_with_plait_pipeline() -> None:
    store = MemoryCheckpointStore()
    workflow = asking()
    clean = await workflow.run("m", run_id="clean", checkpoint=store)
    request = clean.pending_requests[0].request_id
    answered = await workflow.resume("clean", store, responses={request: 7})
    run = await workflow.run("m", run_id="p", checkpoint=store, schedule="pipelined")
    cuts = [
        checkpoint
        for info in await store.list("p")
        if "pipeline" in (checkpoint := await store.load(info.checkpoint_id)).state
    ]
    assert cuts, "the pipelined run wrote cuts"
    cut = cuts[0]
    bare = asking(without_pipeline())
    with pytest.raises(UnknownNameError) as caught:
        await bare.resume(cut.checkpoint_id, store)
    assert str(caught.value) == (
        f"unknown schedule 'pipelined' (for resuming run 'p', checkpoint "
        f"{cut.checkpoint_id!r}, a cut of that schedule); installed: none — it comes with "
        + PIPELINE_HINT
    )
    # what reads a stored run without resuming it needs no schedule
    asked = next(checkpoint for checkpoint in cuts if checkpoint.state["requests"])
    waiting = [r.request_id for r in run.pending_requests]
    stored = await bare.pending_requests(asked.checkpoint_id, store)
    assert [r.request_id for r in stored] == waiting
    # with the plugin, every cut resumes to the clean run's outputs, in either schedule
    for schedule in ("pipelined", "superstep"):
        for checkpoint in cuts:
            done = await workflow.resume(checkpoint.checkpoint_id, store, schedule=schedule)
            pending = [r.request_id for r in done.pending_requests]
            if pending:
                done = await workflow.resume("p", store, responses={pending[0]: 7})
            assert sorted(done.outputs) == sorted(answered.outputs)


def test_the_schedule_uses_the_runner_only_through_runner_view() -> None:
    """Every attribute the pipeline reads of the runner is one ``RunnerView`` declares,
    and it assigns none; ``plait.spi`` exports the view, not the runner."""
    import ast
    import inspect
    from pathlib import Path

    import plait.spi
    from plait.spi import RunnerView

    declared = set(RunnerView.__annotations__) | {
        name for name, _ in inspect.getmembers(RunnerView, inspect.isfunction)
    }
    source = Path(plait_pipeline.__file__).with_name("_pipeline.py").read_text("utf-8")
    read: set[str] = set()
    assigned: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "runner":  # self.runner.x
                base = ast.Name("runner")
            if isinstance(base, ast.Name) and base.id == "runner":
                (assigned if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    assert read >= {"graph", "options", "state", "run_invocation", "begin_superstep"}
    assert read - declared == set()
    assert assigned == set()
    assert "RunnerView" in plait.spi.__all__ and "Runner" not in plait.spi.__all__


async def test_a_resumed_cut_runs_with_the_runs_lead_or_the_barriers_in_another_schedule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lead a pipelined stretch runs with: the run's ``max_lead`` (plait-pipeline's own
    option), or 0 when a cut it took is resumed by a run asking for the superstep schedule."""
    from plait_pipeline import _pipeline

    leads: list[int | None] = []
    made = _pipeline.Pipeline.__init__

    def spy(self: Any, runner: Any, max_lead: int | None) -> None:
        leads.append(max_lead)
        made(self, runner, max_lead)

    monkeypatch.setattr(_pipeline.Pipeline, "__init__", spy)
    store = MemoryCheckpointStore()
    workflow = asking()
    await workflow.run("m", run_id="p", checkpoint=store, schedule="pipelined", max_lead=2)
    assert leads and set(leads) == {2}
    cuts = [
        checkpoint
        for info in await store.list("p")
        if "pipeline" in (checkpoint := await store.load(info.checkpoint_id)).state
    ]
    cut = cuts[0]
    for options, lead in (
        ({"schedule": "superstep", "max_lead": 3}, 0),  # another schedule: the barrier's
        ({"schedule": "pipelined", "max_lead": 3}, 3),
        ({"schedule": "pipelined"}, None),
    ):
        leads.clear()
        await workflow.resume(cut.checkpoint_id, store, **options)
        assert leads[0] == lead, options
