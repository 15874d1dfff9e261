"""``ctx.patched("new-ranker")``: true for a run that reaches the patch first on the
patched code, false for a run that was past it on the old code; the answer is kept in the
checkpoint, so three resumes in three processes take the same branch; and
``ctx.deprecate_patch``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plait import Executor, ExecutorFailedError, Never, PatchError, WorkflowContext, handler
from plait_builders import WorkflowBuilder

APP = Path(__file__).with_name("versions_patches.py")


def _process(*args: str, patched: bool) -> list[Any]:
    env = {**os.environ, "PATCHED": "1" if patched else "0"}
    done = subprocess.run(
        [sys.executable, str(APP), *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    found: list[Any] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("started_patched", [False, True])
def test_the_answer_holds_across_three_resumes_in_three_processes(
    plait_store_url: str, started_patched: bool
) -> None:
    run_id, request, outputs = _process("start", plait_store_url, patched=started_patched)
    assert outputs == ["new" if started_patched else "old"]
    branches = []
    for _ in range(3):  # the patched code is deployed: each resume is a new process
        _, request, outputs = _process("answer", plait_store_url, run_id, request, patched=True)
        branches.append(outputs[-1])
    # started on the old code, the run was past the patch: old every time; started on
    # the patched code, new every time
    assert branches == ["new" if started_patched else "old"] * 3


@pytest.mark.anyio
async def test_deprecate_patch_refuses_a_run_that_took_the_old_branch(tmp_path: Path) -> None:
    class Step(Executor):
        @handler
        async def go(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            ctx.state["seen"] = True  # ran before the patch existed
            await ctx.request_info("n?", int)

        @handler
        async def answered(self, n: int, ctx: WorkflowContext[Never, str]) -> None:
            if n == 2:
                await ctx.yield_output(str(ctx.patched("p")))
            else:
                ctx.deprecate_patch("p")
                await ctx.yield_output("deprecated")
            await ctx.request_info("n?", int)

    workflow = WorkflowBuilder("deprecating").add_executor(Step("step")).set_start("step").build()
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    async def answer(run_id: str, n: int) -> Any:
        (request,) = await workflow.pending_requests(run_id, url)
        return await workflow.resume(run_id, url, responses={request.request_id: n})

    never_asked = await workflow.run("x", checkpoint=url)
    assert (await answer(never_asked.run_id, 3)).outputs[-1] == "deprecated"
    assert (await answer(never_asked.run_id, 2)).outputs[-1] == "True"  # recorded: new

    took_old = await workflow.run("x", checkpoint=url)
    assert (await answer(took_old.run_id, 2)).outputs[-1] == "False"  # past it: old
    with pytest.raises(ExecutorFailedError) as caught:
        await answer(took_old.run_id, 3)
    assert isinstance(caught.value.__cause__, PatchError)
    assert f"patch 'p' is deprecated, but run {took_old.run_id} took its old branch" in str(
        caught.value.__cause__
    )
