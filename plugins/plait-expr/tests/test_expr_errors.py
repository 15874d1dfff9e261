"""Compile and evaluation errors carry the document position, the expected tokens and a caret."""

from __future__ import annotations

import pytest
from plait import ExpressionError, PlaitError
from plait_expr import PlaitLanguage

LANGUAGE = PlaitLanguage()


def compile_error(text: str, **where: object) -> ExpressionError:
    with pytest.raises(ExpressionError) as info:
        LANGUAGE.compile(text, **where)  # type: ignore[arg-type]
    return info.value


def test_a_syntax_error_names_the_expected_tokens_and_draws_a_caret() -> None:
    error = compile_error("attempts < 3 &&", source="flow.yaml")
    assert (error.line, error.column) == (1, 16)
    assert str(error).startswith("flow.yaml:1:16: unexpected end of the expression; expected")
    assert "a name" in error.reason and "'('" in error.reason
    assert str(error).endswith("    attempts < 3 &&\n                   ^")


def test_positions_are_offset_by_where_the_expression_starts() -> None:
    # the expression starts at line 7, column 14 of its document
    error = compile_error("a == = b", source="wf.yaml", line=7, column=14)
    assert (error.line, error.column) == (7, 19)
    assert error.position.source == "wf.yaml"
    assert "did you mean '=='?" in error.reason
    # the caret sits under column 19 of the document line
    caret_line = str(error).splitlines()[-1]
    assert caret_line.index("^") - 4 == 18


def test_on_a_later_line_only_the_line_is_offset() -> None:
    error = compile_error("a &&\n  b ||\n  )", line=10, column=30)
    assert (error.line, error.column) == (12, 3)
    assert str(error).endswith("      )\n      ^")


def test_an_unexpected_token_is_named() -> None:
    error = compile_error("steps.qa output")
    assert error.column == 10
    assert error.reason.startswith("unexpected 'output'; expected one of")


def test_there_is_no_power_operator() -> None:
    error = compile_error("9**9**9")
    assert error.column == 3 and "there is no '**' operator" in error.reason


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("fo(1)", 1, "unknown function 'fo'"),
        ("sise(x)", 1, "did you mean 'size'?"),
        ("x.strip()", 3, "unknown method 'strip'"),
        ("x.has()", 3, "unknown method 'has'"),
        ("size(1, 2)", 1, "size() takes 1 argument, got 2"),
        ("default(1)", 1, "default() takes 2 arguments, got 1"),
        ("has(1 + 2)", 5, "has() takes a path"),
        ("has(a[b])", 5, "has() takes a path"),
        ("'\\q'", 2, "unknown escape '\\q'"),
        ("'ok' + '\\ud800'", 9, "lone surrogate"),
        ("99999999999999999999", 1, "integer literal too large"),
        ("1" + "0" * 30 + ".0e999", 1, "float literal too large"),
        ("1e999", 1, "float literal too large"),
        ("'abc", 1, "a string is not closed"),
        ("a & b", 3, "did you mean '&&'?"),
        ("a | b", 3, "did you mean '||'?"),
        ("", 1, "empty expression"),
        ("   ", 1, "empty expression"),
    ],
)
def test_compile_errors(text: str, column: int, reason: str) -> None:
    error = compile_error(text)
    assert error.line == 1 and error.column == column
    assert reason in error.reason
    assert isinstance(error, PlaitError)


def test_an_evaluation_error_points_at_its_operator_in_the_document() -> None:
    compiled = LANGUAGE.compile("x.n + 'a'", source="steps.yaml", line=3, column=12)
    with pytest.raises(ExpressionError) as info:
        compiled.evaluate({"x": {"n": 1}})
    assert (info.value.line, info.value.column) == (3, 16)
    assert str(info.value).startswith("steps.yaml:3:16: '+' adds numbers, strings or lists")
    assert str(info.value).endswith("               x.n + 'a'\n                   ^")


def test_a_function_error_points_at_the_call() -> None:
    compiled = LANGUAGE.compile("1 +\n  lower(x)")
    with pytest.raises(ExpressionError) as info:
        compiled.evaluate({"x": 1})
    assert (info.value.line, info.value.column) == (2, 3)


def test_data_that_is_not_json_fails_as_an_expression_error() -> None:
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(ExpressionError, match="string\\(\\)"):
        LANGUAGE.compile("string(x)").evaluate({"x": loop})
    with pytest.raises(ExpressionError, match="has no JSON form"):
        LANGUAGE.compile("string(x)").evaluate({"x": object()})


def test_a_text_that_is_not_a_string_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="an expression is a string, not int"):
        LANGUAGE.compile(3)  # type: ignore[arg-type]


def test_expression_failed_is_the_front_ends_run_error_naming_the_node() -> None:
    from plait import WorkflowRunError
    from plait.spi import compile_expression
    from plait_expr import expression_failed

    class StepError(WorkflowRunError):
        pass

    compiled = compile_expression("int(x) > 1", source="flow.yaml", line=3, column=7)
    with pytest.raises(ExpressionError) as caught:
        compiled.evaluate({"x": "seven"})
    exc = caught.value
    error = expression_failed(StepError, "condition of step 'c'", exc, executor_id="c", superstep=4)
    assert isinstance(error, StepError)
    assert (error.executor_id, error.superstep) == ("c", 4)
    assert error.__cause__ is exc
    assert str(error).startswith("condition of step 'c' failed: flow.yaml:3:")
