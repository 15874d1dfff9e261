"""A failed run's last checkpoint says it failed and why, in every durability mode, and
resuming it re-runs the superstep that failed."""

from __future__ import annotations

from pathlib import Path

import pytest
from durable_helpers import counting_chain
from plait import ExecutorFailedError, RunStatus
from plait_durable import open_store

pytestmark = pytest.mark.anyio

MODES = ["sync", "async", "exit"]
ERROR = {"executor": "n2", "type": "RuntimeError", "message": "transient", "superstep": 3}


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.mark.parametrize("mode", MODES)
async def test_a_failed_run_is_listed_failed_with_its_error_and_resumes(
    tmp_path: Path, mode: str
) -> None:
    url = sqlite_url(tmp_path)
    wf = counting_chain(4, fail_at=2, flaky={"left": 1})
    with pytest.raises(ExecutorFailedError) as info:
        await wf.run(0, checkpoint=url, durability=mode)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    store = open_store(url)
    try:
        latest = await store.latest(run_id)
        assert latest is not None
        assert latest.status == "failed"
        error = dict(latest.metadata["error"])
        assert "RuntimeError: transient" in error.pop("traceback")
        assert error == ERROR
        assert latest.superstep == 2, "the pending state is the last good superstep's"
        (listed,) = await store.runs()
        assert (listed.run_id, listed.workflow, listed.status) == (run_id, "chain", "failed")
        assert listed.error == "RuntimeError in 'n2' (superstep 3): transient"
    finally:
        await store.aclose()
    # the executor works now: resuming re-runs the failed superstep and completes
    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == [4]
    assert resumed.status is RunStatus.IDLE
    store = open_store(url)
    try:
        (listed,) = await store.runs()
        assert (listed.status, listed.error, listed.superstep) == ("idle", None, 4)
    finally:
        await store.aclose()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_resumed_run_that_fails_at_once_is_recorded_failed_again(
    tmp_path: Path, mode: str
) -> None:
    url = sqlite_url(tmp_path)
    flaky = {"left": 2}
    wf = counting_chain(4, fail_at=1, flaky=flaky)
    with pytest.raises(ExecutorFailedError) as info:
        await wf.run(0, checkpoint=url, durability=mode)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    with pytest.raises(ExecutorFailedError):
        await wf.resume(run_id, url)  # fails in its first superstep, before any checkpoint
    store = open_store(url)
    try:
        infos = await store.list(run_id)
        assert [(i.superstep, i.status) for i in infos] == [
            (0, "running"),
            (1, "running"),
            (1, "failed"),
            (1, "failed"),
        ]
        assert [i.parent_id for i in infos[1:]] == [i.checkpoint_id for i in infos[:-1]]
        latest = await store.latest(run_id)
        assert latest is not None and latest.metadata["error"]["superstep"] == 2
    finally:
        await store.aclose()
    assert (await wf.resume(run_id, url)).outputs == [4]
    assert flaky == {"left": 0}
