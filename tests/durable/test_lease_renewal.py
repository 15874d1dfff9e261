"""A durable run renews its lease every third of ``lease_ttl`` while a superstep takes
long, and stops renewing the moment the run ends (it never waits out a renewal period)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_stores import MemoryCheckpointStore

pytestmark = pytest.mark.anyio


class CountsRenewals(MemoryCheckpointStore):
    """A memory store that records when each lease renewal was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.renewed: list[float] = []

    async def renew_lease(self, lease: Any, *, ttl: float) -> Any:
        self.renewed.append(time.monotonic())
        return await super().renew_lease(lease, ttl=ttl)


def _slow(seconds: float) -> Any:
    @executor(id="slow")
    async def slow(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await anyio.sleep(seconds)
        await ctx.yield_output(n)

    return WorkflowBuilder("slow").add_executor(slow).set_start(slow).build()


async def test_a_long_superstep_renews_the_lease_and_the_end_stops_renewing() -> None:
    store = CountsRenewals()
    result = await _slow(0.5).run(1, checkpoint=store, lease_ttl=0.3)
    ended = time.monotonic()
    assert result.outputs == [1]
    assert len(store.renewed) >= 2  # every 0.1 s of the 0.5 s superstep
    await anyio.sleep(0.3)
    assert all(at <= ended for at in store.renewed)


async def test_a_short_run_does_not_wait_for_its_renewer() -> None:
    store = CountsRenewals()
    started = time.monotonic()
    result = await _slow(0).run(1, checkpoint=store, lease_ttl=60)
    assert result.outputs == [1]
    assert time.monotonic() - started < 5  # not the 20 s of a renewal period
    assert store.renewed == []
