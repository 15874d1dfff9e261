"""Conversations: a list of :class:`ChatMessage`, to text and back, and to a typed record.

A team's transcript (``list[ChatMessage]``) meets steps that take a ``str`` or a typed
record; these are the composability design's canned adapters (``ConversationToText``,
``TextToConversation``, ``MessagesToStructured[T]``) as converters, so the builder checks
such an edge at build time and inserts the conversion as a visible node:

- ``conversation_to_text``: each message as ``role: content`` on its own lines; lossy (a
  content holding a newline or ``": "`` cannot be told apart from the next message);
- ``text_to_conversation``: a text as a one-message conversation from the ``user``;
  lossless, and not registered for the search (a way from every ``str`` to a list would
  open chains through ``list_to_json`` nobody asked for): pass it as an adapter;
- ``messages_to_structured``: the last message's content, read as a JSON object (inside a
  Markdown code fence or not), structured into the attrs class or dataclass the target
  declares; lossy (the rest of the conversation is dropped), and it raises, naming the
  type and what is wrong, when the content does not hold such an object.

:class:`MessagesToStructured` names the extraction for one type, for an explicit adapter:
``builder.connect(team, judge, adapter=MessagesToStructured[Verdict])``.
"""

from __future__ import annotations

import json
import re
import typing
from typing import Any, Generic, TypeVar

from plait.spi import Converter, type_name

from ._define import TypeFamily
from ._records import ChatMessage, _dict_to_record, _is_record

__all__ = [
    "Conversation",
    "MessagesToStructured",
    "STRUCTURED",
    "conversation_to_text",
    "messages_to_structured",
    "text_to_conversation",
]

T = TypeVar("T")

#: A conversation: its messages, oldest first.
Conversation = list[ChatMessage]

#: A JSON object inside a Markdown code fence (```json … ``` or ``` … ```), as models write.
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*)\n```$", re.DOTALL)


def _is_structured(tp: Any) -> bool:
    """An attrs class or dataclass other than a chat message (a message is no extraction)."""
    return _is_record(tp) and (typing.get_origin(tp) or tp) is not ChatMessage


#: What ``messages_to_structured`` builds: every attrs class and dataclass but ChatMessage.
STRUCTURED = TypeFamily("attrs class or dataclass (not ChatMessage)", _is_structured)


def _conversation_to_text(value: list[ChatMessage]) -> str:
    return "\n".join(f"{message.role}: {message.content}" for message in value)


def _text_to_conversation(value: str) -> list[ChatMessage]:
    return [ChatMessage("user", value)]


def _messages_to_structured(value: list[ChatMessage], target: Any) -> Any:
    what = type_name(target)
    if not value:
        raise ValueError(f"cannot extract a {what} from an empty conversation")
    content = value[-1].content.strip()
    fenced = _FENCE.match(content)
    if fenced is not None:
        content = fenced.group("body").strip()
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise ValueError(
            f"cannot extract a {what}: the last message ({value[-1].role}) holds no JSON "
            f"object ({exc}); it starts {content[:60]!r}"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(
            f"cannot extract a {what}: the last message holds a JSON "
            f"{type(data).__name__}, not an object"
        )
    return _dict_to_record(data, target)


conversation_to_text = Converter(
    list[ChatMessage], str, _conversation_to_text, False, "conversation_to_text"
)
"""``list[ChatMessage]`` → ``str``, one ``role: content`` line per message; lossy."""
text_to_conversation = Converter(
    str, list[ChatMessage], _text_to_conversation, True, "text_to_conversation"
)
"""``str`` → ``[ChatMessage("user", text)]``; lossless."""
messages_to_structured = Converter(
    list[ChatMessage], STRUCTURED, _messages_to_structured, False, "messages_to_structured"
)
"""``list[ChatMessage]`` → the record type the target declares, from the last message's
JSON; lossy, and raises when the message holds no such object."""


class MessagesToStructured(Generic[T]):
    """``MessagesToStructured[T]``: the converter that extracts a ``T`` (an attrs class or
    dataclass) from a conversation's last message, for ``connect(..., adapter=...)``.

    The converter search finds ``messages_to_structured`` on its own where an edge's
    target declares ``T`` and lossy conversion is allowed; this names it explicitly.
    """

    def __class_getitem__(cls, target: Any) -> Converter:
        if not _is_structured(target):
            raise TypeError(
                f"MessagesToStructured[T] needs an attrs class or dataclass, got "
                f"{type_name(target)}"
            )

        def extract(value: list[ChatMessage]) -> Any:
            return _messages_to_structured(value, target)

        return Converter(
            list[ChatMessage],
            target,
            extract,
            False,
            f"messages_to_structured[{type_name(target)}]",
        )
