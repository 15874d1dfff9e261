"""Workflows the terminal tests run by path (not a test module)."""

from __future__ import annotations

import os

import anyio
from plait import Executor, Never, RetryPolicy, Workflow, WorkflowContext, executor
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


_failures = {"left": 0}


@executor(id="flaky", retry=RetryPolicy(max_attempts=3, backoff="fixed", delay=0.6))
async def flaky(n: int, ctx: WorkflowContext[Never, int]) -> None:
    """Fails the first two times it runs in a process, then yields ``n``."""
    if _failures["left"] < 2:
        _failures["left"] += 1
        raise ConnectionError("the model endpoint hung up")
    await ctx.yield_output(n)


retrying = WorkflowBuilder("retrying").add_executor(flaky).set_start(flaky).build()


@executor(id="split")
async def split(n: int, ctx: WorkflowContext[int]) -> None:
    """Send 0 … n-1, one message each."""
    for i in range(n):
        await ctx.send_message(i)


@executor(id="each", max_concurrency=8)
async def each(i: int, ctx: WorkflowContext[Never, int]) -> None:
    """Take STEP_SECONDS over each message."""
    await anyio.sleep(STEP_SECONDS)
    await ctx.yield_output(i)


spread = WorkflowBuilder("spread").add_edge(split, each).set_start(split).build()
