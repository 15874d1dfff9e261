"""No raw error escapes run(): bad options, bad stores and encoding failures are
PlaitErrors naming what was wrong, and observers always hear that the run ended."""

from __future__ import annotations

from typing import Any

import anyio
import plait
import pytest
from plait import Never, PlaitError, RunOptionError, WorkflowContext, WorkflowRunError, executor
from plait_builders import WorkflowBuilder
from plait_testing import HookRecorder

pytestmark = pytest.mark.anyio


@executor(id="echo")
async def echo(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
    await ctx.yield_output(value)


def workflow() -> plait.Workflow:
    return WorkflowBuilder().add_executor(echo).set_start(echo).build()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_supersteps": True}, "max_supersteps"),
        ({"run_id": ""}, "run_id"),
        ({"run_id": 7}, "run_id"),
        ({"checkpoint": 123}, "checkpoint"),
        ({"executor_max_visits": {"echo": False}}, "executor_max_visits"),
    ],
)
async def test_bad_options_are_refused_naming_them(options: dict[str, Any], named: str) -> None:
    with pytest.raises(RunOptionError, match=named):
        await workflow().run("x", **options)


class LeaselessStore:
    """A store of a design before leases: every run takes its run's lease, so it cannot
    hold a run's checkpoints."""

    async def save(self, checkpoint: Any) -> None: ...

    async def load(self, checkpoint_id: str) -> Any: ...

    async def latest(self, run_id: str) -> Any: ...

    async def list(self, run_id: str) -> Any: ...


async def test_a_store_without_leases_is_refused_before_the_run() -> None:
    missing = "it has no acquire_lease, renew_lease, release_lease"
    with pytest.raises(RunOptionError, match=f"run option checkpoint .*LeaselessStore.*{missing}"):
        await workflow().run("x", checkpoint=LeaselessStore())


async def test_a_message_too_deep_to_checkpoint_is_a_plait_error() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    result = await workflow().run(deep, checkpoint="memory://", raise_on_failure=False)
    assert not result.ok
    assert isinstance(result.error, PlaitError)


async def test_observers_hear_the_end_of_failed_and_cancelled_runs(
    plait_hook_recorder: HookRecorder,
) -> None:
    @executor(id="boom")
    async def boom(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        raise ValueError("boom")

    failing = WorkflowBuilder().add_executor(boom).set_start(boom).build()
    result = await failing.run("x", raise_on_failure=False)
    assert isinstance(result.error, WorkflowRunError)
    finished = plait_hook_recorder.getcalls("run_finished")
    assert [c.kwargs["status"] for c in finished] == ["failed"]

    @executor(id="sleepy")
    async def sleepy(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await anyio.sleep(30)

    slow = WorkflowBuilder().add_executor(sleepy).set_start(sleepy).build()
    with anyio.move_on_after(0.1):
        await slow.run("x")
    finished = plait_hook_recorder.getcalls("run_finished")
    assert len(finished) == 2 and finished[-1].kwargs["status"] == "failed"
