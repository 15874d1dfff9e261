"""Hypothesis: any text, and any sequence of the grammar's tokens, either loads or raises a
PlaitError whose every problem has a position. Never another exception, never a hang."""

from __future__ import annotations

from typing import Any

import plait
from flow_agents import AGENTS
from hypothesis import HealthCheck, given, settings, strategies as st
from plait import LoadError, PlaitError

TOKENS = [
    "researcher", "writer", "critic", "analyzer", "writr", "shell", "@review", "@x",
    "->", "-error->", "[", "]", "(", ")", ",", "?", ":", ";", "=", "@", "by", "concat",
    "first", "median", "concat(separator=' | ')", "(sep='x')", "message == 'a'",
    "size(message) > 3", "#c\n", "\n", " ", "'", '"', "\\", "-", ">", "!", "é", "\x00",
    "@review = critic ->", "@review = editor;",
]  # fmt: skip

FUZZ = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    try:
        workflow = plait.load(text, format="flow", executors=AGENTS)
    except LoadError as exc:
        assert exc.problems
        for problem in exc.problems:
            if "\x00" in text and "NUL byte" in str(problem):
                # plait.load refuses NUL before any loader runs; its error gives the line
                # in the message only (a plain PlaitError, no position object)
                assert str(problem).startswith("<string>:"), problem
                continue
            position: Any = getattr(problem, "position", None)
            assert position is not None, problem
            assert position.line is not None or position.path is not None, problem
        return
    except PlaitError as exc:  # pragma: no cover - shown if it happens
        raise AssertionError(f"a PlaitError without positions: {exc!r}") from exc
    assert isinstance(workflow, plait.Workflow)
    assert workflow.spec.start in workflow.spec.node_ids


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.sampled_from(["", " "]))
def test_random_token_sequences(tokens: list[str], glue: str) -> None:
    check(glue.join(tokens))


@FUZZ
@given(st.recursive(
    st.sampled_from(["researcher", "writer", "critic"]),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(" -> ".join),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(inner, inner).map(lambda ab: f"(message == 'a' ? {ab[0]} : {ab[1]})"),
        # an error edge leads to an agent that takes the failure (the edge's type)
        st.tuples(inner, inner).map(lambda ab: f"{ab[0]} -error-> fallback -> {ab[1]}"),
    ),
    max_leaves=12,
))  # fmt: skip
def test_well_formed_flows_load_and_run(text: str) -> None:
    workflow = plait.load(text, format="flow", executors=AGENTS)
    result = workflow.run_sync("a")
    assert result.outputs, text


def test_long_hostile_inputs_end_quickly() -> None:
    for text in [
        "(" * 5000,
        "[" * 5000,
        "a -> " * 5000,
        "(message" + " (" * 3000 + " ? a : b)",
        "(" + "'" * 5000,
        "@a = critic -> critic; "
        + "".join(f"@{chr(98 + i)} = @{chr(97 + i)} -> @{chr(97 + i)}; " for i in range(20))
        + "@u",
    ]:
        check(text)
