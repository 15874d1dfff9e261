"""Pruning a durable run keeps it resumable: the base of a kept delta stays."""

from __future__ import annotations

import uuid

import pytest
from durable_helpers import counting_chain
from plait import ExecutorFailedError
from plait_durable import SNAPSHOT_EVERY, open_store

pytestmark = pytest.mark.anyio

STEPS = 40  # one executor per superstep: a full snapshot at 0 and 32, deltas between
FAIL_AT = 37  # executor n37 runs in superstep 38, so the latest checkpoint is a delta


async def test_prune_to_one_checkpoint_then_resume_gives_the_uninterrupted_outputs() -> None:
    assert SNAPSHOT_EVERY < FAIL_AT, "the run must reach its second full snapshot"
    uninterrupted = await counting_chain(STEPS).run(100)
    assert uninterrupted.outputs == [100 + STEPS]

    url = f"memory://prune-{uuid.uuid4().hex}"
    wf = counting_chain(STEPS, fail_at=FAIL_AT, flaky={"left": 1})
    with pytest.raises(ExecutorFailedError, match=rf"'n{FAIL_AT}' failed in superstep 38") as info:
        await wf.run(100, checkpoint=url)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]

    store = open_store(url)
    try:
        before = list(await store.list(run_id))
        # the last checkpoint records the failure, a copy of the last good superstep's
        assert [i.superstep for i in before] == [*range(FAIL_AT + 1), FAIL_AT]
        latest = await store.latest(run_id)
        assert latest is not None and latest.state["kind"] == "delta"
        base = latest.base_id
        assert base is not None and base == latest.state["base"]
        (base_info,) = [i for i in before if i.checkpoint_id == base]
        assert (base_info.superstep, base_info.base_id) == (SNAPSHOT_EVERY, None)

        # kept: the first checkpoint (it holds the topology), the base, the latest
        assert await store.prune(run_id, keep_last=1) == len(before) - 3
        after = list(await store.list(run_id))
        first = before[0].checkpoint_id
        assert [i.checkpoint_id for i in after] == [first, base, latest.checkpoint_id]
    finally:
        await store.aclose()

    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == uninterrupted.outputs
    assert resumed.run_id == run_id
