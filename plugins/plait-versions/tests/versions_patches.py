"""A run asked again and again, on code with or without a patch: ``start URL`` (prints the
run id and the request id) and ``answer URL RUN_ID REQUEST_ID`` (prints the outputs and the
next request id). With ``PATCHED=1`` in the environment the code has the patch
``new-ranker``; without, it has only the old branch."""

from __future__ import annotations

import json
import os
import sys

import anyio
from plait import Executor, Never, WorkflowContext, handler
from plait_builders import WorkflowBuilder


class Ranker(Executor):
    @handler
    async def start(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await self.rank(ctx)

    @handler
    async def again(self, more: bool, ctx: WorkflowContext[Never, str]) -> None:
        await self.rank(ctx)

    async def rank(self, ctx: WorkflowContext[Never, str]) -> None:
        if os.environ.get("PATCHED") == "1" and ctx.patched("new-ranker"):
            await ctx.yield_output("new")
        else:
            await ctx.yield_output("old")
        ctx.state["rounds"] = ctx.state.get("rounds", 0) + 1
        await ctx.request_info("again?", bool)


workflow = WorkflowBuilder("ranking").add_executor(Ranker("rank")).set_start("rank").build()


async def main(*args: str) -> None:
    if args[0] == "start":
        result = await workflow.run("go", checkpoint=args[1])
    else:
        result = await workflow.resume(args[2], args[1], responses={args[3]: True})
    (request,) = result.pending_requests
    print(json.dumps([result.run_id, request.request_id, result.outputs]))


anyio.run(main, *sys.argv[1:])
