"""A looping workflow with a fan-in inside the loop, for the pipelined crash tests.

    python pipecrash.py run    SCHEDULE STORE_URL RUN_ID LOG
    python pipecrash.py resume SCHEDULE STORE_URL RUN_ID LOG

``head`` fans out to ``quick`` and a 4-executor ``slow`` chain; a fan-in joins them into
``count``, which sends the total back to ``head`` until it has gone round ``ROUNDS`` times
(a fan-in inside a loop: MAF #3060). ``quick`` is done long before the chain, so the
fan-in's buffer is partly filled most of the time (MAF #6372). Every invocation appends
``superstep executor_id`` to LOG.

``PLAIT_PIPECRASH_KILL=commit:N`` kills the process (SIGKILL) once its N-th checkpoint
is saved (at a commit whose cut is durable); ``write:N`` kills it while the N-th save is
under way (a torn write: the store keeps the cut before it).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import anyio
from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import open_store

CHAIN = 4
ROUNDS = 5
SLEEP = float(os.environ.get("PLAIT_PIPECRASH_SLEEP", "0.03"))
LOG_PATH = ""


def _log(ctx: WorkflowContext[object, object]) -> None:
    with open(LOG_PATH, "a") as log:
        log.write(f"{ctx.superstep} {ctx.executor_id}\n")


def build() -> Workflow:
    @executor(id="head")
    async def head(x: int, ctx: WorkflowContext[int]) -> None:
        _log(ctx)
        await ctx.send_message(x)

    @executor(id="quick")
    async def quick(x: int, ctx: WorkflowContext[int]) -> None:
        _log(ctx)
        await ctx.send_message(x * 10)

    def slow(i: int) -> object:
        @executor(id=f"slow{i}")
        async def step(x: int, ctx: WorkflowContext[int]) -> None:
            _log(ctx)
            ctx.state["seen"] = ctx.state.get("seen", 0) + 1
            await anyio.sleep(SLEEP)
            await ctx.send_message(x + i + ctx.state["seen"])

        return step

    @executor(id="count")
    async def count(parts: list[int], ctx: WorkflowContext[int, int]) -> None:
        _log(ctx)
        rounds = ctx.state["rounds"] = ctx.state.get("rounds", 0) + 1
        await ctx.yield_output(sum(parts))
        if rounds < ROUNDS:
            await ctx.send_message(sum(parts) % 97)

    chain = [slow(i) for i in range(CHAIN)]
    builder = WorkflowBuilder("pipecrash").add_fan_out(head, [quick, chain[0]])
    for a, b in zip(chain, chain[1:]):
        builder.add_edge(a, b)
    builder.add_fan_in([quick, chain[-1]], count)
    builder.add_edge(count, head)
    return builder.set_start(head).build()


class Killing:
    """A store whose process is killed at its ``n``-th save: after it (``commit``) or
    while it is under way (``write``)."""

    def __init__(self, store: Any, how: str, n: int) -> None:
        self.store, self.how, self.n, self.saves = store, how, n, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def save(self, checkpoint: Any, **options: Any) -> None:
        self.saves += 1
        if self.saves != self.n:
            await self.store.save(checkpoint, **options)
            return
        if self.how == "commit":
            await self.store.save(checkpoint, **options)
            os.kill(os.getpid(), signal.SIGKILL)
        async with anyio.create_task_group() as tg:

            async def save() -> None:
                await self.store.save(checkpoint, **options)

            tg.start_soon(save)
            await anyio.sleep(0.0002)  # the write is under way
            os.kill(os.getpid(), signal.SIGKILL)


async def main(mode: str, schedule: str, url: str, run_id: str) -> None:
    wf = build()
    kill = os.environ.get("PLAIT_PIPECRASH_KILL")
    if mode == "run" and kill:
        how, n = kill.split(":")
        store = Killing(open_store(url), how, int(n))
        try:
            result = await wf.run(7, checkpoint=store, run_id=run_id, schedule=schedule)
        finally:
            await store.aclose()
    elif mode == "run":
        result = await wf.run(7, checkpoint=url, run_id=run_id, schedule=schedule)
    else:
        result = await wf.resume(run_id, url, schedule=schedule)
    print(json.dumps({"outputs": result.outputs, "supersteps": result.supersteps}))


if __name__ == "__main__":
    LOG_PATH = sys.argv[5]
    anyio.run(main, *sys.argv[1:5])
