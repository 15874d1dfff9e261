"""What expressions evaluate to: operators, paths, missing keys, functions."""

from __future__ import annotations

from typing import Any

import pytest
from plait import ExpressionError
from plait_expr import PlaitLanguage

LANGUAGE = PlaitLanguage()


def ev(text: str, data: Any = None) -> Any:
    """Compile ``text`` and evaluate it over ``data``."""
    return LANGUAGE.compile(text).evaluate(data if data is not None else {})


DATA: dict[str, Any] = {
    "steps": {"qa": {"output": {"is_approved": True, "score": 0.75, "tags": ["a", "b"]}}},
    "attempts": 1,
    "message": {"text": "Hello World", "n": None, "items": [1, 2, 3], "__class__": "key"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("steps.qa.output.is_approved == true && attempts < 3", True),
        ("steps.qa.output.is_approved == false || attempts >= 3", False),
        ("!steps.qa.output.is_approved", False),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 / 2", 3.5),
        ("7 % 3", 1),
        ("-7 % 3", 2),
        ("-attempts", -1),
        ("--attempts", 1),
        ("2 - 3 - 4", -5),
        ("1 < 2 == true", True),
        ("'a' < 'b'", True),
        ("1 == 1.0", True),
        ("true == 1", False),
        ("null == false", False),
        ("[1, [2]] == [1, [2]]", True),
        ('{"a": [1]} == {"a": [1]}', True),
        ('{"a": 1} != {"a": 2}', True),
        ("'ab' + \"cd\"", "abcd"),
        ("[1] + [2, 3]", [1, 2, 3]),
        ("attempts > 0 ? 'retry' : 'first'", "retry"),
        ("false ? 1 : true ? 2 : 3", 2),
        ("2 in message.items", True),
        ("'Wor' in message.text", True),
        ("'text' in message", True),
        ("'nope' in message", False),
        ("message['text']", "Hello World"),
        ("message.items[0]", 1),
        ("message.items[-1]", 3),
        ("message.items[attempts]", 2),
        ("message.text[0]", "H"),
        ("message.__class__", "key"),
        ("message['__class__']", "key"),
        ("[1, 2][1]", 2),
        ('{"k": attempts}.k', 1),
        ("'\\u00e9\\x41\\n\\t\\'\"'", "\u00e9A\n\t'\""),
        ("1.5e3", 1500.0),
        ("null", None),
        ("[]", []),
        ("{}", {}),
    ],
)
def test_values(text: str, expected: Any) -> None:
    result = ev(text, DATA)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    "text",
    [
        "steps.nope.output",
        "steps.qa.output.missing.deeper",
        "nothing",
        "message.items[10]",
        "message.items['x']",
        "message.text.length",
        "attempts.x",
        "message.n.x",
        "message[1]",
        "message.items[true]",
    ],
)
def test_a_missing_path_is_null(text: str) -> None:
    assert ev(text, DATA) is None
    assert ev(f"{text} == null", DATA) is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("has(steps.qa.output)", True),
        ("has(steps.qa.output.is_approved)", True),
        ("has(steps.qa.missing)", False),
        ("has(message.n)", True),  # present, and null
        ("has(message.items[2])", True),
        ("has(message.items[3])", False),
        ("exists(attempts)", True),
        ("exists(nothing)", False),
        ("default(message.n, 'd')", "d"),
        ("default(nothing.at.all, 0)", 0),
        ("default(attempts, 0)", 1),
        ("size(message.items)", 3),
        ("size('héllo')", 5),
        ("size(message)", 4),
        ("message.items.size()", 3),
        ("contains(message.text, 'World')", True),
        ("contains(message.items, 4)", False),
        ("message.text.startsWith('Hell')", True),
        ("endsWith(message.text, 'x')", False),
        ("lower(message.text)", "hello world"),
        ("message.text.upper()", "HELLO WORLD"),
        ("int('42')", 42),
        ("int(' -7 ')", -7),
        ("int(3.9)", 3),
        ("int(-3.9)", -3),
        ("string(1.5)", "1.5"),
        ("string(message.items)", "[1,2,3]"),
        ('string({"a": null})', '{"a":null}'),
        ("string('x')", "x"),
    ],
)
def test_functions(text: str, expected: Any) -> None:
    assert ev(text, DATA) == expected


@pytest.mark.parametrize(
    ("text", "data", "expected"),
    [
        ("x && y", {"x": 1, "y": "a"}, True),
        ("x && y", {"x": [], "y": True}, False),
        ("x || y", {"x": "", "y": {}}, False),
        ("!x", {}, True),
        ("!x", {"x": 0.0}, True),
        ("x ? 'yes' : 'no'", {"x": [0]}, "yes"),
    ],
)
def test_truthiness(text: str, data: dict[str, Any], expected: Any) -> None:
    assert ev(text, data) == expected


def test_logic_short_circuits() -> None:
    # the right side would fail ('<' on a string and a number) if it were evaluated
    assert ev("false && ('a' < 1)") is False
    assert ev("true || ('a' < 1)") is True
    assert ev("true ? 1 : ('a' < 1)") == 1
    assert ev("default(1, 'a' < 1)") == 1


def test_a_mapping_and_a_tuple_are_data_too() -> None:
    from types import MappingProxyType

    data = MappingProxyType({"a": MappingProxyType({"b": (10, 20)})})
    assert ev("a.b[1] + size(a.b)", dict(data)) == 22
    assert ev("has(a.b[0])", data) is True  # type: ignore[arg-type]


def test_python_objects_are_opaque() -> None:
    class Secret:
        password = "hunter2"

        def __getitem__(self, key: Any) -> Any:  # pragma: no cover - never called
            raise AssertionError("looked into")

    data = {"obj": Secret()}
    assert ev("obj.password", data) is None
    assert ev("obj['password']", data) is None
    assert ev("obj.__class__", data) is None
    assert ev("has(obj.password)", data) is False
    assert ev("obj == obj", data) is True
    with pytest.raises(ExpressionError, match="opaque Secret"):
        ev("size(obj)", data)


def test_names_are_the_top_level_names_read() -> None:
    compiled = LANGUAGE.compile("steps.qa.output == null && has(run.x) ? size(a) : b.c[d]")
    assert compiled.names == {"steps", "run", "a", "b", "d"}
    assert compiled.text.startswith("steps.qa")


def test_each_evaluation_builds_fresh_lists_and_maps() -> None:
    compiled = LANGUAGE.compile("[1, {'a': 2}]")
    first = compiled.evaluate({})
    first[1]["a"] = 99
    assert compiled.evaluate({}) == [1, {"a": 2}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("'a' < 1", "'<' compares two numbers or two strings, not string and int"),
        ("attempts < '3'", "not int and string"),
        ("nothing < 3", "not null and int"),
        ("1 + 'a'", "'+' adds numbers, strings or lists"),
        ("'a' * 3", "'*' takes two numbers"),
        ("-'a'", "'-' needs a number"),
        ("1 / 0", "division by zero"),
        ("1 % 0", "modulo by zero"),
        ("1 in 5", "'in' needs a string, list or map"),
        ("1 in 'abc'", "'in' a string needs a string"),
        ("size(5)", "size() needs a string, list or map"),
        ("lower(1)", "lower() needs a string"),
        ("int('1.5')", "not an integer"),
        ("int(null)", "int() needs a number or a string"),
        ("{1: 2}", "map keys are strings"),
        ("9223372036854775807 + 1", "integer overflow"),
        ("-9223372036854775807 - 2", "integer overflow"),
        ("3037000500 * 3037000500", "integer overflow"),
        ("1e308 * 10", "float overflow"),
    ],
)
def test_evaluation_errors_are_expression_errors(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match="^<string>:1:") as info:
        ev(text, DATA)
    assert message in str(info.value)
    assert info.value.line == 1 and info.value.column is not None


def test_a_dollar_before_a_name_changes_nothing() -> None:
    # the steps format writes its variables "$steps", "$item": compiled as written (issue 34,
    # item 6: they were rewritten to " steps", which errors then echoed)
    data = {"steps": {"a": {"output": "abc"}}, "item": 2}
    assert ev("size($steps.a.output) + $item", data) == 5
    assert LANGUAGE.compile("$steps.a && $item").names == {"steps", "item"}
    assert ev("has($steps.a.output)", data) is True
    for text in ("x.$y", "$ x", "$1", "$$x"):
        with pytest.raises(ExpressionError):
            LANGUAGE.compile(text)
    with pytest.raises(ExpressionError, match="name too long"):
        LANGUAGE.compile("$" + "n" * 257)
    assert ev("$" + "n" * 256, {"n" * 256: 1}) == 1
