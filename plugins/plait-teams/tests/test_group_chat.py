"""GroupChatBuilder: speaker selection (round-robin, a function, an LLM manager), termination
(max_rounds, a condition function or expression, the manager) and what each participant
sees, on scripted agents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import llm
import plait
import pytest
from plait import CustomEvent, ExpressionError, RunStatus, WorkflowContext
from plait_llm import AgentExecutor
from plait_teams import (
    Conversation,
    GroupChatBuilder,
    LLMSelector,
    SelectionError,
    TeamFinished,
    TeamState,
    participant,
)
from team_helpers import scripted

pytestmark = pytest.mark.anyio


def texts(result: plait.WorkflowRunResult) -> list[str]:
    return [m.text for m in result.outputs[0]]


def finished(result: plait.WorkflowRunResult) -> TeamFinished:
    [done] = [
        e.data
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, TeamFinished)
    ]
    return done


async def test_round_robin_is_the_default() -> None:
    chat = GroupChatBuilder("chat").participants([scripted("a"), scripted("b"), scripted("c")])
    result = await chat.with_max_rounds(5).build().run("go")
    assert texts(result) == ["go", "a 1", "b 2", "c 3", "a 4", "b 5"]
    assert finished(result) == TeamFinished("chat", "max_rounds", 5)


async def test_a_function_selects_and_none_finishes() -> None:
    picks: list[tuple[int, str | None]] = []

    def select(state: TeamState) -> str | None:
        picks.append((state.round, state.last_speaker))
        return ["b", "b", "a", None][state.round]

    chat = GroupChatBuilder().participants([scripted("a"), scripted("b")]).with_selector(select)
    result = await chat.with_max_rounds(10).build().run("go")
    assert [m.author for m in result.outputs[0]] == ["user", "b", "b", "a"]
    assert picks == [(0, None), (1, "b"), (2, "b"), (3, "a")]
    assert finished(result).reason == "manager"


async def test_an_async_selector_is_awaited() -> None:
    async def select(state: TeamState) -> str | None:
        return "b" if state.round < 2 else None

    chat = GroupChatBuilder().participants([scripted("a"), scripted("b")]).with_selector(select)
    assert [m.author for m in (await chat.build().run("go")).outputs[0]] == ["user", "b", "b"]


async def test_a_selector_naming_no_participant_is_an_error_naming_the_choices() -> None:
    chat = GroupChatBuilder("chat").participants([scripted("a"), scripted("b")])
    workflow = chat.with_selector(lambda state: "zed").build()
    result = await workflow.run("go", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert "chose 'zed', which is no participant (the choices: a, b)" in str(result.error)


async def test_a_condition_function_terminates() -> None:
    chat = (
        GroupChatBuilder()
        .participants([scripted("a"), scripted("b")])
        .with_termination(lambda state: state.conversation[-1].text == "b 4")
        .with_max_rounds(10)
    )
    result = await chat.build().run("go")
    assert texts(result)[-1] == "b 4"
    assert finished(result).reason == "condition"


async def test_a_condition_expression_terminates() -> None:
    chat = (
        GroupChatBuilder()
        .participants([scripted("writer"), scripted("critic", done_at=4)])
        .with_termination("contains(last.text, 'DONE') || round >= 9")
        .with_max_rounds(20)
    )
    result = await chat.build().run("go")
    assert texts(result)[-1] == "critic DONE"
    assert finished(result) == TeamFinished("team", "condition", 4)
    by_count = (
        GroupChatBuilder()
        .participants([scripted("a")])
        .with_termination("size(messages) >= 3 && speaker == 'a'")
    )
    assert len((await by_count.build().run("go")).outputs[0]) == 3


def test_a_bad_expression_is_an_error_at_once() -> None:
    with pytest.raises(ExpressionError):
        GroupChatBuilder().with_termination("round >= ")
    with pytest.raises(TypeError, match="an expression or a function"):
        GroupChatBuilder().with_termination(3)  # type: ignore[arg-type]


async def test_a_view_filters_what_a_participant_sees() -> None:
    seen: dict[str, list[int]] = {"a": [], "b": []}

    def watcher(name: str) -> Any:
        async def agent(conversation: Conversation) -> str:
            seen[name].append(len(conversation))
            return f"{name} spoke"

        agent.__name__ = name
        return agent

    def own_and_task(name: str, conversation: Conversation) -> Conversation:
        return Conversation(tuple(m for m in conversation if m.author in (name, "user")))

    chat = (
        GroupChatBuilder()
        .participants([watcher("a"), watcher("b")])
        .with_view(own_and_task)
        .with_max_rounds(4)
    )
    result = await chat.build().run("go")
    assert len(result.outputs[0]) == 5  # the team's conversation is whole
    assert seen == {"a": [1, 2], "b": [1, 2]}


def test_descriptions_come_from_the_participant() -> None:
    async def writer(conversation: Conversation) -> str:
        """Writes drafts.

        More here."""
        return "x"

    chat = (
        GroupChatBuilder()
        .add_participant(writer)
        .add_participant(scripted("critic"), description="Finds faults.")
    )
    manager = chat.manager()
    assert manager.descriptions == {"writer": "Writes drafts.", "critic": "Finds faults."}


class ScriptedManager:
    """An ``ask``-able agent answering from a script, recording the prompts."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def ask(self, prompt: str, ctx: WorkflowContext[Any, Any] | None = None) -> Any:
        self.prompts.append(prompt)
        return self.answers.pop(0)


async def test_an_llm_manager_picks_from_the_descriptions() -> None:
    agent = ScriptedManager(
        [
            {"next": "critic", "done": False},
            {"next": "writer", "done": False},
            {"next": None, "done": True},
        ]
    )
    chat = (
        GroupChatBuilder("review")
        .add_participant(scripted("writer"), description="Writes drafts.")
        .add_participant(scripted("critic"), description="Finds faults.")
        .with_llm_manager(agent)
    )
    result = await chat.build().run("a haiku")
    assert [m.author for m in result.outputs[0]] == ["user", "critic", "writer"]
    assert finished(result).reason == "manager"
    first = agent.prompts[0]
    assert "- writer: Writes drafts.\n- critic: Finds faults." in first
    assert "user: a haiku" in first


async def test_an_unknown_name_is_retried_once() -> None:
    agent = ScriptedManager(
        [
            {"next": "editor", "done": False},
            {"next": "critic", "done": False},
            {"next": None, "done": True},
        ]
    )
    chat = GroupChatBuilder().participants([scripted("writer"), scripted("critic")])
    result = await chat.with_llm_manager(agent).build().run("go")
    assert [m.author for m in result.outputs[0]] == ["user", "critic"]
    assert "named no participant. Choose one of: writer, critic." in agent.prompts[1]


async def test_an_unknown_name_twice_is_an_error_naming_the_choices() -> None:
    agent = ScriptedManager([{"next": "editor", "done": False}, "nonsense"])
    chat = GroupChatBuilder().participants([scripted("writer"), scripted("critic")])
    result = await chat.with_llm_manager(agent).build().run("go", raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    chain: list[BaseException] = []
    error: BaseException | None = result.error
    while error is not None:
        chain.append(error)
        error = error.__cause__
    assert any(isinstance(e, SelectionError) for e in chain)
    assert "the choices: writer, critic" in str(result.error)


class JsonModel(llm.Model):
    """A fake llm model with schema support answering a scripted JSON list (no network)."""

    model_id = "plait-teams-test-manager"
    supports_schema = True

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        yield json.dumps(self.answers.pop(0))


async def test_an_llm_manager_on_a_plait_llm_model() -> None:
    model = JsonModel([{"next": "b", "done": False}, {"next": None, "done": True}])
    chat = GroupChatBuilder().participants([scripted("a"), scripted("b")]).with_llm_manager(model)
    result = await chat.build().run("go")
    assert [m.author for m in result.outputs[0]] == ["user", "b"]
    assert isinstance(LLMSelector(model).agent, AgentExecutor)


class EchoModel(llm.Model):
    """A fake streaming model: answers its prompt's last line, word by word."""

    model_id = "plait-teams-test-echo"
    can_stream = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        words = f"echo {prompt.prompt.splitlines()[-1]}".split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "


async def test_an_agent_participant_streams_its_tokens_from_its_node() -> None:
    agent = AgentExecutor("echo", EchoModel())
    made = participant(agent, description="echoes")
    assert (made.name, made.description) == ("echo", "echoes")
    chat = GroupChatBuilder().participants([agent]).with_max_rounds(1)
    result = await chat.build().run("hello there")
    assert texts(result) == ["hello there", "echo user: hello there"]
    tokens = [
        (e.executor_id, e.data["token"])
        for e in result.events
        if isinstance(e, CustomEvent) and isinstance(e.data, dict) and "token" in e.data
    ]
    assert tokens and all(executor == "echo" for executor, _ in tokens)
    assert "".join(t for _, t in tokens) == "echo user: hello there"


async def test_an_llm_model_is_a_participant_by_name() -> None:
    chat = GroupChatBuilder().participants({"echo": EchoModel()}).with_max_rounds(1)
    result = await chat.build().run("hi")
    assert result.outputs[0][-1].author == "echo"
    assert result.outputs[0][-1].text == "echo user: hi"
    with pytest.raises(ValueError, match="needs a name"):
        participant(EchoModel())
