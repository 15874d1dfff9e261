"""How a placement is chosen, what is refused before a run starts, and policies on placed
executors (retries matching a remote exception's class, timeouts)."""

from __future__ import annotations

from typing import Any

import plait_catalog
import plait_ray_flows as flows
import pytest
from plait import (
    Executor,
    ExecutorFailedError,
    ExecutorTimeoutError,
    Never,
    NotPortableError,
    RetryPolicy,
    RunStatus,
    UnknownNameError,
    WorkflowContext,
    WorkflowSpec,
    executor,
    handler,
)
from plait.spi import compiled_graph, with_placement
from plait_builders import WorkflowBuilder
from plait_durable import DecodeError
from plait_ray.errors import RemoteInvocationError

pytestmark = pytest.mark.anyio

#: the built-in placement: anyio tasks on the driver
LOCAL = "local"


def test_a_graph_that_places_nothing_keeps_its_executors() -> None:
    for workflow in (flows.chain(None), with_placement(flows.chain(None), LOCAL)):
        graph = compiled_graph(workflow)
        assert graph.placements == {}
        assert graph.run_executors is graph.executors  # runs call them directly


def test_the_spec_carries_placements() -> None:
    wf = WorkflowBuilder("carried", placement="ray").add_executor(flows.upper, placement=LOCAL)
    spec = wf.set_start(flows.upper).build().spec
    again = WorkflowSpec.from_json(spec.to_json())
    assert (again.placement, again.node("upper").placement) == ("ray", LOCAL)
    # placement is not topology: a run started on Ray resumes on one machine
    plain = WorkflowBuilder("carried").set_start(flows.upper).build().spec
    assert spec.signature() == plain.signature()


def test_node_then_workflow_then_local(loopback: Any) -> None:
    wf = (
        WorkflowBuilder("mixed", placement="loopback")
        .add_executor(flows.upper, placement=LOCAL)
        .add_edge(flows.upper, flows.exclaim)
        .add_edge(flows.exclaim, flows.report)
        .set_start(flows.upper)
        .build()
    )
    graph = compiled_graph(wf)
    assert [wf.placement_of(eid) for eid in ("upper", "exclaim", "report")] == [
        LOCAL,
        "loopback",
        "loopback",
    ]
    # resolved when the workflow compiled: the graph carries them
    assert sorted(graph.placements) == ["exclaim", "report"]
    assert graph.placements["exclaim"] is loopback
    placed = graph.run_executors
    assert placed["upper"] is graph.executors["upper"]
    assert placed["exclaim"] is not graph.executors["exclaim"]  # it stands behind its placement
    assert placed["exclaim"].find_handler("x") is not None  # lookup stays on the driver
    # every node follows with_placement
    assert with_placement(wf, "loopback").placement_of("upper") == "loopback"


class Socketed(Executor):
    local = True  # it would hold something only the driver has

    @handler
    async def keep(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)


async def test_a_local_executor_stays_on_the_driver(loopback: Any) -> None:
    wf = WorkflowBuilder("sock", placement="loopback").set_start(Socketed("sock")).build()
    assert wf.placement_of("sock") == LOCAL
    assert (await wf.run("x")).outputs == ["x"]
    assert loopback.calls == 0


def test_an_unknown_placement_names_its_distribution(plait_plugin_manager: Any) -> None:
    plait_plugin_manager.register(plait_catalog, "catalog")  # says where a name comes from
    builder = WorkflowBuilder("alone", placement="ray").set_start(flows.upper)
    with pytest.raises(UnknownNameError) as info:
        builder.build()  # placements are resolved when the workflow compiles
    message = str(info.value)
    assert "unknown placement 'ray' (for executor 'upper')" in message
    assert "bash .ci/uv sync --locked --extra ray" in message


async def test_an_executor_that_cannot_leave_the_process_is_refused(loopback: Any) -> None:
    @executor(id="closure")
    async def closure(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)

    builder = WorkflowBuilder("closure", placement="loopback").set_start(closure)
    with pytest.raises(NotPortableError, match="executor 'closure' cannot run with placement"):
        builder.build()
    assert loopback.calls == 0


async def test_a_built_in_exception_is_retried_by_its_class(placement: str) -> None:
    retry = RetryPolicy(max_attempts=1, delay=0.0, on=[ValueError])
    wf = flows.one(flows.Flaky("flaky"), placement, retry=retry)
    result = await wf.run(4)
    assert result.outputs == [40]


async def test_any_other_exception_comes_back_named(placement: str) -> None:
    result = await flows.one(flows.Odd("odd"), placement).run(3, raise_on_failure=False)
    assert isinstance(result.error, ExecutorFailedError)
    cause = result.error.__cause__
    assert isinstance(cause, RemoteInvocationError)
    assert cause.remote_type == "plait_ray_flows.Custom"
    assert "odd 3" in str(result.error)
    assert "raise Custom" in cause.remote_traceback


async def test_a_timeout_cuts_a_placed_invocation_short(placement: str) -> None:
    await flows.chain(placement).run("warm")  # the actor pool is up
    wf = flows.one(flows.Sleepy("sleepy"), placement, timeout=0.5)
    result = await wf.run(30.0, raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert isinstance(result.error, ExecutorTimeoutError)
    assert (await wf.run(0.0)).outputs == [0.0]  # the actor is free again


async def test_the_type_allowlist_applies_to_what_comes_back(placement: str) -> None:
    # locally the object is handed over as it is
    local = await flows.one(flows.Leaky("leaky"), None).run("x")
    assert local.outputs == [flows.Secret("x")]
    # placed, it is data from another process: only declared types are rebuilt
    result = await flows.one(flows.Leaky("leaky"), placement).run("x", raise_on_failure=False)
    assert isinstance(result.error, ExecutorFailedError)
    assert isinstance(result.error.__cause__, DecodeError)
    assert "plait_ray_flows:Secret" in str(result.error)
    assert result.outputs == []


async def test_concurrent_messages_of_one_executor_overlap_in_its_actor(placement: str) -> None:
    local = await flows.overlapping(None).run(4)
    placed = await flows.overlapping(placement).run(4)
    assert max(local.outputs) == max(placed.outputs) == 4
