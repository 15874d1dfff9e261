"""Races on shared state (issue 22): one executor reads a key in the superstep another
writes it in. The read sees the value from before the write in either schedule, but two
branches sharing a key rarely mean that, and a branch running ahead in the pipelined
schedule is where it bites: the run warns, naming both executors and the key, and fails
under ``strict=True``. On asyncio and trio, in both schedules."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest
from plait import (
    SharedStateRaceError,
    SharedStateRaceWarning,
    Workflow,
    WorkflowContext,
    executor,
)
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])

SCHEDULES = ["superstep", "pipelined"]


def branches(read: str, *, later: bool = False) -> tuple[Workflow, list[Any]]:
    """``start`` fans out to ``writer`` (writes ``total``) and ``reader`` (reads it with
    ``read``: ``get`` or ``view``); with ``later``, the reader reads a superstep after."""
    seen: list[Any] = []

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    @executor(id="writer")
    async def writer(message: str, ctx: WorkflowContext[str]) -> None:
        await anyio.sleep(0.05 if later else 0)  # the other branch runs ahead meanwhile
        await ctx.set_shared_state("total", len(message))

    @executor(id="hop")
    async def hop(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    @executor(id="reader")
    async def reader(message: str, ctx: WorkflowContext[str, Any]) -> None:
        if read == "get":
            value = await ctx.get_shared_state("total")
        else:
            value = ctx.shared.get("total")
        seen.append(value)
        await ctx.yield_output(value)

    builder = WorkflowBuilder("races")
    if later:
        builder.add_fan_out(start, [writer, hop]).add_edge(hop, reader)
    else:
        builder.add_fan_out(start, [writer, reader])
    return builder.set_start(start).build(), seen


@pytest.mark.anyio
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("read", ["get", "view"])
async def test_a_read_of_a_key_another_branch_writes_in_the_same_superstep_warns(
    schedule: str, read: str
) -> None:
    workflow, seen = branches(read)
    with pytest.warns(SharedStateRaceWarning) as caught:
        result = await workflow.run("abc", schedule=schedule)
    assert result.outputs == [None] and seen == [None]  # the value from before the write
    (warning,) = [w for w in caught if issubclass(w.category, SharedStateRaceWarning)]
    text = str(warning.message)
    assert "'writer'" in text and "'reader'" in text and "'total'" in text
    assert "superstep 2" in text


@pytest.mark.anyio
@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_strict_makes_the_race_an_error_naming_both_executors_and_the_key(
    schedule: str,
) -> None:
    workflow, _ = branches("get")
    with pytest.raises(SharedStateRaceError) as caught:
        await workflow.run("abc", schedule=schedule, strict=True)
    assert caught.value.executor_id == "reader" and caught.value.superstep == 2
    assert "executor 'writer' wrote shared-state key 'total'" in str(caught.value)
    assert "'reader' read in the same superstep" in str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_a_read_a_superstep_after_the_write_sees_it_in_either_schedule(
    schedule: str,
) -> None:
    # in the pipelined schedule the reader runs ahead of the writer: its read waits for
    # the write's superstep to be committed
    workflow, seen = branches("get", later=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedStateRaceWarning)
        result = await workflow.run("abc", schedule=schedule, strict=True)
    assert result.outputs == [3] and seen == [3]


@pytest.mark.anyio
async def test_a_read_through_the_view_running_ahead_of_a_write_warns() -> None:
    # ``ctx.shared`` cannot wait: a branch running ahead reads the older value, and the
    # run says so when the write is committed (an error under strict=True)
    workflow, seen = branches("view", later=True)
    with pytest.warns(SharedStateRaceWarning, match="running ahead of the write") as caught:
        result = await workflow.run("abc", schedule="pipelined")
    assert result.outputs == [None] and seen == [None]
    text = str(caught[0].message)
    assert "'reader'" in text and "'writer'" in text and "'total'" in text
    with pytest.raises(SharedStateRaceError, match="running ahead"):
        await branches("view", later=True)[0].run("abc", schedule="pipelined", strict=True)
    assert (await branches("view", later=True)[0].run("abc")).outputs == [3]
