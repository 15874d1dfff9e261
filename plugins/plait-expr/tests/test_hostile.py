"""Hostile input: every text compiles or raises ExpressionError; evaluation raises nothing else.

A corpus of attacks is kept here (dunder walks, format strings, nesting, huge literals,
blow-ups, confusables); hypothesis adds random text and random token sequences.
"""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from plait import ExpressionError
from plait_expr import PlaitLanguage

LANGUAGE = PlaitLanguage()
DATA: dict[str, Any] = {
    "s": "abc",
    "n": 3,
    "l": [1, "two", None, [3]],
    "m": {"k": "v", "__class__": "just a key"},
    "steps": {"qa": {"output": {"is_approved": True}}},
    "big": "x" * 600_000,
    "obj": object(),
}

HOSTILE = [
    "__class__",
    "__subclasses__",
    "__class__.__subclasses__()",
    "''.__class__.__mro__",
    "''.__class__.__mro__[1].__subclasses__()",
    "s.__class__",
    "m.__class__",
    "m['__class__']",
    "obj.__class__.__init__.__globals__",
    "obj['__dict__']",
    "().__class__",
    "__import__('os').system('echo hi')",
    "eval('1')",
    "exec('x=1')",
    "compile('1', 'f', 'eval')",
    "getattr(s, 'upper')",
    "s.format(1)",
    "'{0.__class__}'.format(s)",
    "'{0.__class__}'",
    "'%s' % s",
    "'%s%s%s%s%s' % 5",
    "'{{ s }}'",
    "{{ s }}",
    "{{ {{ s }} }}",
    "{ {s: 1} }",
    "(" * 4999 + "1" + ")" * 4999,
    "[" * 4999 + "]" * 4999,
    "(" * 10_000 + ")" * 10_000,
    "!" * 5000 + "true",
    "-" * 9000 + "1",
    "+".join(["n"] * 3000),
    "9**9**9",
    "9 ** 9",
    "1" + "0" * 100_000,
    "1" + "0" * 9_000,
    "1." + "0" * 9_000 + "1",
    "1e308 * 1e308",
    "9223372036854775807 * 9223372036854775807",
    "\x00",
    "s\x00 == 1",
    "'\x00' == s",
    "s == '\\0'",
    "\u0430 == 1",  # Cyrillic small a
    "s\u0430",
    "\uff11 + 1",  # fullwidth digit one
    "n\u00a0+ 1",  # no-break space
    "\u200bn",  # zero-width space
    "\ufeffn",
    "n\u2028+1",
    "a" * 100_000,
    "a" * 300,
    "x" + "." + ".".join(["y"] * 3000),
    "s + s + s",
    "big + big",
    "big + big + big",
    "[big] + [big]",
    "'a' * 1000000000",
    "s * 1000000000",
    "l * 1000000000",
    "size(big + big)",
    "lower(obj)",
    "int('9' * 100)",
    "int(1e300)",
    "string(obj)",
    "matches(s, '(a+)+$')",
    "l[" + "0][" * 3000 + "0]",
    "'\\",
    "'\\u12'",
    '"\\x0"',
    "''''",
    "#",
    "; import os",
    "lambda: 1",
    "[x for x in l]",
    "n if true else 2",
    "s.upper",
    "s.upper().__class__",
    "has(__builtins__)",
    "default(__builtins__, __loader__)",
    "}}",
    "{",
    "",
    "\n\n\n",
]


def check(text: str, data: dict[str, Any] = DATA) -> None:
    """``text`` compiles and evaluates, or raises a positioned ExpressionError."""
    try:
        compiled = LANGUAGE.compile(text, source="hostile", line=2, column=3)
    except ExpressionError as error:
        assert error.line is not None and error.line >= 2
        assert error.column is not None and error.column >= 1
        assert error.position.source == "hostile"
        return
    try:
        compiled.evaluate(data)
    except ExpressionError as error:
        assert error.line is not None and error.column is not None


def test_the_corpus_is_large_enough() -> None:
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_expressions(text: str) -> None:
    check(text)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_templates(text: str) -> None:
    for template in (text, "{{ " + text + " }}", "x {{ " + text + " }} y"):
        try:
            compiled = LANGUAGE.compile_template(template, source="t", line=4, column=2)
        except ExpressionError as error:
            assert error.line is not None and error.line >= 4
            continue
        try:
            compiled.render(DATA)
            compiled.value(DATA)
        except ExpressionError as error:
            assert error.line is not None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("__class__", None),
        ("''.__class__.__mro__", None),
        ("'{0.__class__}'", None),
        ("9**9**9", "there is no '**' operator"),
        ("1" + "0" * 9_000, "integer literal too large"),
        ("1" + "0" * 100_000, "longer than 10,000 characters"),
        ("(" * 4999 + "1" + ")" * 4999, "nested more than 100 levels deep"),
        ("+".join(["n"] * 3000), "nested more than 100 levels deep"),
        ("'a' * 1000000000", "'*' takes two numbers"),
        ("big + big", "string longer than 1,000,000 characters"),
        ("\u0430 == 1", "CYRILLIC SMALL LETTER A"),
        ("\uff11", "FULLWIDTH DIGIT ONE"),
        ("s\x00", "control character"),
        ("a" * 300, "name too long"),
        ("{{ s }}", "do not nest"),
        ("__import__('os')", "unknown function '__import__'"),
        ("s.format(1)", "unknown method 'format'"),
    ],
)
def test_what_the_attacks_give(text: str, reason: str | None) -> None:
    compiled = None
    try:
        compiled = LANGUAGE.compile(text)
        value = compiled.evaluate(DATA)
    except ExpressionError as error:
        assert reason is not None and reason in str(error), str(error)
        return
    assert reason is None, f"expected an error for {text[:40]!r}"
    # dunder names are keys: absent here, so null; a format string is just a string
    assert value in (None, "{0.__class__}")


def test_a_dunder_key_is_a_key() -> None:
    assert LANGUAGE.compile("m.__class__").evaluate(DATA) == "just a key"


# -- hypothesis ----------------------------------------------------------------------------

TOKENS = [
    *"()[]{}.,:?!+-*/%<>'\"\\",
    "==", "!=", "<=", ">=", "&&", "||", "in", "true", "false", "null", "{{", "}}",
    "s", "n", "l", "m", "obj", "big", "steps", "qa", "__class__", "x",
    "size", "contains", "startsWith", "endsWith", "lower", "upper", "int", "string",
    "has", "exists", "default", "0", "1", "-1", "2.5", "1e400", "9223372036854775807",
    "'a'", '"b"', "'\\u0041'", " ", "\n", "\x00", "\u0430",
]  # fmt: skip
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(alphabet=string.printable + "\x00\u0430\uff11\u00e9", max_size=60))
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
def test_random_token_sequences(tokens: list[str]) -> None:
    check(" ".join(tokens))
    check("".join(tokens))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
def test_random_templates(tokens: list[str]) -> None:
    text = "".join(tokens)
    try:
        template = LANGUAGE.compile_template(text)
    except ExpressionError as error:
        assert error.line is not None
        return
    try:
        template.render(DATA)
    except ExpressionError as error:
        assert error.line is not None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=15), JSON)
def test_random_expressions_over_random_data(tokens: list[str], value: Any) -> None:
    data = dict(DATA, s=value, n=value, l=[value], m={"k": value})
    check(" ".join(tokens), data)


def test_a_template_repeating_a_large_value_is_bounded_with_a_clear_error() -> None:
    # Issue 24, finding 10: a 9.8 KB template over a 1 MB value rendered 1.4 billion
    # characters and raised a bare MemoryError.
    from plait_expr._runtime import MAX_RENDERED

    template = LANGUAGE.compile_template(
        "head {{ big }}" + " and {{ big }}" * 20, source="w.yaml", line=3, column=5
    )
    with pytest.raises(ExpressionError) as caught:
        template.render({"big": "x" * 1_000_000})
    message = str(caught.value)
    assert f"longer than {MAX_RENDERED:,} characters" in message
    assert "a value of 1,000,000 characters here, after 9,000,05" in message
    assert caught.value.line == 3
    assert len(message) < 1000
    # the same template over small data renders, and one large value alone fits
    assert len(template.render({"big": "y"})) == len("head y") + 20 * len(" and y")
    single = LANGUAGE.compile_template("{{ big }}!")
    assert len(single.render({"big": "x" * 1_000_000})) == 1_000_001


# Issue 34, F10: string() was not bounded — one call over shared data built 240M characters
# (488 MiB). Every function that makes a string, and a template, is held to MAX_RENDERED,
# measured before the text is made.
SHARED = {"x": [["a" * 1000] * 1000] * 30}  # 30 MB of JSON text from 1 KB of distinct data


@pytest.mark.parametrize(
    ("text", "name"),
    [("string(x)", "string"), ("string([x, x])", "string"), ("x.string()", "string")],
)
def test_string_over_shared_data_is_refused_before_the_text_is_made(text: str, name: str) -> None:
    import tracemalloc

    from plait_expr._runtime import MAX_RENDERED

    expression = LANGUAGE.compile(text, source="w.yaml", line=4, column=9)
    tracemalloc.start()
    try:
        with pytest.raises(ExpressionError) as caught:
            expression.evaluate(SHARED)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"{name}() would make a string longer than {MAX_RENDERED:,} characters" in str(
        caught.value
    )
    assert caught.value.line == 4
    assert peak < 2_000_000  # the 30 MB text was never built


@pytest.mark.parametrize("name", ["lower", "upper"])
def test_lower_and_upper_are_bounded_too(name: str) -> None:
    from plait_expr._runtime import MAX_RENDERED

    expression = LANGUAGE.compile(f"{name}(s)")
    with pytest.raises(ExpressionError, match=rf"{name}\(\) would make a string longer"):
        expression.evaluate({"s": "a" * (MAX_RENDERED + 1)})
    # "ﬃ" upper-cases to three characters: the result is checked as well
    with pytest.raises(ExpressionError, match=r"upper\(\) would make"):
        LANGUAGE.compile("upper(s)").evaluate({"s": "\ufb03" * (MAX_RENDERED // 2)})
    assert LANGUAGE.compile(f"{name}(s)").evaluate({"s": "Ab"}) in ("ab", "AB")


def test_string_measures_shared_data_once_and_still_renders_what_fits() -> None:
    value = [["ab", 1, None, {"k": True}]] * 1000
    assert LANGUAGE.compile("string(x)").evaluate({"x": value}) == (
        '[["ab",1,null,{"k":true}]' + ',["ab",1,null,{"k":true}]' * 999 + "]"
    )
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ExpressionError, match="string\\(\\): Circular reference"):
        LANGUAGE.compile("string(x)").evaluate({"x": cycle})


def test_a_template_over_shared_data_is_refused_before_the_text_is_made() -> None:
    import tracemalloc

    template = LANGUAGE.compile_template("all: {{ x }}", source="w.yaml", line=2, column=3)
    tracemalloc.start()
    try:
        with pytest.raises(ExpressionError) as caught:
            template.render(SHARED)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "a value of at least 9,999,996 characters here, after 5)" in str(caught.value)
    assert peak < 2_000_000
