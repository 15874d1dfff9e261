"""A durable run whose executor fails, then waits out a long backoff: the test kills the
process during the backoff and resumes the run elsewhere (imported as a plain module)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from plait import Never, RetryPolicy, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder

MARKS = Path(os.environ.get("PLAIT_BACKOFF_MARKS", "marks.txt"))


@executor(id="charge", retry=RetryPolicy(max_attempts=5, backoff="fixed", delay=60))
async def charge(amount: int, ctx: WorkflowContext[Never, str]) -> None:
    async with await anyio.open_file(MARKS, "a") as marks:
        await marks.write(f"{ctx.attempt} {ctx.idempotency_key}\n")
    if os.environ.get("PLAIT_BACKOFF_FAIL") == "1":
        raise RuntimeError("card network down")
    await ctx.yield_output(f"charged {amount} on attempt {ctx.attempt}")


@executor(id="start")
async def start(amount: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(amount)


def build() -> Workflow:
    return WorkflowBuilder("backoff").add_edge(start, charge).set_start(start).build()


if __name__ == "__main__":
    build().run_sync(12, checkpoint=sys.argv[1], run_id="pay-1")
