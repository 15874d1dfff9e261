"""Handoff and Magentic teams of plait-llm agents, on fake ``llm`` models registered
through llm's own plugin mechanism (no network, no key): a handoff by structured output
(and its corrective retry), a handoff by a tool call, and a Magentic manager whose ledgers
come from a model as validated structured output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from plait import CustomEvent, RunStatus
from plait_llm import AgentExecutor
from plait_teams import Conversation, HandoffBuilder, LLMMagenticManager, MagenticBuilder


class Scripted(llm.Model):
    """Answers the next text of its script; records every prompt and system prompt."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.answers: list[str] = []
        self.prompts: list[tuple[str, str | None]] = []

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        self.prompts.append((prompt.prompt, prompt.system))
        yield self.answers.pop(0)


class Caller(llm.Model):
    """Calls its ``handoff_to_refund`` tool once, then answers with a sentence."""

    model_id = "teams-test-caller"
    supports_tools = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        if prompt.tool_results:
            yield "Passing you to refunds."
            return
        (tool,) = [t for t in prompt.tools if t.name == "handoff_to_refund"]
        response.add_tool_call(llm.ToolCall(name=tool.name, arguments={"reason": "money back"}))
        yield ""


class Models:
    def __init__(self) -> None:
        self.triage = Scripted("teams-test-triage")
        self.refund = Scripted("teams-test-refund")
        self.manager = Scripted("teams-test-manager")

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        for model in (self.triage, self.refund, self.manager, Caller()):
            register(model)


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="plait-teams-test-models")
    try:
        yield plugin
    finally:
        llm.plugins.pm.unregister(plugin)


def _agent(name: str, model_id: str) -> AgentExecutor:
    return AgentExecutor(name, llm.get_model(model_id), system=f"You are the {name} desk.")


def _desk(triage_model: str) -> Any:
    return (
        HandoffBuilder("desk")
        .participants([_agent("triage", triage_model), _agent("refund", "teams-test-refund")])
        .with_start_agent("triage")
        .add_handoff("triage", ["refund"])
        .build()
    )


def _data(result: Any, key: str) -> list[Any]:
    return [
        e.data[key]
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, dict) and key in e.data
    ]


def test_an_llm_agent_hands_off_by_structured_output(models: Models) -> None:
    models.triage.answers = [
        json.dumps({"text": "Passing you on.", "handoff_to": "refund", "reason": "a refund"})
    ]
    models.refund.answers = [json.dumps({"text": "Refunded."})]
    result = _desk("teams-test-triage").run_sync("My kettle broke.", events="all")

    (conversation,) = result.outputs
    assert [(m.author, m.text) for m in conversation] == [
        ("user", "My kettle broke."),
        ("triage", "Passing you on."),
        ("refund", "Refunded."),
    ]
    assert _data(result, "handoff") == [{"from": "triage", "to": "refund", "reason": "a refund"}]
    # the model was told whom it may hand off to, and asked for the decision's JSON
    prompt, system = models.triage.prompts[0]
    assert system is not None and "- refund: " in system
    assert '"enum": ["refund", null]' in prompt
    # refund hands off to nobody: its schema allows no target
    assert '"handoff_to": {"type": "null"' in models.refund.prompts[0][0]


def test_a_handoff_outside_the_rules_gets_one_corrective_retry(models: Models) -> None:
    models.triage.answers = [
        json.dumps({"text": "x", "handoff_to": "orders", "reason": "?"}),
        json.dumps({"text": "Passing you on.", "handoff_to": "refund", "reason": "a refund"}),
    ]
    models.refund.answers = [json.dumps({"text": "Refunded."})]
    result = _desk("teams-test-triage").run_sync("My kettle broke.")
    assert [m.author for m in result.outputs[0]] == ["user", "triage", "refund"]
    correction = models.triage.prompts[1][0]
    assert "Your answer could not be used: at $.handoff_to" in correction


def test_an_llm_agent_hands_off_by_a_tool_call(models: Models) -> None:
    models.refund.answers = [json.dumps({"text": "Refunded."})]
    result = _desk("teams-test-caller").run_sync("My kettle broke.", events="all")
    assert result.status is RunStatus.IDLE
    (conversation,) = result.outputs
    assert [(m.author, m.text) for m in conversation][1:] == [
        ("triage", "Passing you to refunds."),
        ("refund", "Refunded."),
    ]
    assert _data(result, "handoff") == [{"from": "triage", "to": "refund", "reason": "money back"}]


def test_an_llm_magentic_manager_gives_validated_ledgers(models: Models) -> None:
    def progress(speaker: str, done: bool = False) -> str:
        return json.dumps(
            {
                "is_request_satisfied": done,
                "is_in_loop": False,
                "is_progress_being_made": True,
                "next_speaker": speaker,
                "instruction": f"{speaker}, go",
            }
        )

    models.manager.answers = [
        json.dumps({"facts": "otters", "plan": "researcher finds"}),
        progress("librarian"),  # no such participant: the corrective retry says so
        progress("researcher"),
        progress("researcher", done=True),
        "Otters hold hands.",
    ]

    async def researcher(conversation: Conversation) -> str:
        return "They hold hands."

    team = (
        MagenticBuilder("study")
        .participants({"researcher": researcher})
        .with_manager(LLMMagenticManager("teams-test-manager"))
        .build()
    )
    result = team.run_sync("otters", events="all")
    (conversation,) = result.outputs
    assert conversation.last is not None and conversation.last.text == "Otters hold hands."
    rounds = [e for e in _data(result, "magentic") if e == "progress_ledger"]
    assert len(rounds) == 2
    correction = models.manager.prompts[2][0]
    assert "Your answer could not be used: at $.next_speaker" in correction
    assert "'librarian' is not one of ['researcher']" in correction
