"""Graph export: Mermaid and DOT from the IR, prefixes as subgraphs, converters apart."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from plait import EdgeGroupSpec, NodeSpec, WorkflowSpec
from plait_export import boxes, node_role, split_id, to_dot, to_mermaid


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


def wide_spec() -> WorkflowSpec:
    """A larger composition: 4 fragments, each nesting 2 more, each holding 5 executors,
    fanned out to and in from, with converters and adapters between them. Enough string
    ids that any set or hash-keyed structure on the way iterates in a seed-dependent order.
    """
    ids: list[str] = []
    groups: list[EdgeGroupSpec] = []
    for f in range(4):
        heads: list[str] = []
        for g in range(2):
            names = [f"frag{f}/part{g}/step{n}" for n in range(5)]
            ids.extend(names)
            heads.append(names[0])
            for a, b in zip(names, names[1:]):
                groups.append(EdgeGroupSpec(f"direct:{a}->{b}", "direct", (a,), (b,)))
        converter = f"frag{f}/convert:int->str:to_text@frag{f}/part1/step0"
        adapter = f"adapt:frag{f}/part0/step4->frag{f}/part1/step0"
        ids.extend((converter, adapter))
        groups.append(
            EdgeGroupSpec(
                f"fan_out:{f}", "fan_out", (f"frag{f}/part0/step4",), (adapter, converter)
            )
        )
        groups.append(
            EdgeGroupSpec(
                f"fan_in:{f}", "fan_in", (converter, adapter), (heads[1],), {"merge": "concat"}
            )
        )
    groups.append(
        EdgeGroupSpec(
            "switch:frags",
            "switch",
            ("frag0/part1/step4",),
            tuple(f"frag{f}/part0/step0" for f in range(1, 4)),
            {
                "case_targets": ["frag2/part0/step0", "frag1/part0/step0"],
                "default": "frag3/part0/step0",
            },
        )
    )
    return WorkflowSpec("wide", ids[0], tuple(NodeSpec(i) for i in ids), tuple(groups))


# Run in a fresh interpreter: every export of both specs, straight and through the kernel's
# exporter registry, after a JSON round trip of the spec; and, to show the seed took effect,
# the order in which a set of the node ids iterates.
_EXPORT_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import plait_export
from plait import WorkflowSpec
from plait_testing import fake_entry_point, make_plugin_manager
from test_export import composed_spec, wide_spec

manager = make_plugin_manager(
    fake_entry_point("export", plait_export, distribution="plait-export")
)
exporters = manager.registry("exporter")
out = {"set_order": list({node_id for node_id in wide_spec().node_ids})}
for spec in (composed_spec(), wide_spec()):
    spec = WorkflowSpec.from_json(spec.to_json())
    for fmt in ("mermaid", "dot"):
        out[f"{spec.name}.{fmt}"] = exporters.get(fmt).export(spec)
    out[f"{spec.name}.direct"] = [plait_export.to_mermaid(spec), plait_export.to_dot(spec)]
print(json.dumps(out))
"""

HASH_SEEDS = ("0", "1", "2", "3", "1234", "4294967295")


def _export_with_hash_seed(seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", _EXPORT_SCRIPT, str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_export_is_the_same_under_every_hash_seed() -> None:
    runs = {seed: _export_with_hash_seed(seed) for seed in HASH_SEEDS}
    # the seeds did change hashing: a set of the same node ids iterated differently
    assert len({tuple(run.pop("set_order")) for run in runs.values()}) > 1  # type: ignore[arg-type]
    first = runs[HASH_SEEDS[0]]
    for seed, run in runs.items():
        assert run == first, f"PYTHONHASHSEED={seed} exported differently from {HASH_SEEDS[0]}"
    # and the same as this process, through the registry as through the functions
    assert first["composed.mermaid"] == to_mermaid(composed_spec())
    assert first["wide.dot"] == to_dot(wide_spec())
    assert first["wide.direct"] == [first["wide.mermaid"], first["wide.dot"]]


def test_export_handles_a_bare_spec() -> None:
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


# -- foreach blocks (issue 34: the body was drawn outside the block's box) --------------------


def foreach_spec() -> WorkflowSpec:
    """What a steps file compiles ``words → foreach outer (foreach inner (grow), after) →
    joined`` to: body ids carry no prefix, only each block's gather does."""
    kinds = {
        "words": "steps.agent",
        "outer": "steps.foreach",
        "outer/gather": "steps.gather",
        "inner": "steps.foreach",
        "inner/gather": "steps.gather",
        "grow": "steps.agent",
        "after": "steps.agent",
        "joined": "steps.agent",
    }
    pairs = [
        ("words", "outer"),
        ("outer", "inner"),
        ("outer", "outer/gather"),
        ("inner", "grow"),
        ("inner", "inner/gather"),
        ("grow", "grow"),  # a loop inside the body
        ("grow", "inner/gather"),
        ("inner/gather", "after"),
        ("after", "outer/gather"),
        ("outer/gather", "joined"),
    ]
    groups = tuple(EdgeGroupSpec(f"direct:{s}->{t}", "direct", (s,), (t,)) for s, t in pairs)
    nodes = tuple(NodeSpec(i, kind=k) for i, k in kinds.items())
    return WorkflowSpec("each", "words", nodes, groups)


def _inside(text: str, label: str, opening: str, closing: str) -> list[str]:
    """The lines between the opening of the box labelled ``label`` and its end."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if opening in line and label in line)
    depth, out = 0, list[str]()
    for line in lines[start + 1 :]:
        if line.strip() == closing and depth == 0:
            return out
        depth += opening in line
        depth -= line.strip() == closing
        out.append(line.strip())
    raise AssertionError(f"{label} is not closed")


def test_a_foreach_body_is_drawn_inside_its_box() -> None:
    text = to_mermaid(foreach_spec())
    outer = _inside(text, '["foreach outer"]', "subgraph", "end")
    inner = _inside(text, '["foreach inner"]', "subgraph", "end")
    key = {m.group(2): m.group(1) for m in re.finditer(r'(n\d+)\["([^"]+)"\]', text)}
    assert f'{key["grow"]}["grow"]' in inner and f'{key["inner"]}["inner"]' in inner
    assert f'{key["after"]}["after"]' in outer and f'{key["outer"]}["outer"]' in outer
    assert any("foreach inner" in line for line in outer), "the inner block nests in the outer"
    assert not any('["words"]' in line or '["joined"]' in line for line in outer)
    dot = to_dot(foreach_spec())
    inner_dot = dot.split('label="foreach inner";', 1)[1].split("}", 1)[0]
    assert '"grow" [label="grow"]' in inner_dot and '"inner" [label="inner"]' in inner_dot


def test_boxes_nest_a_fragment_inside_a_foreach_body() -> None:
    kinds = {
        "each": "steps.foreach",
        "each/gather": "steps.gather",
        "frag/a": "python",
        "frag/b": "python",
        "after": "python",
    }
    edges = [
        ("each", "frag/a"),
        ("frag/a", "frag/b"),
        ("frag/b", "each/gather"),
        ("each", "each/gather"),
        ("each/gather", "after"),
    ]
    found = boxes(kinds, edges)
    assert found.parent["frag/a"] == "frag/" and found.parent["frag/"] == "each/"
    assert found.parent["each"] == "each/" and found.parent["each/gather"] == "each/"
    assert found.parent["after"] is None and found.parent["each/"] is None
    assert found.labels["each/"] == "foreach each" and found.foreach == {"each/"}
    # a prefix box only partly in the body stays where it was; its body node moves in
    partly = boxes({**kinds, "frag/c": "python"}, [*edges, ("after", "frag/c")])
    assert partly.parent["frag/"] is None and partly.parent["frag/a"] == "each/"


def test_ports_are_drawn_tied_to_their_executor_and_only_when_there_are_some() -> None:
    from plait import PortSpec

    nodes = (NodeSpec("review/dispatch"), NodeSpec("review/aggregate"))
    edges = (EdgeGroupSpec("direct:d->a", "direct", ("review/dispatch",), ("review/aggregate",)),)
    plain = WorkflowSpec("w", "review/dispatch", nodes, edges)
    ports = (
        PortSpec("review/entry", "review/dispatch", "in", ("str",)),
        PortSpec("review/aggregator_out", "review/aggregate", "out", ("str",), "aggregate"),
    )
    ported = WorkflowSpec("w", "review/dispatch", nodes, edges, ports=ports)
    mermaid = to_mermaid(ported)
    assert 'p0(["in: review/entry"]):::port\n  p0 -.-> n0' in mermaid
    assert 'p1(["out: review/aggregator_out (aggregate)"]):::port\n  n1 -.-> p1' in mermaid
    assert "classDef port" in mermaid and "classDef port" not in to_mermaid(plain)
    assert to_mermaid(plain) == mermaid.split("  p0(")[0] + mermaid.split("-.-> p1\n")[1].replace(
        "  classDef port fill:#eef7ee,stroke:#4a8a4a,stroke-dasharray:2 2\n", ""
    )
    dot = to_dot(ported)
    assert '"port:review/entry" -> "review/dispatch" [style=dotted, arrowhead=empty];' in dot
    assert '"review/aggregate" -> "port:review/aggregator_out" [style=dotted' in dot
    assert "port:" not in to_dot(plain)
