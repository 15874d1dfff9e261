"""plait-durable behind the kernel's seam: it registers the durability ``Workflow`` calls,
checkpoints through the runner's commit seam, and without it every durable call fails
before anything runs, naming the distribution to install."""

from __future__ import annotations

from typing import Any, Literal

import plait
import plait_catalog
import plait_durable
import pytest
from plait import (
    Executor,
    Never,
    RunStatus,
    UnknownNameError,
    WorkflowContext,
    executor,
    handler,
)
from plait.spi import Durability, PluginManager, RunCommit, RunnerView, make_runner
from plait_builders import WorkflowBuilder
from plait_durable import Checkpoints, list_runs, open_store
from plait_durable._durable import Checkpointer
from plait_testing import fake_entry_point, make_plugin_manager

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Approval(Executor):
    @handler
    async def ask(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["topic"] = topic
        await ctx.request_info(f"publish {topic!r}?", bool)

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['topic']}: {'yes' if approved else 'no'}")


def _workflow(manager: PluginManager | None = None) -> plait.Workflow:
    @executor(id="start")
    async def start(topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(topic.upper())

    @executor(id="end")
    async def end(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text + "!")

    built = WorkflowBuilder("durable-seam").add_edge(start, end).set_start(start).build()
    if manager is None:
        return built
    return plait.Workflow(built.spec, dict(built.executors), plugin_manager=manager)


def test_plait_durable_gives_the_durability() -> None:
    manager = PluginManager()
    durability = manager.durability("a test")
    assert durability is manager.durability("another test")  # kept until plugins change
    assert durability.origin[2].distribution == "plait-durable"
    # given lazily: the protocol's methods answer without importing anything first
    assert isinstance(durability.resolve(), Checkpoints)
    assert isinstance(durability.resolve(), Durability)


def test_the_checkpointer_is_the_runners_commit_seam() -> None:
    for method in ("after_superstep", "after_cut", "before_retry"):
        assert callable(getattr(Checkpointer, method))
        assert hasattr(RunCommit, method)


async def test_a_durable_run_resumes_through_the_seam() -> None:
    approval = Approval("approval")
    workflow = WorkflowBuilder("ask").add_executor(approval).set_start("approval").build()
    store = "memory://durable-seam-resume"
    first = await workflow.run("tides", checkpoint=store)
    assert first.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    waiting = await workflow.pending_requests(first.run_id, store)
    assert [r.request for r in waiting] == ["publish 'tides'?"]
    done = await workflow.resume(first.run_id, store, responses={waiting[0].request_id: True})
    assert done.outputs == ["tides: yes"]
    checkpoint_store = open_store(store)
    try:
        page = await list_runs(checkpoint_store, workflow="ask")
    finally:
        await checkpoint_store.aclose()
    assert [summary.run_id for summary in page.runs] == [first.run_id]
    assert page.runs[0].status == "idle"


async def test_the_runner_calls_the_commit_seam_at_each_barrier() -> None:
    workflow = _workflow()
    seen: list[tuple[int, list[str]]] = []

    class Recording:
        async def after_superstep(self, runner: RunnerView, inbox: Any) -> None:
            seen.append((runner.state.superstep, sorted(inbox)))

        async def after_cut(self, pipeline: Any, status: str) -> bool:
            return False

        async def before_retry(self, key: str, attempt: int) -> None:
            raise AssertionError("nothing is retried")

    class Recorder(Checkpoints):
        async def run(
            self, graph: Any, state: Any, inbox: Any, opts: Any, *, live: bool, parent_id: Any
        ) -> RunStatus:
            return await make_runner(graph, opts, state, live=live, commit=Recording()).run(inbox)

    class Plugin:
        @plait.hookimpl(tryfirst=True)  # answers before plait-durable
        def plait_durability(self) -> Any:
            return Recorder()

    manager = PluginManager()
    manager.register(Plugin(), name="recorder")
    mine = plait.Workflow(workflow.spec, dict(workflow.executors), plugin_manager=manager)
    result = await mine.run("ebb", checkpoint="memory://durable-seam-commit")
    assert result.outputs == ["EBB!"]
    assert seen == [(1, ["end"]), (2, [])]


async def test_without_plait_durable_every_durable_call_names_the_distribution() -> None:
    # plait-catalog says which distribution provides a name that is not installed
    bare = make_plugin_manager(
        fake_entry_point("routing", _routing()),
        fake_entry_point("catalog", plait_catalog, distribution="plait-catalog"),
    )
    workflow = _workflow(bare)
    assert (await workflow.run("calm")).outputs == ["CALM!"]  # a plain run needs nothing
    # ``checkpoint`` is plait-durable's run option: without it, the option is unknown
    for call in (
        lambda: workflow.run("calm", checkpoint="memory://bare"),
        lambda: workflow.stream("calm", checkpoint="memory://bare"),  # before anything runs
    ):
        with pytest.raises(plait.RunOptionError) as refused:
            await call()  # type: ignore[misc]
        assert "unknown run option(s): checkpoint (it comes with plait-durable" in str(
            refused.value
        )
        assert "pip install ./plugins/plait-durable" in str(refused.value)
    calls = {
        "Workflow.resume()": workflow.resume("run-1", "memory://bare"),
        "Workflow.pending_requests()": workflow.pending_requests("run-1", "memory://bare"),
    }
    for what, call in calls.items():
        with pytest.raises(UnknownNameError) as caught:
            await call
        assert f"(for {what})" in str(caught.value)
        assert "pip install ./plugins/plait-durable" in str(caught.value)
    with pytest.raises(UnknownNameError, match="it comes with plait-durable"):
        workflow.fingerprint  # noqa: B018


def _routing() -> Any:
    import plait_routing

    return plait_routing


def test_the_public_names_are_listed_and_load() -> None:
    for name in plait_durable.__all__:
        assert getattr(plait_durable, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        plait_durable.nothing  # noqa: B018


def test_the_names_type_checkers_see_are_the_names_imported_at_run_time() -> None:
    from plait_testing.exports import check_exports

    check_exports(
        plait_durable,
        run_time_only={
            "plait_durability",
            "plait_register_run_options",
            "plait_register_type_hooks",
        },
    )


def test_the_checkpoint_module_names_its_listing_record_as_type_checkers_see_it() -> None:
    """``plait_durable.checkpoint.CheckpointInfo`` is imported on first use (a run that only
    saves checkpoints never lists them); every other name is the module's own."""
    import plait_durable.checkpoint
    from plait_testing.exports import check_exports

    own = {
        "FORMAT_VERSION",
        "BlobStore",
        "Checkpoint",
        "CheckpointStore",
        "CheckpointStoreFactory",
        "Lease",
        "LeaseHolder",
        "RunInfo",
        "open_store",
    }
    check_exports(plait_durable.checkpoint, run_time_only=own)
    assert plait_durable.checkpoint.CheckpointInfo is plait_durable.CheckpointInfo


class Chooser(Executor):
    """Asks for a ``Literal`` (a response type that is not a plain class: stored without a
    type tag, only by name)."""

    @handler
    async def ask(self, number: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info({"choose for": number}, Literal["yes", "no"])

    @handler
    async def answer(self, choice: Literal["yes", "no"], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"chose {choice}")


async def test_a_literal_response_type_comes_back_from_the_store() -> None:
    """Issue 34 (N9): a stored request's ``Literal`` response type came back as ``Any``, so
    any answer was taken (and ``plait ui`` drew a free JSON box for it)."""
    workflow = WorkflowBuilder("chooser").add_executor(Chooser("chooser")).set_start("chooser")
    built = workflow.build()
    url = "memory://literal-response"
    first = await built.run(7, checkpoint=url)
    (pending,) = await built.pending_requests(first.run_id, url)
    assert pending.response_type == Literal["yes", "no"]
    with pytest.raises(plait_durable.ResponseTypeError, match="must be Literal"):
        await built.resume(first.run_id, url, responses={pending.request_id: "maybe"})
    done = await built.resume(first.run_id, url, responses={pending.request_id: "no"})
    assert done.outputs == ["chose no"]


def _adder(name: str) -> plait.Executor:
    @plait.executor(id=name)
    async def add(value: int, ctx: plait.WorkflowContext[int]) -> None:
        await ctx.send_message(value + 1)

    return add


def test_a_refused_resume_names_the_changes_as_the_kernels_spec_diff_does() -> None:
    from plait_durable._resume import _stored_spec

    old = WorkflowBuilder("w").add_edge(_adder("a"), _adder("b")).set_start("a").build().spec
    b = _adder("b")
    new = (
        WorkflowBuilder("w")
        .add_edge(_adder("a"), b)
        .add_edge(b, _adder("c"))
        .set_start("a")
        .build()
        .spec
    )
    stored = _stored_spec(old.topology())  # what a checkpoint's metadata keeps, as data
    assert stored.diff(new) == old.diff(new) == ["executors added: c", "edges added: direct:b->c"]
    assert stored.diff(old) == []
    with pytest.raises((KeyError, TypeError, ValueError)):
        _stored_spec({"start": "a", "nodes": [["a"]], "edge_groups": []})  # damaged
