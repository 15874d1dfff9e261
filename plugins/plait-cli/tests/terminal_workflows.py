"""Workflows the terminal tests run by path (not a test module)."""

from __future__ import annotations

import os

import anyio
from plait import Executor, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder

#: How long each step of ``slow`` takes (seconds).
STEP_SECONDS = float(os.environ.get("PLAIT_TEST_STEP_SECONDS", "0.4"))


def _step(i: int, last: int) -> Executor:
    @executor(id=f"s{i}")
    async def step(n: int, ctx: WorkflowContext[int, int]) -> None:
        await anyio.sleep(STEP_SECONDS)
        if i == last:
            await ctx.yield_output(n + 1)
        else:
            await ctx.send_message(n + 1)

    return step


def make_slow(n: int = 5) -> Workflow:
    """s0 -> s1 -> … -> s(n-1), each sleeping STEP_SECONDS and adding 1."""
    steps = [_step(i, n - 1) for i in range(n)]
    builder = WorkflowBuilder("slow").add_executor(steps[0])
    for a, b in zip(steps, steps[1:]):
        builder.add_edge(a, b)
    return builder.set_start(steps[0]).build()


slow = make_slow()
