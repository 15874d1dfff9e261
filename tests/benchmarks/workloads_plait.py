"""Plait's side of the benchmark workloads.

Each factory takes a size ``n``, does all set-up (building the workflow) outside the timed
region, and returns a zero-argument callable that performs one complete run and returns
the result value. One event loop per factory is reused across calls (``anyio`` on asyncio,
via a private loop), so the timing is the run, not loop start-up.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import plait
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder

NAME = "plait"
VERSION = plait.__version__
#: run options every timed run gets (``run.py --schedule pipelined`` sets ``schedule``)
RUN_OPTIONS: dict[str, Any] = {}


def _runner(coro_fn: Callable[[], Any]) -> Callable[[], Any]:
    loop = asyncio.new_event_loop()

    def call() -> Any:
        return loop.run_until_complete(coro_fn())

    return call


def _adder(i: int, last: bool) -> plait.Executor:
    if last:

        @executor(id=f"n{i}")
        async def final(x: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(x + 1)

        return final

    @executor(id=f"n{i}")
    async def add(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)

    return add


def chain_workflow(n: int, **defaults: Any) -> plait.Workflow:
    """n executors in a chain, each adding 1."""
    nodes = [_adder(i, i == n - 1) for i in range(n)]
    builder = WorkflowBuilder("chain", max_supersteps=n + 1, **defaults)
    builder.add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


def chain(n: int) -> Callable[[], Any]:
    wf = chain_workflow(n)

    async def once() -> Any:
        return (await wf.run(0, **RUN_OPTIONS)).outputs[0]

    return _runner(once)


def _fanout_workflow(n: int, sleep: float = 0.0) -> plait.Workflow:
    @executor(id="source")
    async def source(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x)

    def worker(i: int) -> plait.Executor:
        @executor(id=f"w{i}")
        async def work(x: int, ctx: WorkflowContext[int]) -> None:
            if sleep:
                await anyio.sleep(sleep)
            await ctx.send_message(x)

        return work

    @executor(id="sum")
    async def total(xs: list[int], ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(sum(xs))

    workers = [worker(i) for i in range(n)]
    return (
        WorkflowBuilder("fanout")
        .add_fan_out(source, workers)
        .add_fan_in(workers, total)
        .set_start(source)
        .build()
    )


def fanout(n: int) -> Callable[[], Any]:
    wf = _fanout_workflow(n)

    async def once() -> Any:
        return (await wf.run(1, **RUN_OPTIONS)).outputs[0]

    return _runner(once)


def fanout_async(n: int) -> Callable[[], Any]:
    wf = _fanout_workflow(n, sleep=0.01)

    async def once() -> Any:
        return (await wf.run(1, **RUN_OPTIONS)).outputs[0]

    return _runner(once)


def loop(n: int) -> Callable[[], Any]:
    @executor(id="count")
    async def count(x: int, ctx: WorkflowContext[int, int]) -> None:
        if x + 1 >= n:
            await ctx.yield_output(x + 1)
        else:
            await ctx.send_message(x + 1)

    wf = (
        WorkflowBuilder("loop", max_supersteps=n + 1)
        .add_edge(count, count, condition=lambda x: True)
        .set_start(count)
        .build()
    )

    async def once() -> Any:
        return (await wf.run(0, **RUN_OPTIONS)).outputs[0]

    return _runner(once)


def wide_loop(n: int, width: int = 100) -> Callable[[], Any]:
    """``width`` executors, each cycling on itself ``n`` supersteps (n*width hops)."""

    def looper(i: int) -> plait.Executor:
        @executor(id=f"l{i}")
        async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
            if x + 1 >= n:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return step

    @executor(id="start")
    async def start(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x)

    loopers = [looper(i) for i in range(width)]
    builder = WorkflowBuilder("wide_loop", max_supersteps=n + 2).add_fan_out(start, loopers)
    for node in loopers:
        builder.add_edge(node, node)
    wf = builder.set_start(start).build()

    async def once() -> Any:
        return sum((await wf.run(0, **RUN_OPTIONS)).outputs) // width

    return _runner(once)


def build(n: int) -> Callable[[], Any]:
    nodes = [_adder(i, i == n - 1) for i in range(n)]

    def once() -> Any:
        builder = WorkflowBuilder("chain", max_supersteps=n + 1)
        builder.add_executor(nodes[0])
        for a, b in zip(nodes, nodes[1:]):
            builder.add_edge(a, b)
        return len(builder.set_start(nodes[0]).build().spec.nodes)

    return once


def _ckpt_chain(n: int, url: str, durability: str = "sync") -> Callable[[], Any]:
    wf = chain_workflow(n)

    async def once() -> Any:
        return (await wf.run(0, checkpoint=url, durability=durability, **RUN_OPTIONS)).outputs[0]

    return _runner(once)


def chain_ckpt_memory(n: int, durability: str = "sync") -> Callable[[], Any]:
    return _ckpt_chain(n, "memory://bench", durability)


def chain_ckpt_sqlite(n: int, durability: str = "sync") -> Callable[[], Any]:
    """SQLite in WAL mode with ``synchronous=FULL``: every checkpoint fsynced."""
    path = Path(tempfile.mkdtemp(prefix="plait-bench-")) / "runs.db"
    return _ckpt_chain(n, f"sqlite:///{path}", durability)


#: name -> (factory, default size)
WORKLOADS: dict[str, Callable[[int], Callable[[], Any]]] = {
    "chain1000": chain,
    "fanout1000": fanout,
    "loop10000": loop,
    "wide_loop": wide_loop,
    "build1000": build,
    "fanout_async": fanout_async,
    "chain100_ckpt_memory": chain_ckpt_memory,
    "chain100_ckpt_sqlite": chain_ckpt_sqlite,
}

#: Other durability modes, as ``compare.py --alternatives`` runs them (``NAME[variant]``);
#: compare ``[durability_async]`` with LangGraph's ``[durability_async]``.
ALTERNATIVES: dict[str, dict[str, Callable[[int], Callable[[], Any]]]] = {
    "chain100_ckpt_memory": {"durability_async": lambda n: chain_ckpt_memory(n, "async")},
    "chain100_ckpt_sqlite": {"durability_async": lambda n: chain_ckpt_sqlite(n, "async")},
}
