"""Message and Conversation: values, validation, and their checkpoint encoding."""

from __future__ import annotations

import plait_durable
import pytest
from plait_teams import Conversation, Message, as_message

CONVERSATION_REF = "plait_teams._conversation:Conversation"


def test_a_message_names_a_bad_field() -> None:
    with pytest.raises(TypeError, match="'text'"):
        Message("assistant", "writer", 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Message.data.k must be JSON data"):
        Message("assistant", "writer", "x", {"k": object()})


def test_a_conversation_is_append_only_and_shares_its_messages() -> None:
    first = Conversation.of("write a poem")
    second = first.append(Message("assistant", "writer", "roses"))
    assert len(first) == 1 and len(second) == 2
    assert second[0] is first[0]
    assert second.last == Message("assistant", "writer", "roses")
    assert isinstance(second[1:], Conversation) and len(second[1:]) == 1
    assert second.by("writer") == Conversation((Message("assistant", "writer", "roses"),))
    assert second.transcript() == "user: write a poem\nwriter: roses"
    assert Conversation().last is None


def test_a_conversation_holds_messages_only() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        Conversation((Message("user", "user", "a"), "b"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="append a plait_teams.Message"):
        Conversation().append("b")  # type: ignore[arg-type]


def test_as_message_takes_text_or_a_message() -> None:
    assert as_message("hi", author="critic") == Message("assistant", "critic", "hi")
    with pytest.raises(TypeError, match="'critic' answered 3"):
        as_message(3, author="critic")


def test_a_conversation_round_trips_through_the_checkpoint_codec() -> None:
    conversation = Conversation.of("task").append(
        Message("assistant", "writer", "draft", {"score": 3, "tags": ["a"]})
    )
    encoded = plait_durable.encode_value(conversation)
    # the conversation is stored as a list of its messages: the blob layer's mountain range
    assert encoded["v"] == [
        {"role": "user", "author": "user", "text": "task"},
        {
            "role": "assistant",
            "author": "writer",
            "text": "draft",
            "data": {"score": 3, "tags": ["a"]},
        },
    ]
    types = {CONVERSATION_REF: Conversation}
    assert plait_durable.decode_value(encoded, types) == conversation


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ({"role": "user", "author": "u"}, "lacks the field 'text'"),
        ({"role": "user", "author": "u", "text": "t", "code": "x"}, "unknown field"),
        ({"role": 1, "author": "u", "text": "t"}, "does not decode"),
        ("text", "must be a dict"),
    ],
)
def test_a_stored_message_is_checked_field_by_field(stored: object, problem: str) -> None:
    encoded = {"__plait__": CONVERSATION_REF, "v": [stored]}
    types = {CONVERSATION_REF: Conversation}
    with pytest.raises(Exception, match=problem):
        plait_durable.decode_value(encoded, types)
