"""The standard converters: registration, behaviour, lossless/lossy marks, round trips."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

import attrs
import plait_converters as std
import pytest
from hypothesis import given, settings, strategies as st
from plait_converters import ChatMessage, JsonText, converter_graph
from plait_testing import fake_entry_point, make_plugin_manager

LOSSLESS = {
    "dict_to_json",
    "dict_to_record",
    "int_to_float",
    "json_to_dict",
    "json_to_list",
    "list_to_json",
    "record_to_dict",
    "str_to_bytes",
    "str_to_chat_message",
}
LOSSY = {
    "bytes_to_str",
    "chat_message_to_str",
    "conversation_to_text",
    "float_to_int",
    "join_lines",
    "messages_to_structured",
}


def test_the_plugin_registers_every_standard_converter() -> None:
    (ep,) = [ep for ep in entry_points(group="plait") if ep.name == "converters"]
    assert ep.value == "plait_converters"
    manager = make_plugin_manager(
        fake_entry_point("converters", std, distribution="plait-converters")
    )
    registry = manager.registry("converter")
    assert registry.names() == sorted(LOSSLESS | LOSSY) == [c.name for c in std.CONVERTERS]
    assert {r.distribution for r in registry.values()} == {"plait-converters"}
    # the search is this distribution's own function: nothing more to register
    assert str(std.find_chain(int, float, manager=manager)) == "int_to_float"


def test_each_registration_resolves_to_the_public_converter() -> None:
    manager = make_plugin_manager(
        fake_entry_point("converters", std, distribution="plait-converters")
    )
    for reg in manager.registry("converter").values():
        assert reg.obj.resolve() is getattr(std, reg.name)


def test_the_public_names_are_listed_and_load() -> None:
    for name in std.__all__:
        assert getattr(std, name) is not None
    assert ChatMessage.__module__ == "plait_converters"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        std.nothing  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("conv", std.CONVERTERS, ids=lambda c: c.name)
def test_each_converter_is_marked_lossless_or_lossy(conv: Any) -> None:
    assert conv.lossless is (conv.name in LOSSLESS)


# --------------------------------------------------------------------------- behaviour


def test_numbers() -> None:
    assert std.int_to_float(3) == 3.0 and type(std.int_to_float(3)) is float
    with pytest.raises(ValueError, match="has no exact float"):
        std.int_to_float(2**53 + 1)
    with pytest.raises(OverflowError):
        std.int_to_float(10**400)
    assert std.float_to_int(2.9) == 2 and std.float_to_int(-2.9) == -2
    with pytest.raises(ValueError):
        std.float_to_int(math.nan)


def test_text_and_bytes() -> None:
    assert std.str_to_bytes("héllo") == "héllo".encode()
    assert std.bytes_to_str(b"ok \xff") == "ok \ufffd"
    assert std.join_lines(["a", "b"]) == "a\nb" == std.join_lines(["a\nb"])  # hence lossy


def test_json_text() -> None:
    assert std.dict_to_json({"a": [1, 2.5, None, True]}) == '{"a": [1, 2.5, null, true]}'
    assert std.list_to_json(["é"]) == '["é"]'
    assert std.json_to_dict(JsonText('{"a": 1}')) == {"a": 1}
    assert std.json_to_list(JsonText("[1]")) == [1]
    with pytest.raises(ValueError, match="holds a list, not an object"):
        std.json_to_dict(JsonText("[1]"))
    with pytest.raises(ValueError, match="holds a dict, not an array"):
        std.json_to_list(JsonText("{}"))
    with pytest.raises(ValueError, match="NaN is not JSON"):
        std.json_to_list(JsonText("[NaN]"))
    with pytest.raises(TypeError, match=r"\$\['a'\]\[0\]: a tuple has no JSON form"):
        std.dict_to_json({"a": [(1, 2)]})
    with pytest.raises(TypeError, match="key 1 is not a str"):
        std.dict_to_json({1: "x"})
    with pytest.raises(ValueError, match=r"\$\[0\]: inf has no JSON form"):
        std.list_to_json([math.inf])


@attrs.frozen
class Inner:
    when: dt.datetime
    blob: bytes


@attrs.frozen
class Sample:
    n: int
    text: str
    ratios: list[float]
    inner: Inner | None = None


@dataclasses.dataclass
class Row:
    key: str
    values: dict[str, int]


def test_records_and_dicts() -> None:
    sample = Sample(1, "x", [0.5], Inner(dt.datetime(2024, 1, 2, 3, 4, 5), b"\x00"))
    data = std.record_to_dict(sample)
    assert data["inner"]["when"] == "2024-01-02T03:04:05" and data["n"] == 1
    assert std.dict_to_record(data, Sample) == sample
    assert std.dict_to_record({"key": "k", "values": {"a": 1}}, Row) == Row("k", {"a": 1})
    with pytest.raises(ValueError, match="not a valid Sample: .*required field missing @ \\$.text"):
        std.dict_to_record({"n": 1, "ratios": []}, Sample)
    with pytest.raises(ValueError, match="extra fields"):
        std.dict_to_record({"key": "k", "values": {}, "more": 1}, Row)


def test_records_family_covers_attrs_classes_and_dataclasses_only() -> None:
    assert Sample in std.RECORDS and Row in std.RECORDS and ChatMessage in std.RECORDS
    assert dict not in std.RECORDS and int not in std.RECORDS


def test_chat_messages() -> None:
    assert std.str_to_chat_message("hi") == ChatMessage("user", "hi")
    assert std.chat_message_to_str(ChatMessage("assistant", "yo")) == "yo"
    assert ChatMessage.__module__ == "plait_converters"


def test_standard_chains_stay_unsurprising() -> None:
    graph = converter_graph(
        make_plugin_manager(fake_entry_point("converters", std, distribution="plait-converters"))
    )
    # JSON text is produced only where a target asks for JsonText, never for a plain str
    assert graph.find_chain(list[str], str) is None
    assert str(graph.find_chain(list[str], str, allow_lossy=True)) == "join_lines"
    assert str(graph.find_chain(Sample, JsonText)) == "record_to_dict -> dict_to_json"
    assert str(graph.find_chain(JsonText, Row)) == "json_to_dict -> dict_to_record"
    assert graph.find_chain(str, dict[str, Any]) is not None  # str -> ChatMessage -> dict
    assert graph.find_chain(Sample, Row) is None  # never one record reinterpreted as another
    assert graph.find_chain(str, Row) is None
    assert graph.find_chain(ChatMessage, str) is None  # drops the role: lossy
    assert graph.find_chain(float, int) is None


# --------------------------------------------------------------------------- round trips

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=12,
)
_json_dicts = st.dictionaries(st.text(), _json, max_size=5)
_json_lists = st.lists(_json, max_size=5)
_samples = st.builds(
    Sample,
    st.integers(),
    st.text(),
    st.lists(st.floats(allow_nan=False)),
    st.none()
    | st.builds(Inner, st.datetimes(timezones=st.none() | st.just(dt.timezone.utc)), st.binary()),
)


def _texts(values: st.SearchStrategy[Any]) -> st.SearchStrategy[JsonText]:
    """JSON texts of those values, formatted in several ways."""
    indent = st.none() | st.integers(0, 3)
    return st.tuples(values, indent).map(lambda vi: JsonText(json.dumps(vi[0], indent=vi[1])))


def _same_json(a: str, b: str) -> bool:
    return bool(json.loads(a) == json.loads(b))


def _eq(a: Any, b: Any) -> bool:
    return bool(a == b)


#: lossless converter -> (values it takes, its inverse, what "the same" means)
ROUND_TRIPS: dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], Any], Any]] = {
    "int_to_float": (st.integers(-(2**53), 2**53), std.float_to_int, _eq),
    "str_to_bytes": (st.text(), std.bytes_to_str, _eq),
    "str_to_chat_message": (st.text(), std.chat_message_to_str, _eq),
    "dict_to_json": (_json_dicts, std.json_to_dict, _eq),
    "list_to_json": (_json_lists, std.json_to_list, _eq),
    "json_to_dict": (_texts(_json_dicts), std.dict_to_json, _same_json),
    "json_to_list": (_texts(_json_lists), std.list_to_json, _same_json),
    "record_to_dict": (_samples, lambda d: std.dict_to_record(d, Sample), _eq),
    "dict_to_record": (_samples.map(std.record_to_dict), std.record_to_dict, _eq),
}


def test_every_lossless_standard_converter_has_a_round_trip() -> None:
    assert set(ROUND_TRIPS) == {c.name for c in std.CONVERTERS if c.lossless}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_lossless_standard_converters_round_trip(name: str, data: st.DataObject) -> None:
    values, inverse, same = ROUND_TRIPS[name]
    conv = next(c for c in std.CONVERTERS if c.name == name)
    value = data.draw(values)
    converted = conv(value, Sample) if name == "dict_to_record" else conv(value)
    assert same(inverse(converted), value)
