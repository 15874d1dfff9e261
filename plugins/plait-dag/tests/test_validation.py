"""Every problem of a document at once, each at its JSON path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import plait
import pytest
from dag_helpers import SEED, Recorder, seed, text
from plait import LoadError, PlaitError
from plait_dag import DagDocumentError, document_schema

AGENTS = Recorder().agents("greeter-agent", "meal-agent", "glucose-agent", "feedback-agent")


def problems(document: Any, **kwargs: Any) -> list[PlaitError]:
    with pytest.raises(LoadError) as caught:
        plait.load(
            document if isinstance(document, str) else text(document), format="dag", **kwargs
        )
    assert all(isinstance(p, DagDocumentError) for p in caught.value.problems)
    return caught.value.problems


def paths(document: Any, **kwargs: Any) -> list[str | None]:
    return [p.path for p in problems(document, executors=AGENTS, **kwargs)]  # type: ignore[attr-defined]


def test_one_error_lists_two_entries_no_exit_a_cycle_an_unreachable_node_and_an_unknown_agent() -> (
    None
):
    document = {
        "nodes": [
            {"id": "a", "agent_name": "greeter-agent", "is_entry": True},
            {"id": "b", "agent_name": "meal-agent", "is_entry": True},
            {"id": "c", "agent_name": "glucose-agnet"},
            {"id": "d", "agent_name": "feedback-agent"},
            {"id": "lonely", "agent_name": "feedback-agent"},
        ],
        "connections": [
            {"source_id": "a", "target_id": "c"},
            {"source_id": "c", "target_id": "d"},
            {"source_id": "d", "target_id": "c"},
            {"source_id": "b", "target_id": "d"},
        ],
    }
    with pytest.raises(LoadError) as caught:
        plait.load(text(document), executors=AGENTS)
    found = {p.path: str(p) for p in caught.value.problems}  # type: ignore[attr-defined]
    assert sorted(found) == [
        "/connections/2",
        "/nodes",
        "/nodes/1/is_entry",
        "/nodes/2/agent_name",
        "/nodes/4",
    ]
    assert "second entry node 'b'" in found["/nodes/1/is_entry"]
    assert "no exit node" in found["/nodes"]
    assert "cycle c -> d -> c" in found["/connections/2"]
    assert "'lonely' cannot be reached" in found["/nodes/4"]
    assert "did you mean 'glucose-agent'?" in found["/nodes/2/agent_name"]
    message = str(caught.value)
    assert message.startswith("<string>: 5 problem(s):")


def test_a_misspelt_field_is_an_error_at_its_path_suggesting_the_field() -> None:
    document = seed()
    document["nodes"][0]["is_entyr"] = True
    document["connections"][1]["contxt_passed"] = ["user_name"]
    found = problems(document, executors=AGENTS)
    by_path = {p.path: str(p) for p in found}  # type: ignore[attr-defined]
    assert "did you mean 'is_entry'?" in by_path["/nodes/0/is_entyr"]
    assert "did you mean 'context_passed'?" in by_path["/connections/1/contxt_passed"]


def test_schema_problems_and_graph_problems_come_together() -> None:
    document = seed()
    document["nodes"][1]["is_exit"] = "yes"
    document["nodes"][3]["agent_name"] = "feedbak-agent"
    document["connections"].append({"source_id": "node-feedback"})
    assert paths(document) == [
        "/nodes/1/is_exit",
        "/nodes/3/agent_name",
        "/connections/3",
    ]


def test_a_condition_that_does_not_parse_is_an_error_with_a_caret() -> None:
    document = seed()
    document["nodes"][1]["skip_condition"] = "flags.skip_meal &&"
    document["connections"][0]["condition"] = "user_name == = 'x'"
    found = problems(document, executors=AGENTS)
    assert [p.path for p in found] == [  # type: ignore[attr-defined]
        "/nodes/1/skip_condition",
        "/connections/0/condition",
    ]
    # the document's own line, the caret at the end of the expression (its closing quote)
    assert '"flags.skip_meal &&"' in str(found[0]) and "^" in str(found[0])
    assert found[0].line == 1  # type: ignore[attr-defined]


def test_unknown_connection_ends_name_the_nodes_that_exist() -> None:
    document = seed()
    document["connections"][2]["target_id"] = "node-feedbak"
    found = problems(document, executors=AGENTS)
    assert [p.path for p in found] == [  # type: ignore[attr-defined]
        "/nodes/3",  # unreachable now
        "/connections/2/target_id",
    ]
    assert "did you mean 'node-feedback'?" in str(found[1])


def test_a_cycle_is_fine_when_declared_as_a_loop_and_a_loop_must_go_back() -> None:
    document = seed()
    document["connections"].append(
        {
            "source_id": "node-glucose",
            "target_id": "node-meal",
            "condition": "again",
            "max_iterations": 2,
        }
    )
    assert plait.load(text(document), executors=AGENTS).spec.start == "node-greeter"
    document["connections"][-1] = {
        "source_id": "node-greeter",
        "target_id": "node-feedback",
        "max_iterations": 2,
    }
    assert paths(document) == ["/connections/3/max_iterations"]


def test_extension_rules_are_checked_too() -> None:
    document = {
        "nodes": [
            {"id": "a", "agent_name": "greeter-agent", "is_entry": True, "join": "keyed"},
            {"id": "b", "agent_name": "meal-agent"},
            {"id": "c", "agent_name": "meal-agent", "is_exit": True, "join": "keyd"},
            {"id": "d", "workflow": "nowhere"},
            {"id": "e", "is_exit": True},
        ],
        "connections": [
            {"source_id": "a", "target_id": "b", "parallel": True},
            {"source_id": "a", "target_id": "d"},
            {"source_id": "b", "target_id": "c", "context_passed": ["x"]},
            {"source_id": "d", "target_id": "e"},
        ],
    }
    found = {p.path: str(p) for p in problems(document, executors=AGENTS)}  # type: ignore[attr-defined]
    assert sorted(found) == [
        "/connections/1/parallel",
        "/connections/2/context_passed",
        "/nodes/0/join",
        "/nodes/2/join",
        "/nodes/3/workflow",
        "/nodes/4",
    ]
    assert "did you mean 'keyed'?" in found["/nodes/2/join"]


def test_a_fork_without_a_join_is_an_error() -> None:
    document = seed()
    for conn in document["connections"][:1]:
        conn["parallel"] = True
    assert paths(document) == ["/connections/0/parallel"]


def test_a_node_id_may_equal_an_agent_name() -> None:
    # node ids and agent names are separate namespaces: {"id": "greeter", "agent_name": "greeter"}
    document = seed()
    document["nodes"][0]["id"] = "greeter-agent"
    for conn in document["connections"]:
        if conn["source_id"] == "node-greeter":
            conn["source_id"] = "greeter-agent"
    workflow = plait.load(text(document), format="dag", executors=AGENTS)
    assert "greeter-agent" in workflow.spec.node_ids


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ("[]", ""),
        ("5", ""),
        ('{"nodes": {}, "connections": []}', "/nodes"),
        ('{"nodes": [], "connections": []}', "/nodes"),
        ('{"nodes": [7], "connections": []}', "/nodes/0"),
        ('{"nodes": [{"id": ""}], "connections": []}', "/nodes/0/id"),
        ('{"nodes": [], "connections": [], "name": "x"}', "/name"),
    ],
)
def test_malformed_documents_point_at_the_part(document: str, path: str) -> None:
    found = problems(document, executors=AGENTS)
    assert path in [p.path for p in found]  # type: ignore[attr-defined]


def test_text_that_is_not_json_is_an_error_with_line_and_column() -> None:
    (problem,) = problems('{"nodes": [\n  {"id": "a" "b"}\n]}')
    assert (problem.line, problem.column) == (2, 14)  # type: ignore[attr-defined]
    assert problem.path == "/nodes/0/id"  # type: ignore[attr-defined]
    assert "not JSON: Expecting ',' delimiter" in str(problem)
    (nan,) = problems('{"nodes": [NaN], "connections": []}')
    assert "NaN" in str(nan)


@pytest.mark.parametrize(
    ("document", "at", "path", "closer"),
    [
        ('{"nodes": [\n  {"id": "a",}\n]}', (2, 13), "/nodes/0", "}"),
        ('{"nodes": [1, 2, ],\n "connections": []}', (1, 16), "/nodes", "]"),
        ('{"nodes": [], "connections": [],\n}', (1, 32), None, "}"),
    ],
)
def test_a_trailing_comma_is_named_at_the_comma_and_its_container(
    document: str, at: tuple[int, int], path: str | None, closer: str
) -> None:
    # Issue 34, item 6: it said "at :" (an empty path) and "Expecting property name
    # enclosed in double quotes" at the bracket.
    (problem,) = problems(document)
    assert (problem.line, problem.column) == at  # type: ignore[attr-defined]
    assert problem.path == path  # type: ignore[attr-defined]
    assert f"not JSON: a trailing comma before '{closer}'" in str(problem)
    assert " at :" not in str(problem)
    line = document.splitlines()[at[0] - 1]
    assert str(problem).endswith(f"    {line}\n    {' ' * (at[1] - 1)}^")


def test_an_expression_error_is_at_its_line_and_column_in_the_document() -> None:
    # Issue 34, item 6: dag.md promises every problem at its line and column; an
    # expression's showed only its own text, with no line.
    document = seed()
    document["nodes"][1]["skip_condition"] = "flags.skip_meal && #x"
    document["connections"][0]["condition"] = 'name == "a\\tb" &&'  # an escape before
    body = json.dumps(document, indent=2)
    found = problems(body, executors=AGENTS)
    lines = body.splitlines()
    skip = next(i for i, x in enumerate(lines, 1) if "flags.skip_meal" in x)
    cond = next(i for i, x in enumerate(lines, 1) if "name ==" in x)
    first, second = found
    assert (first.line, first.path) == (skip, "/nodes/1/skip_condition")  # type: ignore[attr-defined]
    assert lines[skip - 1][first.column - 1] == "#"  # type: ignore[attr-defined]
    assert str(first).startswith(f"<string>:{skip}:{first.column} at /nodes/1/skip_condition: ")  # type: ignore[attr-defined]
    assert str(first).endswith(f"    {lines[skip - 1]}\n    {' ' * (first.column - 1)}^")  # type: ignore[attr-defined]
    # the end of the expression: the caret at the closing quote, past the escape's two
    # characters in the text
    assert (second.line, second.path) == (cond, "/connections/0/condition")  # type: ignore[attr-defined]
    row = lines[cond - 1]
    assert row[second.column - 1] == '"' and row[: second.column - 1].endswith("&&")  # type: ignore[attr-defined]


def test_a_sub_workflow_file_outside_the_document_directory_is_refused(tmp_path: Any) -> None:
    (tmp_path / "inner").mkdir()
    outer = tmp_path / "inner" / "outer.json"
    (tmp_path / "secret.json").write_text(text(SEED))
    document = {
        "nodes": [{"id": "n", "workflow": "../secret.json", "is_entry": True, "is_exit": True}],
        "connections": [],
    }
    outer.write_text(text(document))
    with pytest.raises(LoadError, match="is outside"):
        plait.load(outer, executors=AGENTS)


def test_a_broken_sub_workflow_file_reports_its_problems(tmp_path: Any) -> None:
    broken = seed()
    broken["nodes"][0]["is_entyr"] = True
    (tmp_path / "broken.json").write_text(text(broken))
    document = {
        "nodes": [{"id": "n", "workflow": "broken.json", "is_entry": True, "is_exit": True}],
        "connections": [],
    }
    (tmp_path / "outer.json").write_text(text(document))
    with pytest.raises(LoadError) as caught:
        plait.load(tmp_path / "outer.json", executors=AGENTS)
    (problem,) = caught.value.problems
    assert problem.path == "/nodes/0/workflow"  # type: ignore[attr-defined]
    assert "/nodes/0/is_entyr" in str(problem)


def test_the_schema_ships_as_a_json_file_with_exactly_the_seed_fields() -> None:
    schema = document_schema()
    node = schema["$defs"]["node"]["properties"]
    connection = schema["$defs"]["connection"]["properties"]
    assert {"id", "agent_name", "is_entry", "is_exit", "skip_condition"} <= set(node)
    assert set(node) - {"id", "agent_name", "is_entry", "is_exit", "skip_condition"} == {
        "join",
        "workflow",
        "team",  # a team of agents (plait-teams)
    }
    assert set(connection) == {
        "source_id",
        "target_id",
        "context_passed",
        "condition",
        "parallel",
        "max_iterations",
    }
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    Draft202012Validator.check_schema(schema)
    assert not list(Draft202012Validator(schema).iter_errors(json.loads(text(SEED))))


def test_loading_the_plugins_imports_neither_jsonschema_nor_the_expression_parser() -> None:
    code = (
        "import sys, plait\n"
        "manager = plait.get_plugin_manager()\n"
        "assert 'dag' in manager.registry('loader').names()\n"
        "assert 'dag.node' in manager.registry('executor_kind').names()\n"
        "heavy = [m for m in ('jsonschema', 'lark') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# -- what json.loads accepts or fails on without a position (issue 24, findings 5, 8, 13) --


def test_a_repeated_key_is_refused_at_its_position_and_path() -> None:
    # JSON keeps the last of a repeated key; YAML documents refuse them, and so do we.
    document = (
        '{"nodes": [{"id": "a", "is_entry": true, "id": "b", "is_exit": true}],\n'
        ' "connections": [], "connections": [{"source_id": "a", "target_id": "a"}]}'
    )
    found = problems(document)
    assert [(p.line, p.column, p.path) for p in found] == [  # type: ignore[attr-defined]
        (1, 42, "/nodes/0/id"),
        (2, 21, "/connections"),
    ]
    assert "duplicate key 'id'" in str(found[0])
    assert '"id": "b"' in str(found[0]) and "^" in str(found[0])


def test_a_repeated_key_spelled_with_an_escape_is_still_the_same_key() -> None:
    (found,) = problems('{"nodes": [], "connections": [], "node\\u0073": []}')
    assert "duplicate key 'nodes'" in str(found)
    assert found.path == "/nodes"  # type: ignore[attr-defined]


def test_a_5000_digit_integer_is_a_positioned_error() -> None:
    head = '{"nodes": [{"id": "a", "is_entry": true, "is_exit": true,\n "x": -'
    document = head + "9" * 5000 + "}]}"
    (found,) = problems(document)
    assert isinstance(found, DagDocumentError)
    assert (found.line, found.column, found.path) == (2, 7, "/nodes/0/x")
    assert "an integer of 5,000 digits" in str(found)
    assert len(str(found)) < 1000


def test_nesting_past_the_limit_is_a_positioned_error() -> None:
    (found,) = problems('{"nodes": ' + "[" * 100_000 + "}")
    assert isinstance(found, DagDocumentError)
    assert (found.line, found.column) == (1, 11 + 63)
    assert found.path == "/nodes" + "/0" * 63  # type: ignore[attr-defined]
    assert "nests deeper than 64 levels" in str(found)


def test_a_document_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Any) -> None:
    # Issue 34, N8: JSON DAG files had no size bound (YAML and flow do): 15 MB took 31 s
    # and 1.8 GB. The bound and the error are the steps format's.
    from plait_dag._loader import MAX_TEXT

    assert MAX_TEXT == 2 * 1024 * 1024  # plait_steps._yaml.MAX_TEXT
    node = '{"id": "n", "agent_name": "greeter-agent", "bogus": 1}, '
    body = '{"nodes": [' + node * (MAX_TEXT // len(node) + 1) + '{"id": "x"}]}'
    # one problem, the size: no schema problem (the 37,000 bogus fields) means json never
    # read it; detected as a DAG without being parsed either
    (problem,) = problems(body, executors=AGENTS)
    assert str(problem).startswith(
        f"<string>:1:1: the document is {len(body)} characters long; the limit is {MAX_TEXT}"
    )
    (tmp_path / "big.json").write_text(body)
    with pytest.raises(LoadError, match="the limit is 2097152"):
        plait.load(tmp_path / "big.json", executors=AGENTS)
    with pytest.raises(LoadError, match="the limit is 2097152"):
        plait.load(body, executors=AGENTS)
    # a sub-workflow file is held to the same bound
    (tmp_path / "outer.json").write_text(
        text(
            {
                "nodes": [{"id": "n", "workflow": "big.json", "is_entry": True, "is_exit": True}],
                "connections": [],
            }
        )
    )
    with pytest.raises(LoadError) as caught:
        plait.load(tmp_path / "outer.json", executors=AGENTS)
    (inner,) = caught.value.problems
    assert inner.path == "/nodes/0/workflow"  # type: ignore[attr-defined]
    assert f"the document is {len(body)} characters long; the limit is {MAX_TEXT}" in str(inner)


def _levels(tmp_path: Any, widths: list[int]) -> Any:
    """``l0.json`` … : level ``i`` has ``widths[i]`` nodes in a chain, each naming
    ``l{i+1}.json`` (the last level's run an agent)."""
    for i, width in enumerate(widths):
        last = i == len(widths) - 1
        nodes: list[dict[str, Any]] = [
            {
                "id": f"n{j}",
                **({"agent_name": "greeter-agent"} if last else {"workflow": f"l{i + 1}.json"}),
            }
            for j in range(width)
        ]
        nodes[0]["is_entry"] = True
        nodes[-1]["is_exit"] = True
        connections = [{"source_id": f"n{j}", "target_id": f"n{j + 1}"} for j in range(width - 1)]
        (tmp_path / f"l{i}.json").write_text(text({"nodes": nodes, "connections": connections}))
    return tmp_path / "l0.json"


def test_a_sub_workflow_file_named_many_times_is_loaded_once(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34, F6: a DAG naming the same sub-file K times per level grew as K^depth
    # (2.4 KB took 20 s and 234 MiB); each distinct file is now loaded once.
    from plait_dag import _loader
    from plait_documents import load_spec

    loads: list[str] = []
    real = _loader._load

    def counted(text: str, ctx: Any, stack: Any) -> Any:
        loads.append(ctx.source)
        return real(text, ctx, stack)

    monkeypatch.setattr(_loader, "_load", counted)
    spec = load_spec(_levels(tmp_path, [3, 3, 3, 3]), executors=AGENTS)
    assert len(loads) == 4  # was 1 + 3 + 9 + 27
    assert len({Path(s).name for s in loads}) == 4
    # the spec is the same as before: every node holds its sub-workflow's spec
    inner = spec.nodes[0].config["workflow"]["spec"]
    assert [n["id"] for n in inner["nodes"]] == ["n0", "n1", "n2"]
    assert inner["nodes"][2]["config"]["workflow"]["spec"]["nodes"][1]["id"] == "n1"
    workflow = plait.load(tmp_path / "l0.json", executors=AGENTS)
    assert len(workflow.spec.nodes) == 3


def test_expanding_past_the_node_bound_is_refused_before_the_specs_are_copied(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34, F6: the expanded count is checked against the kernel's bound (what one load
    # may build) while loading, not after K^depth specs were made.
    from plait.spi import MAX_LOAD_NODES
    from plait_documents import load_spec

    top = _levels(tmp_path, [320, 320])  # 320 + 320 * 320 = 102,720 nodes
    with pytest.raises(LoadError) as caught:
        load_spec(top, executors=AGENTS)
    (problem,) = caught.value.problems
    assert problem.path == "/nodes"  # type: ignore[attr-defined]
    assert f"the document expands to more than {MAX_LOAD_NODES:,} nodes" in str(problem)
    _levels(tmp_path, [300, 320])  # 300 + 96,000 fits
    assert len(load_spec(top, executors=AGENTS).nodes) == 300


def test_an_agent_whose_annotations_cannot_fit_a_dag_node_is_refused_at_its_node() -> None:
    async def count(context: dict[str, Any]) -> int:
        return len(context)

    async def shout(text: str) -> dict[str, Any]:
        return {"shout": text.upper()}

    async def anything(context):  # type: ignore[no-untyped-def]
        return {"seen": True}

    agents = {**AGENTS, "meal-agent": count, "glucose-agent": shout, "feedback-agent": anything}
    document = json.dumps(seed(), indent=2)
    lines = document.splitlines()

    def line_of(name: str) -> int:
        return next(i for i, line in enumerate(lines, 1) if f'"agent_name": "{name}"' in line)

    found = problems(document, executors=agents)
    assert [(p.path, p.line) for p in found] == [  # type: ignore[attr-defined]
        ("/nodes/1/agent_name", line_of("meal-agent")),
        ("/nodes/2/agent_name", line_of("glucose-agent")),
    ]
    assert found[0].reason == (  # type: ignore[attr-defined]
        "node 'node-meal': agent 'meal-agent' returns int, but a DAG node merges what its "
        "agent returns into the run context: a dict[str, Any] of updates (or None)"
    )
    assert found[1].reason == (  # type: ignore[attr-defined]
        "node 'node-glucose': agent 'glucose-agent' takes str, but a DAG node gives its "
        "agent the run context as a dict[str, Any]"
    )


# -- seed 001 behaviours: duplicate ids, no entry node; a DAG's spec is acyclic ----------


def test_a_duplicate_node_id_is_an_error_at_the_second_naming_the_first() -> None:
    document = seed()
    document["nodes"].append({"id": "node-meal", "agent_name": "meal-agent"})
    found = problems(document, executors=AGENTS)
    duplicate = [p for p in found if "duplicate node id" in str(p)]
    assert [p.path for p in duplicate] == ["/nodes/4/id"]  # type: ignore[attr-defined]
    assert "duplicate node id 'node-meal' (first at /nodes/1)" in str(duplicate[0])
    assert duplicate[0].line == 1  # type: ignore[attr-defined]  # where it is in the text


def test_a_document_without_an_entry_node_is_an_error_listing_the_nodes() -> None:
    document = seed()
    del document["nodes"][0]["is_entry"]
    (problem,) = problems(document, executors=AGENTS)
    assert problem.path == "/nodes"  # type: ignore[attr-defined]
    assert 'no entry node: mark exactly one node with "is_entry": true' in str(problem)
    assert "node-greeter" in str(problem) and "node-feedback" in str(problem)


def test_a_dag_without_a_loop_builds_an_acyclic_spec_and_one_with_a_loop_does_not() -> None:
    assert plait.load(text(seed()), executors=AGENTS).spec.acyclic is True
    document = seed()
    document["connections"].append(
        {"source_id": "node-glucose", "target_id": "node-meal", "max_iterations": 2}
    )
    assert plait.load(text(document), executors=AGENTS).spec.acyclic is False
