"""A run whose store stops answering fails after at most two bounded calls: the one that
stalled, then one to give its lease up (so the run can be resumed at once once the store is
back), never a failed checkpoint written to a store that is down: within twice the
store's timeout, as docs/deploying.md says."""

from __future__ import annotations

from typing import Any

import pytest
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import StoreUnavailableError
from plait_stores import MemoryCheckpointStore

pytestmark = pytest.mark.anyio


class GoesDown(MemoryCheckpointStore):
    """A memory store whose every call fails, as a stalled server's would, from the
    ``down_after``-th save on; it records the calls made after that."""

    def __init__(self, down_after: int) -> None:
        super().__init__()
        self.saves = 0
        self.down_after = down_after
        self.after_down: list[str] = []

    def _down(self, call: str) -> bool:
        if self.saves >= self.down_after:
            self.after_down.append(call)
            return True
        return False

    async def save(self, checkpoint: Any, *, lease: Any = None) -> None:
        if self._down("save"):
            raise StoreUnavailableError("the store did not answer within 2 s")
        self.saves += 1
        await super().save(checkpoint, lease=lease)

    async def release_lease(self, lease: Any) -> None:
        if self._down("release_lease"):
            raise StoreUnavailableError("the store did not answer within 2 s")
        await super().release_lease(lease)

    async def renew_lease(self, lease: Any, *, ttl: float) -> Any:
        if self._down("renew_lease"):
            raise StoreUnavailableError("the store did not answer within 2 s")
        return await super().renew_lease(lease, ttl=ttl)


@executor(id="count")
async def count(n: int, ctx: WorkflowContext[int, int]) -> None:
    if n < 5:
        await ctx.send_message(n + 1)
    else:
        await ctx.yield_output(n)


@executor(id="done")
async def done(n: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(n)


async def test_a_store_that_stops_answering_is_asked_once_more_to_free_the_lease() -> None:
    wf = WorkflowBuilder("counting").add_edge(count, count).set_start(count).build()
    store = GoesDown(down_after=3)
    with pytest.raises(StoreUnavailableError, match="did not answer"):
        await wf.run(0, checkpoint=store)
    assert store.after_down == ["save", "release_lease"]
