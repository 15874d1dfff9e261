"""Workflow.as_agent(): any workflow as a team participant, nested two levels deep, its
inner runs checkpointed inside the team's run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plait
import pytest
from plait import NestedEvent, RunStatus, UnknownNameError, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_teams import (
    Conversation,
    GroupChatBuilder,
    HumanTurnRequest,
    Message,
    WorkflowParticipant,
    human,
)
from team_helpers import scripted

pytestmark = pytest.mark.anyio


@executor(id="research")
async def research(conversation: Conversation, ctx: WorkflowContext[Any, Message]) -> None:
    await ctx.yield_output(Message("assistant", "research", f"found {len(conversation)} facts"))


@executor(id="shout")
async def shout(prompt: str, ctx: WorkflowContext[Any, str]) -> None:
    await ctx.yield_output(prompt.splitlines()[-1].upper())


def researcher() -> plait.Workflow:
    return WorkflowBuilder("researcher").add_executor(research).set_start(research).build()


async def test_a_workflow_taking_a_conversation_is_a_participant() -> None:
    agent = researcher().as_agent(description="finds facts")
    assert isinstance(agent, WorkflowParticipant)
    assert (agent.name, agent.description) == ("researcher", "finds facts")
    chat = GroupChatBuilder().participants([agent, scripted("writer")]).with_max_rounds(2)
    result = await chat.build().run("tides", events="all")
    assert [(m.author, m.text) for m in result.outputs[0]] == [
        ("user", "tides"),
        ("researcher", "found 1 facts"),
        ("writer", "writer 2"),
    ]
    nested = [e for e in result.events if isinstance(e, NestedEvent)]
    assert nested and {e.path for e in nested} == {"researcher"}


async def test_a_workflow_taking_text_gets_the_prompt() -> None:
    loud = WorkflowBuilder("loud").add_executor(shout).set_start(shout).build()
    chat = GroupChatBuilder().participants([loud.as_agent("loud")]).with_max_rounds(1)
    result = await chat.build().run("hello")
    assert result.outputs[0][-1] == Message("assistant", "loud", "USER: HELLO")


async def test_teams_nest_two_levels_deep() -> None:
    inner = (
        GroupChatBuilder("inner")
        .participants([researcher().as_agent("facts"), scripted("drafter")])
        .with_max_rounds(2)
    )
    middle = (
        GroupChatBuilder("middle")
        .participants([inner.build().as_agent("research_team"), scripted("critic")])
        .with_max_rounds(2)
    )
    outer = (
        GroupChatBuilder("outer")
        .participants([middle.build().as_agent("department"), scripted("boss")])
        .with_max_rounds(2)
    )
    result = await outer.build().run("report", events="all")
    # the department's answer is the middle team's last message, the critic's
    assert [(m.author, m.text) for m in result.outputs[0]] == [
        ("user", "report"),
        ("department", "critic 2"),
        ("boss", "boss 2"),
    ]
    paths = {e.path for e in result.events if isinstance(e, NestedEvent)}
    assert {"department", "department/research_team", "department/research_team/facts"} <= paths


async def test_an_inner_human_is_asked_and_answered_after_a_resume(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"

    def build() -> plait.Workflow:
        review = (
            GroupChatBuilder("review")
            .participants([scripted("drafter"), human("editor", prompt="Approve?")])
            .with_max_rounds(2)
        )
        team = (
            GroupChatBuilder("outer")
            .participants([review.build().as_agent("review_team"), scripted("boss")])
            .with_max_rounds(2)
        )
        return team.build()

    first = await build().run("memo", checkpoint=store)
    assert first.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    [pending] = first.pending_requests
    assert isinstance(pending.request, HumanTurnRequest)
    assert (pending.request.participant, pending.request.prompt) == ("editor", "Approve?")
    # the inner run waits inside the outer run's checkpoint: a fresh workflow resumes it
    done = await build().resume(first.run_id, store, responses={pending.request_id: "ok"})
    assert done.status is RunStatus.IDLE
    assert [(m.author, m.text) for m in done.outputs[0]] == [
        ("user", "memo"),
        ("review_team", "ok"),
        ("boss", "boss 2"),
    ]


async def test_a_failing_inner_workflow_names_the_participant() -> None:
    @executor(id="broken")
    async def broken(conversation: Conversation, ctx: WorkflowContext[Any, str]) -> None:
        raise RuntimeError("no facts today")

    inner = WorkflowBuilder("inner").add_executor(broken).set_start(broken).build()
    chat = GroupChatBuilder().participants([inner.as_agent("facts")]).with_max_rounds(1)
    result = await chat.build().run("go", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert "participant 'facts': its workflow inner failed" in str(result.error)


def test_as_agent_without_the_teams_plugin_names_it() -> None:
    from plait_testing import make_plugin_manager

    bare = make_plugin_manager()
    built = WorkflowBuilder("w", plugin_manager=bare).add_executor(research).set_start(research)
    with pytest.raises(UnknownNameError, match="none implements plait_workflow_as_agent"):
        built.build().as_agent()
