"""Arbitrary JSON values and mutated valid DAGs load, or raise a PlaitError with a JSON path
(or, for text that is not JSON, a line and column) — never another exception."""

from __future__ import annotations

import copy
import json
from typing import Any

import plait
from dag_helpers import SEED, Recorder
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from plait import LoadError, PlaitError

AGENTS = Recorder().agents("greeter-agent", "meal-agent", "glucose-agent", "feedback-agent")

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = [
    "id",
    "agent_name",
    "is_entry",
    "is_exit",
    "skip_condition",
    "join",
    "workflow",
    "source_id",
    "target_id",
    "context_passed",
    "condition",
    "parallel",
    "max_iterations",
    "nodes",
    "connections",
    "is_entyr",
]
NAMES = ["node-greeter", "node-meal", "node-glucose", "node-feedback", "greeter-agent", "keyed"]


def _check(document_text: str) -> None:
    try:
        plait.load(document_text, format="dag", executors=AGENTS)
    except LoadError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert isinstance(problem, PlaitError)
            path, line = getattr(problem, "path", None), getattr(problem, "line", None)
            assert path is not None or line is not None, problem
            assert path is None or path == "" or path.startswith("/"), path
    except PlaitError as exc:  # building: every error still names what is wrong
        assert str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_values_load_or_raise_a_positioned_error(value: Any) -> None:
    _check(json.dumps(value))


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    document = copy.deepcopy(SEED)
    for _ in range(draw(st.integers(1, 4))):
        section = draw(st.sampled_from(["nodes", "connections"]))
        items = document[section]
        action = draw(st.sampled_from(["set", "delete", "drop", "duplicate", "add"]))
        if not items or action == "add":
            items.append(draw(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=4)))
            continue
        index = draw(st.integers(0, len(items) - 1))
        item = items[index]
        if action == "set":
            key = draw(st.sampled_from(FIELDS))
            value = draw(
                st.sampled_from(NAMES).map(str)
                | json_values
                | st.sampled_from(["flags.x &&", "!approved", "a ? b : c", "((", "size(x) > 1"])
            )
            if isinstance(item, dict):
                item[key] = value
        elif action == "delete" and isinstance(item, dict) and item:
            item.pop(draw(st.sampled_from(sorted(item))))
        elif action == "drop":
            items.pop(index)
        elif action == "duplicate":
            items.append(copy.deepcopy(item))
    return document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_valid_dags_load_or_raise_a_positioned_error(document: dict[str, Any]) -> None:
    _check(json.dumps(document))


@settings(max_examples=100, deadline=None)
# (a NUL byte is refused by plait.load itself, before any loader, with a line only)
@given(st.text(st.characters(blacklist_characters="\x00"), max_size=60))
def test_arbitrary_text_loads_or_raises_a_positioned_error(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_the_fast_acceptor_never_accepts_what_the_json_schema_refuses(document: Any) -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from plait_dag._schema import conforms, document_schema

    if conforms(document):
        assert not list(Draft202012Validator(document_schema()).iter_errors(document))


# -- the position scan (issue 24, findings 5, 8 and 13) -----------------------------------


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(json_values, st.booleans())
def test_the_scan_finds_nothing_in_json_that_json_accepts(value: Any, ascii_only: bool) -> None:
    from plait_dag._positions import scan

    assert scan(json.dumps(value, ensure_ascii=ascii_only, indent=1 if ascii_only else None)) == []


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(json_values, st.text(max_size=8), st.integers(0, 3))
def test_a_repeated_key_is_found_at_its_path_wherever_it_is(
    value: Any, key: str, depth: int
) -> None:
    from plait_dag._positions import scan
    from plait_dag._schema import pointer

    assume(key != "v")
    # {"a": [{"a": [ ... {"v": …, KEY: 1, KEY: 2} ... ]}]}: the repeat is the last member
    text = json.dumps({"v": value, key: 1})[:-1] + ", " + json.dumps(key) + ": 2}"
    for _ in range(depth):
        text = '{"a": [' + text + "]}"
    path: list[str | int] = ["a", 0] * depth + [key]
    (finding,) = scan(text)
    assert finding.message == f"duplicate key {key!r}"
    assert finding.path == pointer(path)
    offset = text.rindex(json.dumps(key))
    assert (finding.line, finding.column) == (1, offset + 1)
