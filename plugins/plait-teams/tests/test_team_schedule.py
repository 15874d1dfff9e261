"""A team inside a larger graph under the pipelined schedule: its turns do not hold another
branch back (on trio's mock clock, so times are exact), and the outputs equal the barrier
schedule's."""

from __future__ import annotations

from typing import Any

import anyio
import plait
import pytest
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_teams import Conversation, GroupChatBuilder
from trio.testing import MockClock


def graph(times: dict[str, float]) -> plait.Workflow:
    async def slow(conversation: Conversation) -> str:
        await anyio.sleep(1)
        return f"turn {len(conversation)}"

    @executor(id="start")
    async def start(topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(topic)

    def side(k: int, last: bool) -> Any:
        @executor(id=f"side{k}")
        async def step(text: str, ctx: WorkflowContext[str, str]) -> None:
            await anyio.sleep(0.1)
            times[f"side{k}"] = anyio.current_time()
            if last:
                await ctx.yield_output("side done")
            else:
                await ctx.send_message(text)

        return step

    @executor(id="final")
    async def final(conversation: Conversation, ctx: WorkflowContext[Any, str]) -> None:
        times["final"] = anyio.current_time()
        await ctx.yield_output(f"team said {len(conversation) - 1} times")

    team = GroupChatBuilder("team").participants({"a": slow, "b": slow}).with_max_rounds(3)
    sides = [side(k, k == 4) for k in range(5)]
    builder = WorkflowBuilder("outer", max_supersteps=40).add_executor(start).set_start(start)
    handle = builder.add_workflow(team)
    builder.connect(start, handle.start)
    builder.add_edge(start, sides[0])
    for before, after in zip(sides, sides[1:]):
        builder.add_edge(before, after)
    builder.connect(handle.port("conversation_out"), final)
    return builder.build()


def timed(**options: Any) -> tuple[dict[str, float], plait.WorkflowRunResult]:
    times: dict[str, float] = {}

    async def go() -> plait.WorkflowRunResult:
        return await graph(times).run("launch", **options)

    clock = MockClock(autojump_threshold=0)
    result: plait.WorkflowRunResult = anyio.run(
        go, backend="trio", backend_options={"clock": clock}
    )
    return times, result


def test_a_team_does_not_hold_another_branch_back_when_pipelined() -> None:
    barrier, result = timed()
    # under the barrier, the side branch waits for every turn in its supersteps
    assert barrier["side4"] == pytest.approx(2.3)
    pipelined, result_p = timed(schedule="pipelined")
    assert pipelined["side4"] == pytest.approx(0.5)
    # and the team is not held back by the side branch either: three 1 s turns
    assert barrier["final"] == pytest.approx(3.3)
    assert pipelined["final"] == pytest.approx(3.0)
    assert result_p.outputs == result.outputs
    assert sorted(result.outputs) == ["side done", "team said 3 times"]
