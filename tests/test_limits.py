"""Per-executor limits — concurrency, visits, timeout, retries — resolved in one place with
one precedence: run option, then node, then workflow (``plait.graph.resolve_limits``)."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest
from plait import (
    Executor,
    ExecutorTimeoutError,
    Never,
    RetryPolicy,
    RunOptionError,
    VisitLimitError,
    Workflow,
    WorkflowContext,
    executor,
)
from plait._graph import resolve_limits
from plait.spi import RunOptions
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio


def pool(width: int, *, on_node: bool = True, **b_limits: Any) -> tuple[Workflow, dict[str, int]]:
    """``a`` sends ``width`` messages to ``b``, which sleeps a little in each and loops
    back to itself once per message; the counter records the peak of ``b``'s concurrent
    handlers. ``b_limits`` are set on ``b``'s node spec (what plait-steps does), or on the
    executor object with ``on_node=False``."""
    running = {"now": 0, "peak": 0}

    @executor(id="a")
    async def a(n: int, ctx: WorkflowContext[int]) -> None:
        for i in range(width):
            await ctx.send_message(i)

    @executor(id="b", **({} if on_node else b_limits))
    async def b(n: int, ctx: WorkflowContext[int, int]) -> None:
        running["now"] += 1
        running["peak"] = max(running["peak"], running["now"])
        await anyio.sleep(0.005)
        running["now"] -= 1
        if n < 100:
            await ctx.send_message(n + 100)  # one more visit
        else:
            await ctx.yield_output(n)

    wf = WorkflowBuilder("pool").add_edge(a, b).add_edge(b, b).set_start(a).build()
    if on_node:
        spec = wf.spec
        nodes = tuple(
            attrs.evolve(node, **b_limits) if node.id == "b" else node for node in spec.nodes
        )
        wf = Workflow(attrs.evolve(spec, nodes=nodes), wf.executors)
    return wf, running


@pytest.mark.parametrize("on_node", [True, False], ids=["node-spec", "executor"])
async def test_a_nodes_own_limits_survive_a_run_option_for_another_executor(
    on_node: bool,
) -> None:
    # the bug: executor_concurrency={"a": 2} used to drop b's own 8 and 3
    wf, running = pool(12, on_node=on_node, max_concurrency=8, max_visits=3)
    result = await wf.run(0, executor_concurrency={"a": 2})
    assert sorted(result.outputs) == [100 + i for i in range(12)]
    assert running["peak"] == 8
    limits = resolve_limits(wf._graph, RunOptions(executor_concurrency={"a": 2}))
    assert limits.concurrency == {"a": 2, "b": 8}
    assert limits.visits == {"b": 3}


async def test_a_nodes_own_visit_limit_survives_a_run_option_for_another_executor() -> None:
    wf, _ = pool(2, max_visits=1)
    with pytest.raises(VisitLimitError) as caught:
        await wf.run(0, executor_max_visits={"a": 5})
    assert caught.value.executor_id == "b"
    assert "max_visits=1" in str(caught.value)


async def test_the_run_option_for_an_executor_beats_the_nodes_own() -> None:
    wf, running = pool(12, max_concurrency=8, max_visits=1)
    result = await wf.run(0, executor_concurrency={"b": 3}, executor_max_visits={"b": 2})
    assert len(result.outputs) == 12
    assert running["peak"] == 3


async def test_the_node_beats_the_workflow_wide_default() -> None:
    wf, _ = pool(2, max_visits=2)
    # max_visits=1 is the run-wide default: b's own 2 wins, a (no limit of its own) gets 1
    result = await wf.run(0, max_visits=1)
    assert sorted(result.outputs) == [100, 101]
    limits = resolve_limits(wf._graph, RunOptions(max_visits=1))
    assert limits.visits == {"a": 1, "b": 2}


async def test_the_workflow_default_applies_to_nodes_without_a_limit() -> None:
    wf, _ = pool(2)
    with pytest.raises(VisitLimitError) as caught:
        await wf.run(0, max_visits=1)
    assert caught.value.executor_id == "b"


async def test_timeouts_and_retries_follow_the_same_precedence() -> None:
    @executor(id="slow")
    async def slow(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await anyio.sleep(0.2)
        await ctx.yield_output(n)

    @executor(id="quick", timeout=1.0, retry=RetryPolicy(max_attempts=5, delay=0))
    async def quick(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)

    builder = WorkflowBuilder("timeouts", timeout=0.01, retry=RetryPolicy(max_attempts=0))
    wf = builder.add_edge(quick, slow).set_start(quick).build()
    limits = resolve_limits(wf._graph)
    assert limits.policies["quick"] == (RetryPolicy(max_attempts=5, delay=0), 1.0)
    assert limits.policies["slow"] == (RetryPolicy(max_attempts=0), 0.01)
    with pytest.raises(ExecutorTimeoutError) as caught:
        await wf.run(1)
    assert caught.value.executor_id == "slow"


async def test_an_unknown_executor_in_a_run_option_is_named() -> None:
    wf, _ = pool(1)
    with pytest.raises(RunOptionError, match="'nope'"):
        await wf.run(0, executor_concurrency={"nope": 2})


def test_limits_are_resolved_once_per_graph() -> None:
    @executor(id="only", max_concurrency=4)
    async def only(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)

    wf: Workflow = WorkflowBuilder().add_executor(only).set_start(only).build()
    assert wf._graph.limits.concurrency == {"only": 4}
    assert isinstance(only, Executor)
