"""The standard converters as one table, for code that wants them all at once."""

from __future__ import annotations

from plait.spi import Converter

from ._conversation import conversation_to_text, messages_to_structured
from ._records import chat_message_to_str, dict_to_record, record_to_dict, str_to_chat_message
from ._standard import (
    bytes_to_str,
    dict_to_json,
    float_to_int,
    int_to_float,
    join_lines,
    json_to_dict,
    json_to_list,
    list_to_json,
    str_to_bytes,
)

__all__ = ["CONVERTERS"]

#: Every standard converter, in name order.
CONVERTERS: tuple[Converter, ...] = tuple(
    sorted(
        (
            bytes_to_str,
            chat_message_to_str,
            conversation_to_text,
            dict_to_json,
            dict_to_record,
            float_to_int,
            int_to_float,
            join_lines,
            json_to_dict,
            json_to_list,
            list_to_json,
            messages_to_structured,
            record_to_dict,
            str_to_bytes,
            str_to_chat_message,
        ),
        key=lambda c: c.name,
    )
)
