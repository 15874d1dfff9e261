"""Durable runs against every store: unreachable stores, many runs at once."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from plait import Never, RunStatus, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import StoreUnavailableError, open_store
from plait_testing import servers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    # redis-py and psycopg are asyncio libraries
    return "asyncio"


def adder_chain(n: int) -> Workflow:
    def node(i: int) -> Any:
        @executor(id=f"n{i}")
        async def add(x: int, ctx: WorkflowContext[int, int]) -> None:
            ctx.state["last"] = x
            await anyio.sleep(0.001)
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return add

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder("adders").add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


async def test_ten_concurrent_runs_on_one_store_do_not_interfere(plait_store_url: str) -> None:
    wf = adder_chain(8)
    results: dict[int, Any] = {}
    prefix = uuid.uuid4().hex[:8]

    async def one(k: int) -> None:
        results[k] = await wf.run(k * 100, checkpoint=plait_store_url, run_id=f"{prefix}-{k}")

    async with anyio.create_task_group() as tg:
        for k in range(10):
            tg.start_soon(one, k)
    assert {k: r.outputs for k, r in results.items()} == {k: [k * 100 + 8] for k in range(10)}
    store = open_store(plait_store_url)
    try:
        for k in range(10):
            infos = await store.list(f"{prefix}-{k}")
            assert [i.superstep for i in infos] == list(range(9))
            assert {i.run_id for i in infos} == {f"{prefix}-{k}"}
            latest = await store.latest(f"{prefix}-{k}")
            assert latest is not None and latest.status == "idle"
    finally:
        await store.aclose()


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
async def test_an_unreachable_store_fails_the_run_clearly(scheme: str) -> None:
    port = servers.closed_port()
    url = (
        f"redis://127.0.0.1:{port}/0"
        if scheme == "redis"
        else f"postgresql://postgres@127.0.0.1:{port}/postgres?connect_timeout=2"
    )

    @executor(id="only")
    async def only(x: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(x)

    wf = WorkflowBuilder().add_executor(only).set_start(only).build()
    with anyio.fail_after(30):
        result = await wf.run(1, checkpoint=url, raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert isinstance(result.error, StoreUnavailableError)
    assert str(port) in str(result.error)
    assert result.outputs == []  # nothing ran: the first checkpoint could not be written
