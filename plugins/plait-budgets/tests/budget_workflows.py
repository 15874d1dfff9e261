"""Workflows the command-line tests name as TARGET (``budget_workflows.py:chain4``)."""

from __future__ import annotations

from typing import Any

import plait
from plait import Never, WorkflowContext, executor
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder
from plait_llm import AgentKind


def chain4() -> plait.Workflow:
    """Four agents (``a`` … ``d``) on the test model, then a collector."""
    kind = AgentKind()
    nodes = [
        kind.create(
            {"model": "budget-test", "options": {"max_tokens": 10}}, BuildContext(node_id=i)
        )
        for i in "abcd"
    ]

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    builder = WorkflowBuilder("chain4").set_start(nodes[0])
    for a, b in zip(nodes, [*nodes[1:], collect]):
        builder.add_edge(a, b)
    return builder.build()


def slow_pair() -> plait.Workflow:
    """Agent ``a``, a pause of 0.8 s (``pause``: what a live display sees the spend in),
    agent ``b``, then a collector."""
    import anyio

    kind = AgentKind()
    first, second = (
        kind.create(
            {"model": "budget-test", "options": {"max_tokens": 10}}, BuildContext(node_id=i)
        )
        for i in "ab"
    )

    @executor(id="pause")
    async def pause(value: Any, ctx: WorkflowContext[Any]) -> None:
        await anyio.sleep(0.8)
        await ctx.send_message(value)

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    builder = WorkflowBuilder("slow_pair").set_start(first)
    builder.add_edge(first, pause).add_edge(pause, second).add_edge(second, collect)
    return builder.build()
