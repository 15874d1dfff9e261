"""Graph export: a :class:`~plait.WorkflowSpec` as a Mermaid flowchart or Graphviz DOT.

Composed fragments show as nested boxes: an id ``prep/normalize`` is drawn as
``normalize`` inside a subgraph (Mermaid) or cluster (DOT) labelled ``prep``, and
``outer/inner/x`` nests ``inner`` inside ``outer``. Nodes the builder inserted are drawn
apart from executors: converters (ids ``convert:…``) as dashed hexagons, explicit adapters
(ids ``adapt:…``) as parallelograms. The start executor has a double border. Edges carry
their router (``fan-out``, ``fan-in (list)``, ``case 1`` …); plain direct edges carry none.
A workflow's ports (:attr:`plait.WorkflowSpec.ports`, its declared extension points such as
``analysis/aggregator_out``) are small rounded nodes tied to their executor by a dotted
arrow: into it for an ``in`` port, out of it for an ``out`` port.

A foreach block of a steps file (a ``steps.foreach`` node ``each``, its gather
``each/gather``) is a box too, labelled ``foreach each``: the foreach node, every node of
its body and the gather are drawn inside it (:func:`boxes`), though body ids carry no
prefix.

The output is deterministic: the same spec always gives the same text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from plait import EdgeGroupSpec, PortSpec, WorkflowSpec

__all__ = ["Boxes", "boxes", "to_dot", "to_mermaid", "node_role", "split_id"]

SEPARATOR = "/"
CONVERTER_PREFIX = "convert:"
ADAPTER_PREFIX = "adapt:"
#: The node kinds of a steps file's foreach block: its start and its gather.
FOREACH_KIND = "steps.foreach"
GATHER_KIND = "steps.gather"


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


@dataclasses.dataclass(frozen=True)
class Boxes:
    """Which box each node and box is drawn in.

    :param parent: node id or box id -> the box it is drawn in (``None``: the top level).
        A box id is a prefix ending in ``/`` (``prep/``, ``prep/inner/``, ``each/``).
    :param labels: box id -> its label (``prep``; ``foreach each`` for a foreach block).
    :param foreach: the box ids that are foreach blocks.
    """

    parent: Mapping[str, str | None]
    labels: Mapping[str, str]
    foreach: frozenset[str]


def boxes(kinds: Mapping[str, str], edges: Iterable[tuple[str, str]]) -> Boxes:
    """The boxes of a graph: one per id prefix (``prep/normalize`` is in ``prep/``), and one
    per foreach block, which holds the foreach node, its gather (``<id>/gather``) and every
    node between them (reached from the foreach node without passing its gather: a body
    has no other way out), though body ids carry no prefix.

    :param kinds: every node id (in drawing order) -> its kind.
    :param edges: ``(source, target)`` of every edge.

    A body node goes in its innermost block; a block nested in another block's body goes
    in that block's box, and so does a fragment (a prefix box) whose nodes are all in it.
    """
    parent: dict[str, str | None] = {}
    labels: dict[str, str] = {}
    for node_id in kinds:
        path, _local = split_id(node_id)
        for depth in range(1, len(path) + 1):
            box = SEPARATOR.join(path[:depth]) + SEPARATOR
            if box not in labels:
                labels[box] = path[depth - 1]
                parent[box] = SEPARATOR.join(path[: depth - 1]) + SEPARATOR if depth > 1 else None
        parent[node_id] = SEPARATOR.join(path) + SEPARATOR if path else None
    inside: dict[str, set[str]] = {box: set() for box in labels}  # by prefix
    for node_id in kinds:
        for box in _chain(node_id, parent):
            inside[box].add(node_id)
    following: dict[str, list[str]] = {}
    for source, target in edges:
        following.setdefault(source, []).append(target)
    blocks: dict[str, set[str]] = {}  # box -> its members
    for node_id, kind in kinds.items():
        gather = node_id + SEPARATOR + "gather"
        if kind != FOREACH_KIND or kinds.get(gather) != GATHER_KIND:
            continue
        members = {node_id, gather}
        frontier = [node_id]
        while frontier:
            for target in following.get(frontier.pop(), ()):
                if target not in members and target in kinds:
                    members.add(target)
                    frontier.append(target)
        box = node_id + SEPARATOR
        blocks[box] = members
        labels[box] = "foreach " + split_id(node_id)[1]

    def innermost(node_id: str, but: str | None = None) -> str | None:
        found = [b for b, members in blocks.items() if b != but and node_id in members]
        return min(found, key=lambda b: (len(blocks[b]), b), default=None)

    def place(item: str, box: str) -> None:
        """Put ``item`` (with every prefix box around it that lies wholly in the block
        ``box``) in ``box``, unless it is there already or that would make a cycle."""
        while True:
            up = parent.get(item)
            if up is None or up == box or box in _chain(up, parent) or up in _chain(box, parent):
                break
            if not inside.get(up, {up}) <= blocks[box] or up in blocks:
                break
            item = up
        if box == item or box in _chain(item, parent) or item in _chain(box, parent):
            return
        parent[item] = box

    for box in sorted(blocks, key=lambda b: -len(blocks[b])):  # outer blocks first
        outer = innermost(box[: -len(SEPARATOR)], but=box)
        if outer is not None:
            place(box, outer)
    for node_id in kinds:
        block = innermost(node_id)
        if block is not None:
            place(node_id, block)
    return Boxes(parent=parent, labels=labels, foreach=frozenset(blocks))


def _chain(item: str, parent: Mapping[str, str | None]) -> list[str]:
    """The boxes around ``item``, innermost first."""
    out: list[str] = []
    up = parent.get(item)
    while up is not None and up not in out:
        out.append(up)
        up = parent.get(up)
    return out


class _Cluster:
    """One prefix level: the nodes directly in it and the prefixes nested in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[tuple[str, str]] = []  # (node id, local name)
        self.children: dict[str, _Cluster] = {}


def _tree(spec: WorkflowSpec) -> _Cluster:
    kinds = {node.id: node.kind for node in spec.nodes}
    for group in spec.edge_groups:  # draw ids an invalid spec references, too
        for node_id in (*group.sources, *group.targets):
            kinds.setdefault(node_id, "")
    edges = [(s, t) for group in spec.edge_groups for s in group.sources for t in group.targets]
    found = boxes(kinds, edges)
    root = _Cluster("")
    clusters: dict[str | None, _Cluster] = {None: root}

    def cluster_of(box: str | None) -> _Cluster:
        if box not in clusters:
            assert box is not None
            outer = cluster_of(found.parent[box])
            clusters[box] = outer.children.setdefault(box, _Cluster(found.labels[box]))
        return clusters[box]

    for node_id in kinds:
        cluster_of(found.parent[node_id]).nodes.append((node_id, split_id(node_id)[1]))
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
#: drawn only for a workflow that has ports, so a drawing without any stays as it was
_MERMAID_PORT_CLASS = "classDef port fill:#eef7ee,stroke:#4a8a4a,stroke-dasharray:2 2"


def _port_label(port: PortSpec) -> str:
    semantics = f" ({port.semantics})" if port.semantics else ""
    return f"{port.direction}: {port.name}{semantics}"


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
        for child in cluster.children.values():
            sub = f"s{counter[0]}"
            counter[0] += 1
            lines.append(f'{pad}subgraph {sub} ["{_mermaid_text(child.name)}"]')
            emit(child, depth + 1)
            lines.append(f"{pad}end")

    emit(_tree(spec), 1)
    for group in spec.edge_groups:
        for source, target, label in _edges(group):
            arrow = f'-->|"{_mermaid_text(label)}"|' if label else "-->"
            lines.append(f"  {keys[source]} {arrow} {keys[target]}")
    for index, port in enumerate(spec.ports):
        if port.executor not in keys:
            continue  # an invalid spec: spec.problems() names it
        key = f"p{index}"
        lines.append(f'  {key}(["{_mermaid_text(_port_label(port))}"]):::port')
        ends = (key, keys[port.executor]) if port.direction == "in" else (keys[port.executor], key)
        lines.append(f"  {ends[0]} -.-> {ends[1]}")
    lines.extend(f"  {c}" for c in _MERMAID_CLASSES)
    if spec.ports:
        lines.append(f"  {_MERMAID_PORT_CLASS}")
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
        for child in cluster.children.values():
            lines.append(f"{pad}subgraph {_dot_text(f'cluster_{counter[0]}')} {{")
            counter[0] += 1
            lines.append(f"{pad}  label={_dot_text(child.name)};")
            lines.append(f'{pad}  style=rounded; color="#888888";')
            emit(child, depth + 1)
            lines.append(f"{pad}}}")

    emit(_tree(spec), 1)
    for group in spec.edge_groups:
        for source, target, label in _edges(group):
            extra = f" [label={_dot_text(label)}]" if label else ""
            lines.append(f"  {_dot_text(source)} -> {_dot_text(target)}{extra};")
    for port in spec.ports:
        node = _dot_text(f"port:{port.name}")
        lines.append(
            f"  {node} [label={_dot_text(_port_label(port))}, shape=box, "
            'style="rounded,dashed,filled", fillcolor="#eef7ee", color="#4a8a4a", fontsize=10];'
        )
        executor = _dot_text(port.executor)
        ends = (node, executor) if port.direction == "in" else (executor, node)
        lines.append(f"  {ends[0]} -> {ends[1]} [style=dotted, arrowhead=empty];")
    lines.append("}")
    return "\n".join(lines) + "\n"
