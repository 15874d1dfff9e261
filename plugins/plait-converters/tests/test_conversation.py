"""Conversations (``list[ChatMessage]``) to text and back, and to a typed record: the
composability design's ConversationToText, TextToConversation and MessagesToStructured[T]."""

from __future__ import annotations

import dataclasses
from typing import Any

import attrs
import plait_converters as std
import pytest
from plait_converters import (
    ChatMessage,
    MessagesToStructured,
    conversation_to_text,
    messages_to_structured,
    text_to_conversation,
)
from plait_testing import ConverterContract, fake_entry_point, make_plugin_manager


@attrs.frozen
class Verdict:
    approved: bool
    reason: str


@dataclasses.dataclass
class Score:
    value: float


TRANSCRIPT = [
    ChatMessage("user", "Review the draft."),
    ChatMessage("critic", "Too long."),
    ChatMessage("judge", '{"approved": false, "reason": "too long"}'),
]


class TestTextToConversation(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return text_to_conversation

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return ["", "plain", "line\nbreak", "role: not a role"]

    @pytest.fixture
    def inverse(self) -> Any:
        # one user message reads back as itself, behind its role
        return lambda messages: messages[0].content

    def test_a_text_is_one_message_from_the_user(self) -> None:
        assert text_to_conversation.fn("hi") == [ChatMessage("user", "hi")]
        assert text_to_conversation.lossless


class TestConversationToText(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return conversation_to_text

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [[], TRANSCRIPT]

    def test_each_message_is_a_role_and_content_line(self) -> None:
        assert (
            conversation_to_text.fn(TRANSCRIPT[:2]) == "user: Review the draft.\ncritic: Too long."
        )

    def test_it_is_lossy_two_conversations_give_one_text(self) -> None:
        one = [ChatMessage("user", "a\nassistant: b")]
        two = [ChatMessage("user", "a"), ChatMessage("assistant", "b")]
        assert not conversation_to_text.lossless
        assert conversation_to_text.fn(one) == conversation_to_text.fn(two)


def test_the_last_message_becomes_the_record_the_target_declares() -> None:
    assert messages_to_structured.fn(TRANSCRIPT, Verdict) == Verdict(False, "too long")
    fenced = [ChatMessage("assistant", 'Here:\n```json\n{"value": 0.5}\n```')]
    with pytest.raises(ValueError, match="holds no JSON object"):
        messages_to_structured.fn(fenced, Score)  # text before the fence: not the object
    only_fence = [ChatMessage("assistant", '```json\n{"value": 0.5}\n```')]
    assert messages_to_structured.fn(only_fence, Score) == Score(0.5)
    assert not messages_to_structured.lossless


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "cannot extract a .*Verdict from an empty conversation"),
        ([ChatMessage("judge", "yes")], r"the last message \(judge\) holds no JSON object"),
        ([ChatMessage("judge", "[1, 2]")], "holds a JSON list, not an object"),
        ([ChatMessage("judge", '{"approved": true}')], "not a valid Verdict: .*reason"),
    ],
)
def test_what_cannot_be_extracted_is_an_error_naming_the_type(
    messages: list[ChatMessage], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        messages_to_structured.fn(messages, Verdict)


def test_messages_to_structured_of_a_type_is_a_converter_for_an_explicit_adapter() -> None:
    named = MessagesToStructured[Verdict]
    assert (named.source, named.target, named.lossless) == (list[ChatMessage], Verdict, False)
    assert named.fn(TRANSCRIPT) == Verdict(False, "too long")
    assert named.name == "messages_to_structured[test_conversation.Verdict]"
    with pytest.raises(TypeError, match="needs an attrs class or dataclass, got int"):
        MessagesToStructured[int]
    with pytest.raises(TypeError, match="got plait_converters.ChatMessage"):
        MessagesToStructured[ChatMessage]


def test_the_search_finds_them_and_lossy_ones_only_when_allowed() -> None:
    manager = make_plugin_manager(
        fake_entry_point("converters", std, distribution="plait-converters")
    )
    graph = std.converter_graph(manager)
    conversation = list[ChatMessage]
    assert graph.find_chain(conversation, str) is None  # lossy: not without permission
    to_text = graph.find_chain(conversation, str, allow_lossy=True)
    assert to_text is not None and [s.name for s in to_text.steps] == ["conversation_to_text"]
    # text -> conversation is an explicit adapter: no str turns into a list on its own
    assert "text_to_conversation" not in manager.registry("converter").names()
    strict = graph.find_chain(conversation, Verdict)  # lossless only: never the extraction
    assert strict is None or "messages_to_structured" not in [s.name for s in strict.steps]
    typed = graph.find_chain(conversation, Verdict, allow_lossy=True)
    assert typed is not None and [s.name for s in typed.steps] == ["messages_to_structured"]
    assert typed.steps[0].function()(TRANSCRIPT) == Verdict(False, "too long")
    # a conversation is not "extracted" into one chat message
    single = graph.find_chain(conversation, ChatMessage, allow_lossy=True)
    assert single is None or "messages_to_structured" not in [s.name for s in single.steps]
