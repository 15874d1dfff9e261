"""MagenticBuilder on scripted managers and agents: ledgers, stalls and re-plans, the round
limit, plan review (approve, edit, re-plan) answered after a resume, per-participant
histories; asyncio and trio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from magentic_scripts import SEEN, ScriptedManager, alternate, ledger, researcher, writer
from plait import CustomEvent, RunStatus, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_teams import (
    Conversation,
    LedgerError,
    MagenticBuilder,
    PlanReviewRequest,
    PlanReviewResponse,
    TeamFinished,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _fresh_seen() -> None:
    SEEN.clear()


def team(manager: Any, **limits: Any) -> MagenticBuilder:
    return (
        MagenticBuilder("research")
        .participants({"researcher": researcher, "writer": writer})
        .with_manager(manager, **limits)
    )


def magentic_events(result: Any, kind: str | None = None) -> list[dict[str, Any]]:
    found = [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, dict) and "magentic" in e.data
    ]
    return [e for e in found if kind is None or e["magentic"] == kind]


def finished(result: Any) -> TeamFinished:
    (done,) = [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TeamFinished)
    ]
    return done


async def test_the_manager_plans_then_leads_rounds_until_satisfied() -> None:
    manager = ScriptedManager(alternate(done_at=3))
    result = await team(manager).build().run("a report on otters", events="all")

    assert result.status is RunStatus.IDLE
    (conversation,) = result.outputs
    assert isinstance(conversation, Conversation)
    # task, plan, then per round an instruction and an answer, then the final answer
    authors = [m.author for m in conversation]
    assert authors == [
        "user",
        "manager",
        "manager",
        "researcher",
        "manager",
        "writer",
        "manager",
    ]
    assert conversation.last is not None
    assert conversation.last.text == "answer after 2 rounds, with plan 0"
    assert conversation.last.data == {"final_answer": "satisfied"}
    assert conversation[1].data == {
        "task_ledger": {"facts": "facts of a report on otters", "plan": "plan 0"}
    }
    assert conversation[2].text == "round 1: researcher, go on"
    # the ledgers, as events: one task ledger, a progress ledger per round (3: the third
    # says the request is satisfied)
    (task,) = magentic_events(result, "task_ledger")
    assert task == {
        "magentic": "task_ledger",
        "facts": "facts of a report on otters",
        "plan": "plan 0",
        "resets": 0,
    }
    rounds = magentic_events(result, "progress_ledger")
    assert [(e["round"], e["next_speaker"], e["is_request_satisfied"]) for e in rounds] == [
        (1, "researcher", False),
        (2, "writer", False),
        (3, "researcher", True),
    ]
    assert finished(result).reason == "satisfied"


async def test_each_participant_keeps_its_own_history() -> None:
    await team(ScriptedManager(alternate(done_at=4))).build().run("otters")
    # the researcher's second turn: task, plan, its instruction, its answer, the writer's
    # answer (broadcast), its new instruction — not the writer's instruction
    first, second = SEEN["researcher"]
    assert [m.text for m in first][2:] == ["round 1: researcher, go on"]
    assert [m.author for m in second] == [
        "user",
        "manager",
        "manager",
        "researcher",
        "writer",
        "manager",
    ]
    assert "round 2: writer, go on" not in [m.text for m in second]
    assert second.last is not None and second.last.text == "round 3: researcher, go on"


async def test_stalls_make_the_manager_replan_then_give_up_past_max_resets() -> None:
    manager = ScriptedManager(alternate(stalled=True))
    workflow = team(manager, max_stall_count=1, max_reset_count=1).build()
    result = await workflow.run("otters", events="all")

    assert result.status is RunStatus.IDLE
    kinds = [e["magentic"] for e in magentic_events(result)]
    # round 1: stall 1; round 2: stall 2 > 1 -> re-plan, the new plan's ledger (stall 1);
    # round 3: stall 2 again, but the resets are used up -> the final answer
    assert kinds == [
        "task_ledger",
        "progress_ledger",
        "progress_ledger",
        "reset",
        "task_ledger",
        "progress_ledger",
        "progress_ledger",
    ]
    stalls = [e["stalls"] for e in magentic_events(result, "progress_ledger")]
    assert stalls == [1, 2, 1, 2]
    plans = [e["plan"] for e in magentic_events(result, "task_ledger")]
    assert plans == ["plan 0", "plan 1"]
    assert finished(result).reason == "max_reset_count"
    (conversation,) = result.outputs
    assert conversation.last is not None
    assert conversation.last.text == "answer after 2 rounds, with plan 1"
    # after the re-plan the participants start again: task and the new plan only
    after_reset = SEEN["writer"][-1]
    assert [m.text for m in after_reset][:2] == [
        "otters",
        "Facts:\nfacts of otters\n\nThe plan:\nplan 1",
    ]
    assert len(after_reset) == 3  # task, new plan, its instruction


async def test_progress_after_a_stall_pays_the_stall_back() -> None:
    def wobble(context: Any) -> dict[str, Any]:
        speaker = ("researcher", "writer")[context.round % 2]
        return ledger(speaker, "go", progress=context.round % 2 == 1, done=context.round == 5)

    result = await team(ScriptedManager(wobble), max_stall_count=1).build().run("x", events="all")
    stalls = [e["stalls"] for e in magentic_events(result, "progress_ledger")]
    assert stalls == [1, 0, 1, 0, 1, 0]
    assert not magentic_events(result, "reset")
    assert finished(result).reason == "satisfied"


async def test_the_round_limit_ends_the_team_with_an_answer() -> None:
    result = (
        await team(ScriptedManager(alternate()), max_round_count=3)
        .build()
        .run("otters", events="all")
    )
    assert result.status is RunStatus.IDLE
    assert finished(result).reason == "max_rounds"
    assert len(magentic_events(result, "progress_ledger")) == 3
    (conversation,) = result.outputs
    assert conversation.last is not None
    assert conversation.last.text == "answer after 3 rounds, with plan 0"


async def test_a_next_speaker_that_is_no_participant_fails_naming_the_choices() -> None:
    manager = ScriptedManager(lambda context: ledger("editor", "edit"))
    result = await team(manager).build().run("otters", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    error = result.error
    while error is not None and not isinstance(error, LedgerError):
        error = error.__cause__
    assert isinstance(error, LedgerError)
    assert "'editor' is not a participant; choose one of researcher, writer" in str(error)


async def test_a_ledger_missing_a_field_fails_naming_it() -> None:
    async def no_plan(context: Any) -> dict[str, str]:
        return {"facts": "f"}

    manager = ScriptedManager(alternate(done_at=1))
    manager.plan = no_plan  # type: ignore[method-assign]
    result = await team(manager).build().run("otters", raise_on_failure=False)
    assert "'plan' is a required property" in str(result.error)


def test_the_builder_checks_its_manager_and_limits() -> None:
    with pytest.raises(TypeError, match="has no plan"):
        MagenticBuilder().with_manager(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_stall_count"):
        MagenticBuilder().with_manager(ScriptedManager(alternate()), max_stall_count=-1)
    with pytest.raises(ValueError, match="call with_manager"):
        MagenticBuilder().participants([researcher]).build()


# -- plan review, answered after a resume in a fresh workflow ----------------------------


def reviewed(manager: Any) -> Workflow:
    return team(manager).with_plan_review().build()


async def _asked(tmp_path: Path, run_id: str) -> tuple[str, str, PlanReviewRequest]:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = await reviewed(ScriptedManager(alternate(done_at=2))).run(
        "otters", checkpoint=url, run_id=run_id
    )
    assert result.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (pending,) = result.pending_requests
    assert isinstance(pending.request, PlanReviewRequest)
    return url, pending.request_id, pending.request


async def test_plan_review_approved_after_a_resume(tmp_path: Path) -> None:
    url, request_id, request = await _asked(tmp_path, "approve")
    assert request == PlanReviewRequest(task="otters", facts="facts of otters", plan="plan 0")
    manager = ScriptedManager(alternate(done_at=2))
    result = await reviewed(manager).resume(
        "approve", url, responses={request_id: PlanReviewResponse(approved=True)}, events="all"
    )
    assert result.status is RunStatus.IDLE
    assert magentic_events(result, "plan_review") == [
        {"magentic": "plan_review", "approved": True, "edited": False}
    ]
    (conversation,) = result.outputs
    assert conversation.last is not None
    assert conversation.last.text == "answer after 1 rounds, with plan 0"


async def test_plan_review_edited_after_a_resume(tmp_path: Path) -> None:
    url, request_id, _ = await _asked(tmp_path, "edit")
    manager = ScriptedManager(alternate(done_at=2))
    result = await reviewed(manager).resume(
        "edit", url, responses={request_id: PlanReviewResponse(plan="search, then write")}
    )
    (conversation,) = result.outputs
    assert conversation.last is not None
    assert conversation.last.text == "answer after 1 rounds, with search, then write"
    assert (
        "The plan (edited by a reviewer):\nsearch, then write" in [m.text for m in conversation][2]
    )
    # the manager's progress ledger was asked with the edited plan
    assert manager.contexts[0].ledger is not None
    assert manager.contexts[0].ledger.plan == "search, then write"


async def test_plan_review_rejected_replans_with_the_comments_and_asks_again(
    tmp_path: Path,
) -> None:
    url, request_id, _ = await _asked(tmp_path, "reject")
    workflow = reviewed(ScriptedManager(alternate(done_at=2)))
    again = await workflow.resume(
        "reject",
        url,
        responses={request_id: PlanReviewResponse(approved=False, comments="cite sources")},
    )
    assert again.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (pending,) = again.pending_requests
    assert pending.request.plan == "plan 0 (after: cite sources)"
    done = await workflow.resume(
        "reject", url, responses={pending.request_id: PlanReviewResponse()}
    )
    (conversation,) = done.outputs
    assert conversation.last is not None
    assert conversation.last.text == "answer after 1 rounds, with plan 0 (after: cite sources)"


async def test_a_nested_team_passes_its_plan_review_out_and_resumes(tmp_path: Path) -> None:
    # the outer workflow does not declare the request's class: its checkpoint hooks decode it
    @executor(id="tell")
    async def tell(conversation: Conversation, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(conversation[-1].text)

    def outer() -> Workflow:
        inner = reviewed(ScriptedManager(alternate(done_at=2)))
        nested = inner.as_executor("research")
        return WorkflowBuilder("outer").add_edge(nested, tell).set_start(nested).build()

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    asked = await outer().run("otters", checkpoint=url, run_id="nested")
    (pending,) = asked.pending_requests
    assert isinstance(pending.request, PlanReviewRequest)
    done = await outer().resume(
        "nested", url, responses={pending.request_id: PlanReviewResponse(plan="dig")}
    )
    assert done.outputs == ["answer after 1 rounds, with dig"]
