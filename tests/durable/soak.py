"""Many concurrent durable runs of a 50-superstep workflow with fan-outs, on one store.

    python soak.py STORE_URL RUNS REPETITIONS [BLOCKS]

The runs share one store object (one connection, or one pool). Prints one JSON line per
repetition: runs, supersteps per run, wrong outputs, seconds and
the process's resident memory (``/proc/self/statm``, after a garbage collection) once
the repetition ended. The graph: ``BLOCKS`` (default 17) blocks of ``head`` -> fan-out to ``left``
and ``right`` -> fan-in ``join`` (three supersteps each), so a run of ``n`` outputs
``expected(n)`` after ``3 * BLOCKS`` supersteps (51 by default). Durability ``async``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import uuid
from typing import Any

import anyio
from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import open_store

BLOCKS = 17  # 51 supersteps


def expected(n: int, blocks: int) -> int:
    for _ in range(blocks):
        n = (n + 1) * 2 + 1  # head +1; left keeps it, right adds 1; join sums
    return n


def build(blocks: int) -> Workflow:
    def block(i: int) -> tuple[Any, Any, Any, Any]:
        @executor(id=f"head{i}")
        async def head(n: int, ctx: WorkflowContext[int]) -> None:
            ctx.state["seen"] = ctx.state.get("seen", 0) + 1
            await ctx.send_message(n + 1)

        @executor(id=f"left{i}")
        async def left(n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n)

        @executor(id=f"right{i}")
        async def right(n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n + 1)

        last = i == blocks - 1

        @executor(id=f"join{i}")
        async def join(parts: list[int], ctx: WorkflowContext[int, int]) -> None:
            if last:
                await ctx.yield_output(sum(parts))
            else:
                await ctx.send_message(sum(parts))

        return head, left, right, join

    builder = WorkflowBuilder("soak", max_supersteps=3 * blocks + 5)
    previous = None
    for i in range(blocks):
        head, left, right, join = block(i)
        if previous is not None:
            builder.add_edge(previous, head)
        builder.add_fan_out(head, [left, right]).add_fan_in([left, right], join)
        previous = join
    return builder.set_start("head0").build()


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def repetition(wf: Workflow, url: str, runs: int, blocks: int) -> dict[str, object]:
    store = open_store(url)  # one store (one connection pool) for all the runs
    wrong: list[object] = []
    supersteps: set[int] = set()
    tag = uuid.uuid4().hex[:8]

    async def one(n: int) -> None:
        run_id = f"soak-{tag}-{n}"
        result = await wf.run(n, checkpoint=store, run_id=run_id, durability="async")
        supersteps.add(result.supersteps)
        if result.outputs != [expected(n, blocks)]:
            wrong.append((n, result.outputs))

    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as tg:
            for n in range(runs):
                tg.start_soon(one, n)
    finally:
        await store.aclose()
    seconds = time.perf_counter() - started
    gc.collect()
    return {
        "runs": runs,
        "supersteps": sorted(supersteps),
        "wrong": wrong[:5],
        "seconds": round(seconds, 2),
        "rss": rss_bytes(),
    }


def main() -> None:
    url, runs, repetitions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    blocks = int(sys.argv[4]) if len(sys.argv) > 4 else BLOCKS
    wf = build(blocks)
    for _ in range(repetitions):
        record = anyio.run(repetition, wf, url, runs, blocks)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
