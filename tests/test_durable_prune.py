"""Pruning a durable run keeps it resumable: the base of a kept delta stays."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from plait import Workflow, WorkflowContext, executor
from plait.checkpoint import open_store
from plait.durable import SNAPSHOT_EVERY
from plait.errors import ExecutorFailedError
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio

STEPS = 40  # one executor per superstep: a full snapshot at 0 and 32, deltas between
FAIL_AT = 37  # executor n37 runs in superstep 38, so the latest checkpoint is a delta


def counting_chain(
    n: int, *, fail_at: int | None = None, flaky: dict[str, int] | None = None
) -> Workflow:
    """n executors in a chain; each keeps a per-run counter in ctx.state and adds 1."""

    def node(i: int) -> Any:
        @executor(id=f"n{i}")
        async def add(x: int, ctx: WorkflowContext[int, int]) -> None:
            ctx.state["seen"] = ctx.state.get("seen", 0) + 1
            if flaky is not None and i == fail_at and flaky["left"] > 0:
                flaky["left"] -= 1
                raise RuntimeError("transient")
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return add

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder("chain", max_supersteps=n + 5).add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


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
        assert [i.superstep for i in before] == list(range(FAIL_AT + 1))
        latest = await store.latest(run_id)
        assert latest is not None and latest.state["kind"] == "delta"
        base = latest.base_id
        assert base is not None and base == latest.state["base"]
        (base_info,) = [i for i in before if i.checkpoint_id == base]
        assert (base_info.superstep, base_info.base_id) == (SNAPSHOT_EVERY, None)

        assert await store.prune(run_id, keep_last=1) == len(before) - 2
        after = list(await store.list(run_id))
        assert [i.checkpoint_id for i in after] == [base, latest.checkpoint_id]
    finally:
        await store.aclose()

    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == uninterrupted.outputs
    assert resumed.run_id == run_id
