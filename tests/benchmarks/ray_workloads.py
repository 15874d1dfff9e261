"""Workflows for bench_ray.py (a module of their own: Ray workers import them by name)."""

from __future__ import annotations

from typing import Any

from plait import Executor, Never, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder


def burn(rounds: int) -> int:
    """Pure-Python CPU work: ``rounds`` iterations of integer arithmetic."""
    total = 0
    for i in range(rounds):
        total = (total + i * i) % 1_000_003
    return total


@executor(id="split")
async def split(rounds: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(rounds)


class Burn(Executor):
    """About 50 ms of pure-Python work (``rounds`` is calibrated by the benchmark)."""

    @handler
    async def work(self, rounds: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(burn(rounds))


class Echo(Executor):
    """A trivial executor: yields what it gets."""

    @handler
    async def echo(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)


@executor(id="hop")
async def hop(n: int, ctx: WorkflowContext[int, int]) -> None:
    if n <= 1:
        await ctx.yield_output(n)
    else:
        await ctx.send_message(n - 1)


def fan(width: int, cls: type[Executor], placement: str | None) -> Workflow:
    """``split`` (local) fans out to ``width`` executors of ``cls`` with ``placement``."""
    branches = [cls(f"b{i}") for i in range(width)]
    builder = WorkflowBuilder(f"fan{width}", type_check=False)
    for branch in branches:
        builder.add_executor(branch, placement=placement)
    return builder.add_fan_out(split, branches).set_start(split).build()


def hops(placement: str | None, n: int) -> Workflow:
    """One trivial invocation per superstep, ``n`` supersteps."""
    return (
        WorkflowBuilder("hops", placement=placement, max_supersteps=n + 5)
        .add_edge(hop, hop)
        .set_start(hop)
        .build()
    )


def outputs_sum(result: Any) -> int:
    return sum(result.outputs)
