"""Workflows the durable-run tests share (imported as a plain module, like ``venvtools``)."""

from __future__ import annotations

from typing import Any

from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder


def counting_chain(
    n: int, *, fail_at: int | None = None, flaky: dict[str, int] | None = None
) -> Workflow:
    """n executors in a chain; each keeps a per-run counter in ctx.state and adds 1.

    With ``fail_at`` and ``flaky={"left": k}``, executor ``n<fail_at>`` raises
    ``RuntimeError("transient")`` the first ``k`` times it runs.
    """

    def node(i: int) -> Any:
        @executor(id=f"n{i}")
        async def add(x: int, ctx: WorkflowContext[int, int]) -> None:
            ctx.state["seen"] = ctx.state.get("seen", 0) + 1
            if flaky is not None and i == fail_at and flaky["left"] > 0:
                flaky["left"] -= 1
                raise RuntimeError("transient")
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return add

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder("chain", max_supersteps=n + 5).add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()
