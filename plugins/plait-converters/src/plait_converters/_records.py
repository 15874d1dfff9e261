"""Records (attrs classes and dataclasses) and chat messages."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import attrs
from plait.spi import Converter

from ._define import TypeFamily
from ._messages import message_converter

__all__ = [
    "RECORDS",
    "ChatMessage",
    "chat_message_to_str",
    "dict_to_record",
    "record_to_dict",
    "str_to_chat_message",
]


def _is_record(tp: Any) -> bool:
    cls = typing.get_origin(tp) or tp
    return isinstance(cls, type) and (attrs.has(cls) or dataclasses.is_dataclass(cls))


#: Every attrs class and dataclass (parametrised generic ones too).
RECORDS = TypeFamily("attrs class or dataclass", _is_record)


def _record_to_dict(value: Any) -> dict[str, Any]:
    data: dict[str, Any] = message_converter().unstructure(value)
    return data


def _dict_to_record(value: dict[str, Any], target: Any) -> Any:
    import cattrs  # imported by message_converter() already; not when the plugin loads

    try:
        return message_converter().structure(value, target)
    except cattrs.BaseValidationError as exc:
        details = "; ".join(cattrs.transform_error(exc))
        raise ValueError(f"not a valid {getattr(target, '__name__', target)}: {details}") from exc


@attrs.frozen
class ChatMessage:
    """One message of a conversation: who speaks (``user``, ``assistant`` …) and what."""

    role: str
    content: str


# node ids and messages name types by module: show the public one, not ``._records``
ChatMessage.__module__ = "plait_converters"


def _str_to_chat_message(value: str) -> ChatMessage:
    return ChatMessage("user", value)


def _chat_message_to_str(value: ChatMessage) -> str:
    return value.content


record_to_dict = Converter(RECORDS, dict[str, Any], _record_to_dict, True, "record_to_dict")
"""Any attrs instance or dataclass → its JSON-ready ``dict`` (through
:func:`message_converter`, so registered cattrs hooks apply); lossless."""
dict_to_record = Converter(dict[str, Any], RECORDS, _dict_to_record, True, "dict_to_record")
"""``dict`` → the attrs class or dataclass the target declares; raises on missing, extra or
ill-typed keys, so nothing is lost."""
str_to_chat_message = Converter(str, ChatMessage, _str_to_chat_message, True, "str_to_chat_message")
"""``str`` → ``ChatMessage("user", text)``; lossless."""
chat_message_to_str = Converter(
    ChatMessage, str, _chat_message_to_str, False, "chat_message_to_str"
)
"""``ChatMessage`` → its ``content``; lossy (the role is dropped)."""
