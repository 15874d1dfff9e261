"""A Ray worker killed (by its pid) mid-invocation during a fan-out: the executor's retry
policy retries the invocation on a fresh actor; without one, the run fails naming the
executor and the node."""

from __future__ import annotations

from pathlib import Path

import anyio
import plait_ray_flows as flows
import pytest
from plait import ExecutorFailedError, RetryPolicy, RunStatus
from plait_ray import WorkerLostError

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("ray_cluster")]

BRANCHES = 6


async def _kill_when_started(path: Path) -> int:
    """Wait for the slow branch to leave its pid, then kill that worker process."""
    marker = anyio.Path(path)
    with anyio.fail_after(60):
        while not await marker.exists() or not await marker.read_text():
            await anyio.sleep(0.05)
    pid = int(await marker.read_text())
    flows.kill(pid)
    return pid


async def test_a_retry_policy_absorbs_a_killed_worker(tmp_path: Path) -> None:
    wf = flows.fan("ray", BRANCHES, retry=RetryPolicy(max_attempts=2, delay=0.0))
    expected = (await flows.fan(None, BRANCHES).run(flows.Job(1))).outputs
    killed: list[int] = []
    async with anyio.create_task_group() as tg:

        async def kill() -> None:
            killed.append(await _kill_when_started(tmp_path / "sq2.pid"))

        tg.start_soon(kill)
        result = await wf.run(
            flows.Job(1, marker_dir=str(tmp_path), slow="sq2"), raise_on_failure=False
        )
        tg.cancel_scope.cancel()
    assert killed, f"the worker was never killed; the run ended {result.status}: {result.error}"
    assert result.status is RunStatus.IDLE, result.error
    assert result.outputs == expected


async def test_without_a_policy_the_run_fails_naming_the_executor_and_node(
    tmp_path: Path,
) -> None:
    wf = flows.fan("ray", BRANCHES)
    killed: list[int] = []
    async with anyio.create_task_group() as tg:

        async def kill() -> None:
            killed.append(await _kill_when_started(tmp_path / "sq4.pid"))

        tg.start_soon(kill)
        result = await wf.run(
            flows.Job(1, marker_dir=str(tmp_path), slow="sq4"), raise_on_failure=False
        )
        tg.cancel_scope.cancel()
    assert killed, f"the worker was never killed; the run ended {result.status}: {result.error}"
    assert result.status is RunStatus.FAILED
    error = result.error
    assert isinstance(error, ExecutorFailedError)
    lost = error.__cause__
    assert isinstance(lost, WorkerLostError)
    # every invocation the dead actor was running fails; the first reported names its own
    # executor, and the worker that ran the killed one
    assert error.executor_id == lost.executor_id
    assert error.executor_id in {f"sq{i}" for i in range(BRANCHES)}
    assert lost.pid == killed[0]
    assert lost.node and lost.node in str(error)
    assert f"executor {lost.executor_id!r}" in str(error)
    assert f"pid {killed[0]}" in str(error)
