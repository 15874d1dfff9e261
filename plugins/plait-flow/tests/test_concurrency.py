"""Parallel branches really run at the same time: each waits for the other (a handshake)."""

from __future__ import annotations

import anyio
import pytest
from plait_flow import Flow

pytestmark = pytest.mark.anyio


async def test_parallel_branches_handshake_under_a_deadline() -> None:
    left_arrived, right_arrived = anyio.Event(), anyio.Event()

    async def left(text: str) -> str:
        left_arrived.set()
        await right_arrived.wait()  # run one at a time and this never returns
        return "left"

    async def right(text: str) -> str:
        right_arrived.set()
        await left_arrived.wait()
        return "right"

    async def start(text: str) -> str:
        return text

    workflow = Flow(executors=[start, left, right], flow="start -> [left, right]", merge="concat")
    with anyio.fail_after(10):  # a deadlock fails here instead of hanging the suite
        result = await workflow.run("go")
    assert result.outputs == ["left right"]
    assert left_arrived.is_set() and right_arrived.is_set()
