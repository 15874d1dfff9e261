"""Every problem of a flow is a PlaitError with its line, column and a caret line, all at once."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from flow_agents import AGENTS
from plait import LoadError, PlaitError, SourcePosition
from plait_flow import Flow


def problems(flow: str, **options: Any) -> list[Any]:
    with pytest.raises(LoadError) as info:
        plait.load(flow, format="flow", executors=AGENTS, **options)
    assert isinstance(info.value, PlaitError)
    return info.value.problems


def only(flow: str, **options: Any) -> Any:
    (problem,) = problems(flow, **options)
    assert problem.line is not None and problem.column is not None
    assert "^" in str(problem)  # the caret line
    return problem


@pytest.mark.parametrize("flow", ["", "   ", "\n\t\n", "# only a comment\n  # another"])
def test_an_empty_flow(flow: str) -> None:
    problem = only(flow)
    assert "the flow is empty" in problem.reason
    assert (problem.line, problem.column) == (1, 1)


def test_an_unclosed_bracket_gives_its_column_and_what_was_expected() -> None:
    problem = only("A -> [B, C")
    assert (problem.line, problem.column) == (1, 6)
    assert "unclosed '['" in problem.reason
    assert "ends at 1:11" in problem.reason
    assert "expected ']' or ','" in problem.reason
    assert str(problem).endswith("    A -> [B, C\n         ^")


def test_an_unclosed_condition() -> None:
    problem = only("researcher -> (message == 'x' ? critic : editor")
    assert (problem.line, problem.column) == (1, 15)
    assert "unclosed '('" in problem.reason and "')'" in problem.reason


@pytest.mark.parametrize(
    ("flow", "where"),
    [("researcher ->", (1, 12)), ("researcher -> writer ->\n", (1, 22)), ("a -> -> b", (1, 3))],
)
def test_a_dangling_arrow(flow: str, where: tuple[int, int]) -> None:
    problem = only(flow)
    assert "dangling '->'" in problem.reason
    assert (problem.line, problem.column) == where


def test_a_leading_arrow() -> None:
    problem = only("-> writer")
    assert (problem.line, problem.column) == (1, 1)
    assert "unexpected '->'" in problem.reason


def test_an_unknown_name_says_did_you_mean_and_lists_the_available_ones() -> None:
    problem = only("researcher -> writr")
    assert (problem.line, problem.column) == (1, 15)
    assert "unknown agent 'writr'; did you mean 'writer'?" in problem.reason
    assert "Plait looked in executors= (" in problem.reason
    for name in AGENTS:
        assert name in problem.reason


def test_an_empty_parallel_block() -> None:
    problem = only("researcher ->\n  [ ] -> writer")
    assert (problem.line, problem.column) == (2, 3)
    assert "empty parallel block" in problem.reason


def test_a_trailing_comma_in_a_block() -> None:
    problem = only("[analyzer, ]")
    assert (problem.line, problem.column) == (1, 12)
    assert "must be followed by a branch" in problem.reason


def test_an_unknown_merge_strategy_lists_those_installed() -> None:
    problem = only("[analyzer, summarizer] by medain")
    assert (problem.line, problem.column) == (1, 27)
    assert "unknown merge strategy 'medain'" in problem.reason
    assert "installed: concat, concat_newline, first" in problem.reason


def test_an_unknown_merge_strategy_given_to_the_loader() -> None:
    problem = only("researcher -> [analyzer, summarizer]", merge="concatt")
    assert (problem.line, problem.column) == (1, 15)
    assert "'concatt' (given as merge=); did you mean 'concat'?" in problem.reason
    with pytest.raises(LoadError, match="unknown merge strategy 'nope'"):
        Flow(executors=AGENTS, flow="[writer, critic]", merge="nope")


def test_bad_merge_options() -> None:
    assert "takes no options" in only("[writer] by first(separator='-')").reason
    assert "'separator' only" in only("[writer] by concat(sep='-')").reason
    assert "unknown escape" in only("[writer] by concat(separator='\\q')").reason


def test_a_bad_condition_points_into_the_expression() -> None:
    problem = only("researcher -> (message === 'x' ? critic : editor)")
    assert problem.line == 1 and problem.column >= 16
    assert "in condition" in problem.reason


def test_an_unknown_character() -> None:
    problem = only("researcher -> wr!ter")
    assert (problem.line, problem.column) == (1, 17)
    assert "unexpected character '!'" in problem.reason


def test_every_problem_at_once_sorted_by_position() -> None:
    found = problems("writr -> [] -> [critic] by medain\n-> editr")
    assert [(p.line, p.column) for p in found] == [(1, 1), (1, 10), (1, 28), (2, 4)]


def test_unknown_loader_options_are_refused() -> None:
    with pytest.raises(LoadError, match="unknown option.*merg.*accepted: merge"):
        plait.load("writer", format="flow", executors=AGENTS, merg="concat")


def test_too_deep_nesting_is_an_error_not_a_crash() -> None:
    problem = only("[" * 200 + "writer" + "]" * 200)
    assert "nest more than" in problem.reason


def test_flow_rejects_objects_that_are_not_agents() -> None:
    with pytest.raises(PlaitError, match="neither a plait.Executor nor an async function"):
        Flow(executors=[print], flow="print")


def test_thousands_of_problems_on_one_long_line_stay_small() -> None:
    # Issue 24, finding 7: each problem copied the whole line (a 3,000-name line gave a
    # 116 MB error string). Each now keeps a window of the line around its column.
    names = ",".join(f"unknown{n}" for n in range(3000))
    found = problems(f"a -> [{names}] -> b\n")
    assert len(found) >= 3000
    assert all(len(str(p)) < 2 * SourcePosition.WINDOW + 2000 for p in found)
    last = found[-2]  # unknown2999, near the end of a 35 KB line
    shown, caret = str(last).split("\n")[1:]
    assert shown[caret.index("^") :].startswith("unknown2999")
    with pytest.raises(LoadError) as caught:
        plait.load(f"a -> [{names}] -> b\n", format="flow", executors=AGENTS)
    assert len(str(caught.value)) < 200_000
    assert f"… and {len(found) - LoadError.SHOWN:,} more" in str(caught.value)


def test_a_flow_longer_than_the_limit_is_refused_before_parsing() -> None:
    from plait_flow._compile import MAX_TEXT

    text = "a -> " + "[" * 1_000_000
    problem = only(text)
    assert f"the flow is {len(text):,} characters long; the limit is {MAX_TEXT:,}" in str(problem)
    assert (problem.line, problem.column) == (1, 1)
    assert len(str(problem)) < 2 * SourcePosition.WINDOW + 200


def test_deep_brackets_stop_the_parse_at_the_first_one_past_the_bound() -> None:
    # 64 KB of "[" took lark a second of reductions before the element-wise depth check;
    # the lexer now stops at the first bracket past MAX_BRACKETS (issue 24, finding 7).
    from plait_flow._parser import MAX_BRACKETS

    problem = only("a -> " + "[" * 60_000)
    assert "nest more than 40 deep here" in str(problem)
    assert (problem.line, problem.column) == (1, len("a -> ") + MAX_BRACKETS + 1)
    fine = "writer -> " + "[" * 30 + "editor" + "]" * 30  # within the bound: loads
    plait.load(fine, format="flow", executors=AGENTS)


# -- the seed's error classes ----------------------------------------------------------------


def test_an_invalid_flow_is_the_seeds_invalid_flow_error_and_a_load_error() -> None:
    from plait_flow import AgentNotFoundInFlowError, InvalidFlowError

    for text in ("", "A -> [B, C", "researcher -> (x ? critic"):
        with pytest.raises(InvalidFlowError) as info:
            Flow(AGENTS, text)
        assert isinstance(info.value, LoadError)
        assert not isinstance(info.value, AgentNotFoundInFlowError)
        assert info.value.problems and info.value.problems[0].line == 1


def test_an_unknown_agent_is_agent_not_found_with_the_name_and_what_is_available() -> None:
    from plait_flow import AgentNotFoundInFlowError, InvalidFlowError

    with pytest.raises(AgentNotFoundInFlowError) as info:
        Flow(AGENTS, "researcher -> wrtier -> nobody")
    error = info.value
    assert isinstance(error, InvalidFlowError) and isinstance(error, LoadError)
    assert error.name == "wrtier"  # the first unknown name, in the text's order
    assert set(AGENTS) <= set(error.available_agents)
    assert error.available_agents == sorted(error.available_agents)
    assert "wrtier" not in error.available_agents
    # Plait's message, every problem: both unknown names with their did-you-mean
    assert [p.line for p in error.problems] == [1, 1]
    assert "unknown agent 'wrtier'; did you mean 'writer'?" in str(error)
    assert "unknown agent 'nobody'" in str(error)


def test_a_yaml_flow_document_problem_is_an_invalid_flow_error() -> None:
    from plait_flow import InvalidFlowError

    with pytest.raises(InvalidFlowError) as info:
        plait.load("flow: [not, a, string]\n", format="flow", executors=AGENTS)
    assert info.value.problems
