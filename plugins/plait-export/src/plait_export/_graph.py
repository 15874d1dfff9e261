"""Graph export: a :class:`~plait.WorkflowSpec` as a Mermaid flowchart or Graphviz DOT.

Composed fragments show as nested boxes: an id ``prep/normalize`` is drawn as
``normalize`` inside a subgraph (Mermaid) or cluster (DOT) labelled ``prep``, and
``outer/inner/x`` nests ``inner`` inside ``outer``. Nodes the builder inserted are drawn
apart from executors: converters (ids ``convert:…``) as dashed hexagons, explicit adapters
(ids ``adapt:…``) as parallelograms. The start executor has a double border. Edges carry
their router (``fan-out``, ``fan-in (list)``, ``case 1`` …); plain direct edges carry none.

The output is deterministic: the same spec always gives the same text.
"""

from __future__ import annotations

from collections.abc import Iterator

from plait import EdgeGroupSpec, WorkflowSpec

__all__ = ["to_dot", "to_mermaid", "node_role", "split_id"]

SEPARATOR = "/"
CONVERTER_PREFIX = "convert:"
ADAPTER_PREFIX = "adapt:"


def split_id(node_id: str) -> tuple[tuple[str, ...], str]:
    """``(prefix path, local name)`` of a node id.

    ``prep/normalize`` gives ``(("prep",), "normalize")``. A segment starting with
    ``convert:`` or ``adapt:`` begins the local name, since those ids embed other ids:
    ``adapt:prep/a->b`` is a top-level node.
    """
    parts = node_id.split(SEPARATOR)
    for i, part in enumerate(parts):
        if part.startswith((CONVERTER_PREFIX, ADAPTER_PREFIX)) or i == len(parts) - 1:
            return tuple(parts[:i]), SEPARATOR.join(parts[i:])
    return (), node_id  # pragma: no cover - the loop always returns


def node_role(node_id: str) -> str:
    """``converter``, ``adapter`` or ``executor``, from the node's local name."""
    local = split_id(node_id)[1]
    if local.startswith(CONVERTER_PREFIX):
        return "converter"
    if local.startswith(ADAPTER_PREFIX):
        return "adapter"
    return "executor"


class _Cluster:
    """One prefix level: the nodes directly in it and the prefixes nested in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[tuple[str, str]] = []  # (node id, local name)
        self.children: dict[str, _Cluster] = {}


def _tree(spec: WorkflowSpec) -> _Cluster:
    root = _Cluster("")
    ids = list(spec.node_ids)
    known = set(ids)
    for group in spec.edge_groups:  # draw ids an invalid spec references, too
        for node_id in (*group.sources, *group.targets):
            if node_id not in known:
                known.add(node_id)
                ids.append(node_id)
    for node_id in ids:
        path, local = split_id(node_id)
        cluster = root
        for part in path:
            cluster = cluster.children.setdefault(part, _Cluster(part))
        cluster.nodes.append((node_id, local))
    return root


def _edges(group: EdgeGroupSpec) -> Iterator[tuple[str, str, str | None]]:
    """``(source, target, label)`` for every edge of ``group``."""
    labels: dict[str, str | None] = {}
    if group.router == "switch":
        cases = group.options.get("case_targets") or []
        for target in group.targets:
            marks = [f"case {i + 1}" for i, t in enumerate(cases) if t == target]
            if group.options.get("default") == target:
                marks.append("default")
            labels[target] = ", ".join(marks) or "switch"
    else:
        label: str | None = {
            "direct": None,
            "conditional": "condition",
            "fan_out": "fan-out",
            "fan_in": f"fan-in ({group.options.get('merge', 'list')})",
        }.get(group.router, group.router)
        labels = dict.fromkeys(group.targets, label)
    for source in group.sources:
        for target in group.targets:
            yield source, target, labels[target]


# -- Mermaid -------------------------------------------------------------------------------

_MERMAID_SHAPES = {
    "executor": ('["', '"]'),
    "converter": ('{{"', '"}}'),
    "adapter": ('[/"', '"/]'),
}
_MERMAID_CLASSES = (
    "classDef converter fill:#fff4d6,stroke:#b7791f,stroke-dasharray:4 3",
    "classDef adapter fill:#e6f0ff,stroke:#3b6db3",
    "classDef start stroke-width:3px",
)


def _mermaid_text(text: str) -> str:
    return (
        text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    )


def to_mermaid(spec: WorkflowSpec) -> str:
    """The workflow as a Mermaid ``flowchart LR``."""
    keys: dict[str, str] = {}
    lines = ["flowchart LR"]
    if spec.name:
        lines.append(f"  %% workflow: {spec.name}")
    counter = [0]

    def emit(cluster: _Cluster, depth: int) -> None:
        pad = "  " * depth
        for node_id, local in cluster.nodes:
            key = keys[node_id] = f"n{len(keys)}"
            role = node_role(node_id)
            left, right = _MERMAID_SHAPES[role]
            classes = [role] if role != "executor" else []
            if node_id == spec.start:
                classes.append("start")
            suffix = f":::{','.join(classes)}" if classes else ""
            lines.append(f"{pad}{key}{left}{_mermaid_text(local)}{right}{suffix}")
        for name, child in cluster.children.items():
            sub = f"s{counter[0]}"
            counter[0] += 1
            lines.append(f'{pad}subgraph {sub} ["{_mermaid_text(name)}"]')
            emit(child, depth + 1)
            lines.append(f"{pad}end")

    emit(_tree(spec), 1)
    for group in spec.edge_groups:
        for source, target, label in _edges(group):
            arrow = f'-->|"{_mermaid_text(label)}"|' if label else "-->"
            lines.append(f"  {keys[source]} {arrow} {keys[target]}")
    lines.extend(f"  {c}" for c in _MERMAID_CLASSES)
    return "\n".join(lines) + "\n"


# -- Graphviz DOT --------------------------------------------------------------------------

_DOT_STYLES = {
    "executor": "",
    "converter": ', shape=hexagon, style="dashed,filled", fillcolor="#fff4d6", color="#b7791f"',
    "adapter": ', shape=parallelogram, style=filled, fillcolor="#e6f0ff", color="#3b6db3"',
}


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(spec: WorkflowSpec) -> str:
    """The workflow in Graphviz DOT (``digraph``; prefixes become ``cluster_*`` subgraphs)."""
    lines = [
        f"digraph {_dot_text(spec.name or 'workflow')} {{",
        "  rankdir=LR;",
        '  node [shape=box, style=rounded, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    counter = [0]

    def emit(cluster: _Cluster, depth: int) -> None:
        pad = "  " * depth
        for node_id, local in cluster.nodes:
            attrs = f"label={_dot_text(local)}{_DOT_STYLES[node_role(node_id)]}"
            if node_id == spec.start:
                attrs += ", peripheries=2"
            lines.append(f"{pad}{_dot_text(node_id)} [{attrs}];")
        for name, child in cluster.children.items():
            lines.append(f"{pad}subgraph {_dot_text(f'cluster_{counter[0]}')} {{")
            counter[0] += 1
            lines.append(f"{pad}  label={_dot_text(name)};")
            lines.append(f'{pad}  style=rounded; color="#888888";')
            emit(child, depth + 1)
            lines.append(f"{pad}}}")

    emit(_tree(spec), 1)
    for group in spec.edge_groups:
        for source, target, label in _edges(group):
            extra = f" [label={_dot_text(label)}]" if label else ""
            lines.append(f"  {_dot_text(source)} -> {_dot_text(target)}{extra};")
    lines.append("}")
    return "\n".join(lines) + "\n"
