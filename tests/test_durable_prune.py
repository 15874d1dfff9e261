"""Pruning a durable run keeps it resumable: every checkpoint is whole (its values blobs
the run keeps while a kept checkpoint reaches them), so the latest one is enough. (A delta
an earlier Plait wrote keeps its base: ``plugins/plait-durable/tests/test_legacy.py``.)"""

from __future__ import annotations

import uuid

import pytest
from durable_helpers import counting_chain
from plait import ExecutorFailedError
from plait_durable import open_store

pytestmark = pytest.mark.anyio

STEPS = 40  # one executor per superstep
FAIL_AT = 37  # executor n37 runs in superstep 38


async def test_prune_to_one_checkpoint_then_resume_gives_the_uninterrupted_outputs() -> None:
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
        assert latest is not None and latest.state["kind"] == "full"
        assert {i.base_id for i in before} == {None}

        # kept: the first checkpoint (it holds the topology) and the latest
        assert await store.prune(run_id, keep_last=1) == len(before) - 2
        after = list(await store.list(run_id))
        first = before[0].checkpoint_id
        assert [i.checkpoint_id for i in after] == [first, latest.checkpoint_id]
    finally:
        await store.aclose()

    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == uninterrupted.outputs
    assert resumed.run_id == run_id
