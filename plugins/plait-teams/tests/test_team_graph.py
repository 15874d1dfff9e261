"""The team graph core: a manager and participants as ordinary executors and edges, one
turn per superstep, the turn events, the participant adapter, composition and resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plait
import pytest
from plait import CustomEvent, RunStatus, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_teams import (
    Conversation,
    HumanTurnRequest,
    Message,
    Participant,
    TeamFinished,
    TurnEvent,
    TurnRequest,
    human,
    participant,
)
from team_helpers import RoundRobinTeam, scripted

pytestmark = pytest.mark.anyio


def turns(result: plait.WorkflowRunResult) -> list[TurnEvent]:
    return [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TurnEvent)
    ]


async def test_each_turn_is_a_superstep_of_its_participant() -> None:
    team = RoundRobinTeam("chat").participants([scripted("writer"), scripted("critic")])
    workflow = team.with_max_rounds(4).build()
    result = await workflow.run("write a poem", events="all")
    assert result.status is RunStatus.IDLE
    [conversation] = result.outputs
    assert [m.text for m in conversation] == [
        "write a poem",
        "writer 1",
        "critic 2",
        "writer 3",
        "critic 4",
    ]
    assert [m.author for m in conversation][1:] == ["writer", "critic", "writer", "critic"]
    seen = [
        (e.data.speaker, e.data.round, e.superstep)
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TurnEvent)
    ]
    # the task reaches the manager in superstep 1; turn n is superstep 2n
    assert seen == [("writer", 1, 2), ("critic", 2, 4), ("writer", 3, 6), ("critic", 4, 8)]
    invoked = [
        (e.executor_id, e.superstep) for e in result.events if isinstance(e, plait.ExecutorInvoked)
    ]
    assert ("writer", 2) in invoked and ("manager", 3) in invoked
    finished = [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TeamFinished)
    ]
    assert finished == [TeamFinished("chat", "max_rounds", 4)]


async def test_the_manager_may_finish_before_max_rounds() -> None:
    team = RoundRobinTeam().participants([scripted("a"), scripted("b", done_at=4)])
    result = await team.with_max_rounds(10).build().run("go")
    assert [m.text for m in result.outputs[0]][-1] == "b DONE"
    assert len(result.outputs[0]) == 5


async def test_max_rounds_sets_enough_supersteps() -> None:
    team = RoundRobinTeam().participants([scripted("a"), scripted("b")]).with_max_rounds(80)
    result = await team.build().run("go")
    assert len(result.outputs[0]) == 81


async def test_the_task_may_be_a_message_or_a_conversation() -> None:
    workflow = RoundRobinTeam().participants([scripted("a")]).with_max_rounds(1).build()
    task = Message("user", "alice", "hello")
    by_message = await workflow.run(task)
    assert by_message.outputs[0][0] == task
    earlier = Conversation.of("one", "two")
    by_conversation = await workflow.run(earlier)
    assert by_conversation.outputs[0][:2] == earlier
    assert by_conversation.outputs[0][2].text == "a 2"


async def test_participants_adapt_functions_of_the_prompt_and_sync_ones() -> None:
    seen: list[str] = []

    def critic(prompt: str) -> str:
        """Criticises drafts."""
        seen.append(prompt)
        return "fine"

    async def writer(conversation: Conversation) -> Message:
        return Message("assistant", "writer", "draft", {"words": 1})

    made = participant(critic)
    assert (made.name, made.description) == ("critic", "Criticises drafts.")
    workflow = RoundRobinTeam().participants([writer, critic]).with_max_rounds(2).build()
    result = await workflow.run("task")
    assert seen == ["user: task\nwriter: draft\n\nturn 2"]
    assert result.outputs[0][1].data == {"words": 1}


async def test_a_mapping_names_the_participants() -> None:
    workflow = (
        RoundRobinTeam()
        .participants({"first": scripted("x"), "second": scripted("y")})
        .with_max_rounds(2)
        .build()
    )
    result = await workflow.run("go")
    assert [m.author for m in result.outputs[0]][1:] == ["first", "second"]


def test_bad_participants_are_named() -> None:
    with pytest.raises(ValueError, match="reserved"):
        RoundRobinTeam().participants({"manager": scripted("x")})
    with pytest.raises(ValueError, match="two participants are named 'x'"):
        RoundRobinTeam().participants([scripted("x"), scripted("x")])
    with pytest.raises(TypeError, match="cannot take part in a team"):
        participant(42)
    with pytest.raises(ValueError, match="at least one participant"):
        RoundRobinTeam().participants([])
    with pytest.raises(ValueError, match="call participants"):
        RoundRobinTeam().build()


async def test_a_bad_answer_names_the_participant() -> None:
    async def broken(conversation: Conversation) -> Any:
        return 42

    workflow = RoundRobinTeam().participants([broken]).with_max_rounds(1).build()
    result = await workflow.run("go", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert "'broken' answered 42" in str(result.error)


class Echo(Participant):
    """A participant of one's own: says what it was asked."""

    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> Message:
        return Message("assistant", self.name, request.instruction or "")


async def test_a_participant_subclass_takes_part() -> None:
    workflow = RoundRobinTeam().participants([Echo("echo", "echoes")]).with_max_rounds(2).build()
    result = await workflow.run("go")
    assert [m.text for m in result.outputs[0]] == ["go", "turn 1", "turn 2"]


async def test_a_team_composes_as_a_fragment_with_edges_before_and_after() -> None:
    @executor(id="prepare")
    async def prepare(topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"topic: {topic}")

    @executor(id="summarize")
    async def summarize(conversation: Conversation, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(f"{len(conversation)} messages, last: {conversation[-1].text}")

    team = RoundRobinTeam("chat").participants([scripted("a"), scripted("b")]).with_max_rounds(2)
    outer = WorkflowBuilder("outer").add_executor(prepare).set_start(prepare)
    handle = outer.add_workflow(team)
    outer.connect(prepare, handle.start)
    outer.connect(handle.port("conversation_out"), summarize)
    workflow = outer.build()
    assert "chat/manager" in workflow.executors and "chat/a" in workflow.executors
    result = await workflow.run("tides")
    assert result.outputs == ["3 messages, last: b 2"]
    # the same through as_connection(), under another prefix
    again = WorkflowBuilder("outer2").add_executor(prepare).set_start(prepare)
    handle2 = again.add_workflow(team.as_connection(prefix="t2"))
    again.connect(prepare, handle2.start)
    again.connect(handle2.port("conversation_out"), summarize)
    assert (await again.build().run("tides")).outputs == ["3 messages, last: b 2"]


async def test_a_human_answers_after_a_resume_in_another_store_reader(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    team = (
        RoundRobinTeam("review")
        .participants([scripted("writer"), human("editor", "approves drafts", prompt="Approve?")])
        .with_max_rounds(3)
    )
    workflow = team.build()
    first = await workflow.run("write", checkpoint=store)
    assert first.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    [pending] = first.pending_requests
    assert pending.request == HumanTurnRequest(
        "review", "editor", 2, "Approve?", "user: write\nwriter: writer 1"
    )
    # a new workflow object, as another process would build it
    resumed = await team.build().resume(
        first.run_id, store, responses={pending.request_id: "approved"}
    )
    assert resumed.status is RunStatus.IDLE
    assert [(m.author, m.role, m.text) for m in resumed.outputs[0]] == [
        ("user", "user", "write"),
        ("writer", "assistant", "writer 1"),
        ("editor", "user", "approved"),
        ("writer", "assistant", "writer 3"),
    ]
