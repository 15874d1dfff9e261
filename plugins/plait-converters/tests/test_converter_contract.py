"""Every standard converter against plait.testing's ConverterContract."""

from __future__ import annotations

from typing import Any

import pytest
from plait_converters import (
    ChatMessage,
    JsonText,
    bytes_to_str,
    chat_message_to_str,
    dict_to_json,
    float_to_int,
    int_to_float,
    join_lines,
    json_to_dict,
    json_to_list,
    list_to_json,
    str_to_bytes,
    str_to_chat_message,
)
from plait_testing import ConverterContract

TEXTS = ["", "plain", "žluťoučký kůň", "emoji 🧵", "line\nbreak"]


class TestIntToFloat(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return int_to_float

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [0, 1, -7, 2**52, -(2**53)]

    @pytest.fixture
    def inverse(self) -> Any:
        return float_to_int


class TestFloatToInt(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return float_to_int

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [0.0, 1.5, -2.75, 1e6]

    @pytest.fixture
    def inverse(self) -> Any:
        return int_to_float

    def test_it_really_loses_something(self, converter: Any) -> None:
        assert not converter.lossless
        assert int_to_float(converter(1.5)) != 1.5


class TestStrToBytes(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return str_to_bytes

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return TEXTS

    @pytest.fixture
    def inverse(self) -> Any:
        return bytes_to_str


class TestBytesToStr(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return bytes_to_str

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [b"", b"ascii", "žluť".encode(), b"\xff\xfe broken"]

    @pytest.fixture
    def inverse(self) -> Any:
        return str_to_bytes


class TestDictToJson(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return dict_to_json

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [{}, {"a": 1, "b": [1, 2.5, None], "c": {"d": "é"}}]

    @pytest.fixture
    def inverse(self) -> Any:
        return json_to_dict


class TestListToJson(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return list_to_json

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [[], [1, "two", {"three": 3.0}, [None, True]]]

    @pytest.fixture
    def inverse(self) -> Any:
        return json_to_list


class TestJsonToDict(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return json_to_dict

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        # in dict_to_json's own layout, so the round trip compares text with text
        return [JsonText('{"a": [1, 2], "b": {"c": "é"}}'), JsonText("{}")]

    @pytest.fixture
    def inverse(self) -> Any:
        return dict_to_json


class TestJoinLines(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return join_lines

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [["a", "b"], [], ["one"]]


class TestStrToChatMessage(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return str_to_chat_message

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return TEXTS

    @pytest.fixture
    def inverse(self) -> Any:
        return chat_message_to_str


class TestChatMessageToStr(ConverterContract):
    @pytest.fixture
    def converter(self) -> Any:
        return chat_message_to_str

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        return [ChatMessage("user", "hi"), ChatMessage("assistant", "hello")]

    @pytest.fixture
    def inverse(self) -> Any:
        return str_to_chat_message
