"""Templates: interpolation, raw values, the '{{' escape, nesting and positions."""

from __future__ import annotations

from typing import Any

import pytest
from plait import ExpressionError
from plait_expr import PlaitLanguage

LANGUAGE = PlaitLanguage()
DATA: dict[str, Any] = {
    "steps": {"draft": {"output": "Once upon a time"}, "qa": {"output": {"ok": True}}},
    "name": "Ada",
    "n": 2,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello {{ name }}!", "Hello Ada!"),
        ("{{name}}{{name}}", "AdaAda"),
        ("n+1 = {{ n + 1 }}", "n+1 = 3"),
        ("{{ steps.qa.output }}", '{"ok":true}'),
        ("qa: {{ steps.qa.output.ok }}, missing: {{ steps.x }}", "qa: true, missing: null"),
        ("list: {{ [1, 'two', null] }}", 'list: [1,"two",null]'),
        ("no expressions", "no expressions"),
        ("", ""),
        ("a literal \\{{ name }}", "a literal {{ name }}"),
        ('{{ "{{" }} also works', "{{ also works"),
        ('{{ "}}" }}', "}}"),
        ("{{ {'a': {'b': 1}} }}", '{"a":{"b":1}}'),
        ("}} alone is text", "}} alone is text"),
        ("{{ 'é' }} ünïcode", "é ünïcode"),
        ("multi\nline {{ n }}\n", "multi\nline 2\n"),
    ],
)
def test_render(text: str, expected: str) -> None:
    assert LANGUAGE.compile_template(text).render(DATA) == expected


def test_value_is_the_raw_value_of_a_single_expression() -> None:
    assert LANGUAGE.compile_template("{{ steps.qa.output.ok }}").value(DATA) is True
    assert LANGUAGE.compile_template("{{ steps.qa.output }}").value(DATA) == {"ok": True}
    assert LANGUAGE.compile_template("{{ n }} items").value(DATA) == "2 items"
    assert LANGUAGE.compile_template(" {{ n }}").value(DATA) == " 2"


def test_names_gather_every_expression() -> None:
    template = LANGUAGE.compile_template("{{ steps.draft.output }} by {{ name }}")
    assert template.names == {"steps", "name"}
    assert template.text == "{{ steps.draft.output }} by {{ name }}"


def template_error(text: str, **where: Any) -> ExpressionError:
    with pytest.raises(ExpressionError) as info:
        LANGUAGE.compile_template(text, **where)
    return info.value


def test_nesting_is_an_error() -> None:
    error = template_error("a {{ x + {{ y }} }}", source="t.yaml", line=4, column=9)
    assert (error.line, error.column) == (4, 18)
    assert "templates do not nest" in error.reason


def test_an_unclosed_expression_is_an_error_at_its_opening() -> None:
    error = template_error("ok {{ x }} then {{ y", line=2, column=3)
    assert (error.line, error.column) == (2, 19)
    assert "not closed" in error.reason


def test_an_empty_expression_is_an_error() -> None:
    assert "empty" in template_error("x {{  }}").reason


def test_a_syntax_error_inside_points_into_the_document() -> None:
    error = template_error("line one\nHi {{ name + }}!", source="p.yaml", line=5, column=7)
    assert (error.line, error.column) == (6, 14)
    assert str(error).endswith("    Hi {{ name + }}!\n                 ^")


def test_a_syntax_error_on_the_first_line_is_offset_by_the_start_column() -> None:
    error = template_error("Hi {{ name ) }}", line=2, column=11)
    assert (error.line, error.column) == (2, 22)
    assert str(error).endswith("              Hi {{ name ) }}\n                         ^")


def test_an_evaluation_error_inside_a_template_has_a_position() -> None:
    template = LANGUAGE.compile_template("x\n  {{ name < 1 }}", line=3, column=5)
    with pytest.raises(ExpressionError) as info:
        template.render(DATA)
    assert (info.value.line, info.value.column) == (4, 11)


def test_a_value_without_json_form_cannot_be_rendered() -> None:
    template = LANGUAGE.compile_template("{{ x }}!")
    with pytest.raises(ExpressionError, match="cannot render"):
        template.render({"x": object()})
