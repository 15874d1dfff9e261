"""Graph export: Mermaid and DOT from the IR, prefixes as subgraphs, converters apart."""

from __future__ import annotations

import re

import pytest
from plait.spec import EdgeGroupSpec, NodeSpec, WorkflowSpec
from plait_export import node_role, split_id, to_dot, to_mermaid


def composed_spec() -> WorkflowSpec:
    """What composing two fragments, a nested one, a converter and an adapter gives."""
    ids = [
        "prep/normalize",
        "prep/enrich",
        "summary/inner/summarize",
        "summary/publish",
        "convert:list[str]->str:join_lines",
        "adapt:prep/enrich->summary/inner/summarize",
        'say "hi"',
    ]
    groups = [
        EdgeGroupSpec("direct:prep/normalize->prep/enrich", "direct", (ids[0],), (ids[1],)),
        EdgeGroupSpec("direct:a", "direct", (ids[1],), (ids[5],)),
        EdgeGroupSpec("direct:b", "direct", (ids[5],), (ids[2],)),
        EdgeGroupSpec("fan_out:c", "fan_out", (ids[2],), (ids[3], ids[4])),
        EdgeGroupSpec("fan_in:d", "fan_in", (ids[4], ids[3]), (ids[6],), {"merge": "concat"}),
        EdgeGroupSpec(
            "switch:e",
            "switch",
            (ids[6],),
            (ids[0], ids[3]),
            {"case_targets": [ids[0]], "default": ids[3]},
        ),
    ]
    return WorkflowSpec("composed", ids[0], tuple(NodeSpec(i) for i in ids), tuple(groups))


@pytest.mark.parametrize(
    ("node_id", "expected"),
    [
        ("plain", ((), "plain")),
        ("prep/normalize", (("prep",), "normalize")),
        ("outer/inner/x", (("outer", "inner"), "x")),
        ("convert:a->b:n", ((), "convert:a->b:n")),
        ("adapt:prep/a->b/c", ((), "adapt:prep/a->b/c")),
        ("outer/adapt:a/x->b", (("outer",), "adapt:a/x->b")),
        ("p/convert:int->str:n@p/t", (("p",), "convert:int->str:n@p/t")),
    ],
)
def test_split_id_keeps_inserted_nodes_whole(node_id: str, expected: object) -> None:
    assert split_id(node_id) == expected


def test_node_roles() -> None:
    assert node_role("p/convert:x->y:n") == "converter"
    assert node_role("adapt:a->b") == "adapter"
    assert node_role("p/normalize") == "executor"


def test_mermaid_nests_prefixes_and_marks_inserted_nodes() -> None:
    text = to_mermaid(composed_spec())
    lines = text.splitlines()
    assert lines[:5] == [
        "flowchart LR",
        "  %% workflow: composed",
        '  n0{{"convert:list[str]-#gt;str:join_lines"}}:::converter',
        '  n1[/"adapt:prep/enrich-#gt;summary/inner/summarize"/]:::adapter',
        '  n2["say #quot;hi#quot;"]',
    ]
    assert lines[5:16] == [
        '  subgraph s0 ["prep"]',
        '    n3["normalize"]:::start',
        '    n4["enrich"]',
        "  end",
        '  subgraph s1 ["summary"]',
        '    n5["publish"]',
        '    subgraph s2 ["inner"]',  # summary/inner nests inside summary
        '      n6["summarize"]',
        "    end",
        "  end",
        "  n3 --> n4",
    ]
    assert '  n6 -->|"fan-out"| n0' in lines
    assert '  n0 -->|"fan-in (concat)"| n2' in lines
    assert '  n2 -->|"case 1"| n3' in lines and '  n2 -->|"default"| n5' in lines
    assert "classDef converter" in text and "classDef adapter" in text


def test_dot_uses_clusters_and_distinct_shapes() -> None:
    text = to_dot(composed_spec())
    assert text.startswith('digraph "composed" {\n  rankdir=LR;')
    assert '  subgraph "cluster_0" {\n    label="prep";' in text
    assert '"prep/normalize" [label="normalize", peripheries=2];' in text
    assert re.search(r'subgraph "cluster_2" \{\n\s+label="inner";', text)
    converter = re.search(r'\n  "convert:list\[str\]->str:join_lines" \[(.*)\];\n', text)
    assert converter is not None and "shape=hexagon" in converter.group(1)
    assert "shape=parallelogram" in text
    assert '"say \\"hi\\"" [label="say \\"hi\\""];' in text
    assert '"summary/inner/summarize" -> "summary/publish" [label="fan-out"];' in text
    assert '"prep/normalize" -> "prep/enrich";' in text
    assert text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")


def test_export_is_deterministic_and_handles_a_bare_spec() -> None:
    assert to_mermaid(composed_spec()) == to_mermaid(composed_spec())
    assert to_dot(composed_spec()) == to_dot(composed_spec())
    bare = WorkflowSpec(
        None, "a", (NodeSpec("a"),), (EdgeGroupSpec("x", "teleport", ("a",), ("ghost",)),)
    )
    assert to_mermaid(bare).splitlines()[:3] == [
        "flowchart LR",
        '  n0["a"]:::start',
        '  n1["ghost"]',
    ]
    assert '  n0 -->|"teleport"| n1' in to_mermaid(bare)
    assert to_dot(bare).startswith('digraph "workflow" {')
