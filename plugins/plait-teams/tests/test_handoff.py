"""HandoffBuilder on scripted agents: handoffs along the declared edges (and the error
outside them), a question to the user answered after a resume, the turn limit, the
builder's checks; asyncio and trio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from magentic_scripts import ScriptedManager, alternate, researcher, writer
from plait import CustomEvent, RunStatus, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_teams import (
    Conversation,
    Decision,
    Handoff,
    HandoffBuilder,
    HandoffError,
    HandoffRules,
    MagenticBuilder,
    Message,
    TeamFinished,
    UserInputRequest,
    decision_schema,
    read_decision,
)

pytestmark = pytest.mark.anyio


def _last_user(conversation: Conversation) -> str:
    return next(m.text for m in reversed(conversation.messages) if m.role == "user")


async def triage(conversation: Conversation) -> Any:
    """Sends money questions to refund, order questions to orders."""
    text = _last_user(conversation)
    if "money back" in text:
        return Handoff("refund", "the user wants a refund", text="Let me get refunds.")
    if "order" in text:
        return Handoff("orders", "an order question")
    return "I can help with refunds and orders."


async def refund(conversation: Conversation) -> Any:
    """Refunds; sends anything else back to triage."""
    if "money back" in _last_user(conversation):
        return "Your refund is on its way."
    return Handoff("triage", "not a refund")


async def orders(conversation: Conversation) -> Any:
    """Needs an order number, which it asks the user for."""
    text = _last_user(conversation)
    if any(ch.isdigit() for ch in text):
        return f"Order {text} ships tomorrow."
    return Decision(text="Which order number?", needs_user=True)


def support(**agents: Any) -> HandoffBuilder:
    given = {"triage": triage, "refund": refund, "orders": orders, **agents}
    return (
        HandoffBuilder("support")
        .participants(given)
        .with_start_agent("triage")
        .add_handoff("triage", ["refund", "orders"])
        .add_handoff("refund", ["triage"])
    )


def data_of(result: Any, key: str) -> list[Any]:
    return [
        e.data[key]
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, dict) and key in e.data
    ]


def finished(result: Any) -> TeamFinished:
    (done,) = [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TeamFinished)
    ]
    return done


async def test_triage_hands_off_and_the_target_answers() -> None:
    result = await support().build().run("I want my money back", events="all")
    assert result.status is RunStatus.IDLE
    (conversation,) = result.outputs
    assert [(m.author, m.text) for m in conversation] == [
        ("user", "I want my money back"),
        ("triage", "Let me get refunds."),
        ("refund", "Your refund is on its way."),
    ]
    assert conversation[1].data == {
        "text": "Let me get refunds.",
        "handoff_to": "refund",
        "reason": "the user wants a refund",
        "needs_user": False,
    }
    assert data_of(result, "handoff") == [
        {"from": "triage", "to": "refund", "reason": "the user wants a refund"}
    ]
    assert finished(result).reason == "answered"


async def test_the_start_agent_may_answer_alone() -> None:
    result = await support().build().run("hello")
    (conversation,) = result.outputs
    assert [m.author for m in conversation] == ["user", "triage"]


async def test_a_handoff_outside_the_rules_fails_naming_the_allowed_targets() -> None:
    async def rogue(conversation: Conversation) -> Any:
        return Handoff("orders", "skipping triage")

    result = await support(refund=rogue).build().run("I want my money back", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    error = result.error
    while error is not None and not isinstance(error, HandoffError):
        error = error.__cause__
    assert isinstance(error, HandoffError)
    assert str(error) == (
        "agent 'refund' handed off to 'orders', which its handoff rules do not allow: it "
        "may hand off to triage"
    )
    assert error.allowed == ("triage",)


async def test_the_user_is_asked_and_the_agent_goes_on_after_a_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    asked = await support().build().run("where is my order?", checkpoint=url, run_id="ask")
    assert asked.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (pending,) = asked.pending_requests
    assert pending.request == UserInputRequest("support", "orders", "Which order number?")

    result = (
        await support()
        .build()
        .resume("ask", url, responses={pending.request_id: "A-42"}, events="all")
    )
    assert result.status is RunStatus.IDLE
    (conversation,) = result.outputs
    assert [(m.author, m.text) for m in conversation][1:] == [
        ("triage", "Handing off to orders: an order question"),
        ("orders", "Which order number?"),
        ("user", "A-42"),
        ("orders", "Order A-42 ships tomorrow."),
    ]


async def test_agents_handing_back_and_forth_stop_at_the_turn_limit() -> None:
    async def bounce(conversation: Conversation) -> Any:
        return Handoff("triage", "not mine")

    async def back(conversation: Conversation) -> Any:
        return Handoff("refund", "yours")

    builder = support(triage=back, refund=bounce).with_max_rounds(6)
    result = await builder.build().run("ping", events="all")
    assert finished(result).reason == "max_rounds"
    assert len(data_of(result, "handoff")) == 6


def test_rules_that_name_unknown_agents_are_refused_with_the_names() -> None:
    builder = support().add_handoff("triage", ["refnud"])
    with pytest.raises(HandoffError, match=r"target 'refnud' is not a participant.*refund"):
        builder.build()
    with pytest.raises(HandoffError, match="start agent 'nobody'"):
        support().with_start_agent("nobody").build()


def test_rules_check_allowed_targets() -> None:
    rules = HandoffRules.build(["a", "b", "c"], "a", {"a": ["b"]})
    rules.check("a", "b")
    with pytest.raises(HandoffError, match="it may hand off to no agent"):
        rules.check("b", "a")
    assert rules.problems() == []
    assert HandoffRules.build(["a"], "a", {"a": ["a"]}).problems() == [
        "add_handoff('a', ...): an agent cannot hand off to itself"
    ]


def test_decisions_read_from_every_form() -> None:
    assert read_decision(Handoff("b", "why")) == Decision("", "b", "why")
    assert read_decision({"text": "hi", "needs_user": True}) == Decision("hi", needs_user=True)
    assert read_decision("plain") == Decision("plain")
    with pytest.raises(HandoffError, match="handoff_to must be an agent's name"):
        read_decision({"text": "x", "handoff_to": 3})
    schema = decision_schema(["refund"])
    assert schema["properties"]["handoff_to"]["enum"] == ["refund", None]
    assert Message("assistant", "a", "t").data is None


async def test_a_handoff_team_and_a_magentic_team_compose_in_one_graph() -> None:
    @executor(id="brief")
    async def brief(conversation: Conversation, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"write up: {conversation[-1].text}")

    @executor(id="report")
    async def report(conversation: Conversation, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(conversation[-1].text)

    magentic = (
        MagenticBuilder("study")
        .participants({"researcher": researcher, "writer": writer})
        .with_manager(ScriptedManager(alternate(done_at=2)))
    )
    # two teams bound their own supersteps differently: the composing builder says its own
    outer = WorkflowBuilder("outer", max_supersteps=200)
    desk = outer.add_workflow(support())
    study = outer.add_workflow(magentic.as_connection(prefix="study"))
    outer.set_start(desk.start)
    outer.connect(desk.port("conversation_out"), brief)
    outer.connect(brief, study.start)
    outer.connect(study.port("conversation_out"), report)
    workflow = outer.build()
    assert {"support/manager", "support/triage", "study/manager", "study/writer"} <= set(
        workflow.executors
    )
    result = await workflow.run("I want my money back", events="all")
    assert result.outputs == ["answer after 1 rounds, with plan 0"]
    assert data_of(result, "handoff") == [
        {"from": "triage", "to": "refund", "reason": "the user wants a refund"}
    ]


def test_a_stored_question_decodes_only_from_its_own_fields() -> None:
    from plait_teams._handoff import USER_INPUT_HOOKS

    stored = USER_INPUT_HOOKS.unstructure(UserInputRequest("desk", "orders", "Which?"))
    assert USER_INPUT_HOOKS.structure(stored, UserInputRequest) == UserInputRequest(
        "desk", "orders", "Which?"
    )
    with pytest.raises(ValueError, match="must be a dict of its fields"):
        USER_INPUT_HOOKS.structure({**stored, "__class__": "os:system"}, UserInputRequest)
    with pytest.raises(ValueError, match="question has the wrong type"):
        USER_INPUT_HOOKS.structure({**stored, "question": 3}, UserInputRequest)
