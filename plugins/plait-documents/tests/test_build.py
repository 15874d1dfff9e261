"""One way to build the IR: the spec builder and the helpers every front-end shares
(plait_documents.build)."""

from __future__ import annotations

import pytest
from plait import DocumentError, LoadError, NodeSpec, SourcePosition
from plait_documents import Problems, SpecBuilder, did_you_mean, edge_group_id, problem_order


def test_did_you_mean_names_the_closest_or_nothing() -> None:
    assert did_you_mean("writr", ["reader", "writer"]) == "; did you mean 'writer'?"
    assert did_you_mean("zzz", ["reader", "writer"]) == ""
    assert did_you_mean(3, [1, 3.5, "3"]) == "; did you mean '3'?"  # names as text


def _at(message: str, line: int | None = None, column: int | None = None, path: str | None = None):
    return DocumentError(message, SourcePosition(source="doc", line=line, column=column, path=path))


def test_problems_are_unique_and_sorted_by_position() -> None:
    problems = Problems("doc")
    problems.add(_at("late", 3, 1))
    problems.extend([_at("early", 1, 9), _at("earlier", 1, 2), _at("late", 3, 1)])
    problems.add(_at("tenth", path="/nodes/10"))
    problems.add(_at("second", path="/nodes/2"))
    assert len(problems) == 6 and problems
    reasons = [p.reason for p in problems.sorted()]  # type: ignore[attr-defined]
    assert reasons == ["second", "tenth", "earlier", "early", "late"]
    with pytest.raises(LoadError) as caught:
        problems.raise_if_any()
    assert caught.value.source == "doc" and len(caught.value.problems) == 5
    Problems("empty").raise_if_any()  # nothing found, nothing raised
    assert problem_order(_at("x", 2, 4)) < problem_order(_at("y", 2, 5))


def test_edge_group_ids_number_a_second_group_between_the_same_executors() -> None:
    assert edge_group_id("fan_in", ["a", "b"], ["c"]) == "fan_in:a,b->c"
    assert edge_group_id("direct", ["a"], ["b"], ["direct:a->b"]) == "direct:a->b#2"
    spec = SpecBuilder()
    spec.add_node(NodeSpec("a"))
    spec.add_node(NodeSpec("b"))
    first = spec.add_edge_group("direct", ["a"], ["b"])
    second = spec.add_edge_group("direct", ["a"], ["b"], {"condition": None})
    third = spec.add_edge_group("direct", ["a"], ["b"])
    assert [first.id, second.id, third.id] == ["direct:a->b", "direct:a->b#2", "direct:a->b#3"]
    with pytest.raises(ValueError, match="node id 'a' is used twice"):
        spec.add_node(NodeSpec("a"))
    built = spec.build(start="a", name="w", options={"max_supersteps": 5})
    assert built.start == "a" and built.name == "w" and built.options == {"max_supersteps": 5}
    assert [n.id for n in built.nodes] == ["a", "b"] and len(built.edge_groups) == 3
