"""A 30-superstep workflow used by the crash tests, run in a subprocess.

    python crashy.py run   STORE_URL RUN_ID LOG
    python crashy.py resume STORE_URL RUN_ID LOG

Every executor invocation appends ``superstep executor_id`` to LOG before it sends, so the
test can tell which supersteps ran and how often. The graph: ``src`` fans out to ``quick``
and a 28-executor ``slow`` chain; a fan-in joins ``quick`` and the end of the chain, so the
fan-in holds ``quick``'s message for most of the run (its state is in every checkpoint).

With ``PLAIT_CRASHY_HOLD=N:MARKER`` every invocation of superstep ``N`` (after it logged)
writes MARKER and waits to be killed (:func:`plait_testing.kills.hold`): the run's latest
checkpoint is then superstep ``N - 1``'s.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from plait import Never, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_testing.kills import hold

CHAIN = 28
SLEEP = float(os.environ.get("PLAIT_CRASHY_SLEEP", "0.03"))
HOLD_AT, _, MARKER = os.environ.get("PLAIT_CRASHY_HOLD", "").partition(":")
LOG_PATH = ""


def _log(ctx: WorkflowContext[object, object]) -> None:
    with open(LOG_PATH, "a") as log:
        log.write(f"{ctx.superstep} {ctx.executor_id}\n")


async def _logged(ctx: WorkflowContext[object, object]) -> None:
    """Log the invocation; hold it there when it is in the superstep to hold in."""
    _log(ctx)
    if HOLD_AT and ctx.superstep == int(HOLD_AT):
        await hold(Path(MARKER))


def build() -> Workflow:
    @executor(id="src")
    async def src(x: int, ctx: WorkflowContext[int]) -> None:
        await _logged(ctx)
        await ctx.send_message(x)

    @executor(id="quick")
    async def quick(x: int, ctx: WorkflowContext[int]) -> None:
        await _logged(ctx)
        await ctx.send_message(x * 1000)

    def slow(i: int) -> object:
        @executor(id=f"slow{i}")
        async def step(x: int, ctx: WorkflowContext[int]) -> None:
            await _logged(ctx)
            ctx.state["visits"] = ctx.state.get("visits", 0) + 1
            await anyio.sleep(SLEEP)  # work between checkpoints
            await ctx.send_message(x + i)

        return step

    @executor(id="join")
    async def join(parts: list[int], ctx: WorkflowContext[Never, list[int]]) -> None:
        await _logged(ctx)
        await ctx.yield_output(parts)

    chain = [slow(i) for i in range(CHAIN)]
    builder = WorkflowBuilder("crashy").add_fan_out(src, [quick, chain[0]])
    for a, b in zip(chain, chain[1:]):
        builder.add_edge(a, b)
    return builder.add_fan_in([quick, chain[-1]], join).set_start(src).build()


async def main(mode: str, url: str, run_id: str) -> None:
    wf = build()
    if mode == "run":
        result = await wf.run(7, checkpoint=url, run_id=run_id)
    else:
        result = await wf.resume(run_id, url)
    print(json.dumps({"outputs": result.outputs, "supersteps": result.supersteps}))


if __name__ == "__main__":
    LOG_PATH = sys.argv[4]
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
