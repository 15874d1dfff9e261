"""What the pages show, computed from stored JSON: graph elements, node states, values
cut to size, the checkpoint tree's marks, and forms from a response type's JSON Schema.

Everything here takes JSON values a store returned (untrusted): shapes are checked, and
nothing a value names is imported or called.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from plait_durable import CheckpointInfo, CheckpointView

__all__ = [
    "DAGRE_LIMIT",
    "VALUE_LIMIT",
    "layered_positions",
    "ScrubPoint",
    "graph_elements",
    "json_text",
    "node_states",
    "parse_answer",
    "schema_for_name",
    "schema_for_type",
    "schema_problem",
    "scrub_points",
    "value_at",
]

#: Characters of a value shown before "expand".
VALUE_LIMIT = 2000
#: The most nodes and edges a graph may have to be sent to the browser.
MAX_ELEMENTS = 20000
#: Above this many nodes the browser is sent positions (:func:`layered_positions`) instead
#: of running dagre: dagre took 20 s for 1,000 nodes in composed workflows here.
DAGRE_LIMIT = 300


def json_text(value: Any) -> str:
    """``value`` as indented JSON (sorted keys, non-ASCII kept)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def value_at(state: Mapping[str, Any], path: Sequence[Any]) -> Any:
    """The value at ``path`` (keys and list indexes) in ``state``.

    :raises KeyError: nothing is there.
    """
    value: Any = state
    for part in path:
        in_dict = isinstance(value, dict) and isinstance(part, str) and part in value
        in_list = isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        if not (in_dict or in_list):
            raise KeyError(part)
        value = value[part]
    return value


def node_states(view: CheckpointView, parent: CheckpointView | None) -> dict[str, list[str]]:
    """Executor id -> its states at ``view``: ``ran`` (ran in the superstep that ended
    here: it had messages pending at ``parent``, or its state changed), ``pending`` (has
    messages for the next one), ``waiting`` (asked for outside input) and ``failed`` (the
    executor a failed checkpoint names)."""
    out: dict[str, list[str]] = {}

    def mark(node: Any, state: str) -> None:
        if isinstance(node, str):
            out.setdefault(node, []).append(state)

    # ran: what the parent had pending was delivered in this superstep; an executor whose
    # state or visit count changed ran too (a message may have waited in a fan-in buffer)
    if parent is not None:
        ran = {n for n, messages in _dict(parent.state.get("pending")).items() if messages}
        visits = _dict(view.state.get("visits"))
        before = _dict(parent.state.get("visits"))
        ran |= {n for n, c in visits.items() if _int(c) > _int(before.get(n, 0))}
        state, old = (
            _dict(view.state.get("executor_state")),
            _dict(parent.state.get("executor_state")),
        )
        ran |= {n for n, value in state.items() if old.get(n) != value}
        for node in sorted(ran):
            mark(node, "ran")
    for node, messages in _dict(view.state.get("pending")).items():
        if messages:
            mark(node, "pending")
    requests = view.state.get("requests")
    for request in requests if isinstance(requests, list) else []:
        if isinstance(request, dict):
            mark(request.get("executor_id"), "waiting")
    error = view.error
    if view.checkpoint.status == "failed" and error is not None:
        mark(error.get("executor"), "failed")
    return out


def graph_elements(
    topology: Mapping[str, Any], states: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """Cytoscape elements for a stored topology (``WorkflowSpec.topology()``): one node per
    executor (a compound parent per ``prefix/`` of composed workflows), one edge per
    source and target of each edge group, each node with its ``states`` as classes."""
    nodes = topology.get("nodes")
    groups = topology.get("edge_groups")
    start = topology.get("start")
    elements: list[dict[str, Any]] = []
    known: set[str] = set()
    parents: set[str] = set()
    for entry in nodes if isinstance(nodes, list) else []:
        if not (isinstance(entry, list) and entry and isinstance(entry[0], str)):
            continue
        node_id = entry[0]
        kind = entry[1] if len(entry) > 1 and isinstance(entry[1], str) else ""
        data: dict[str, Any] = {"id": node_id, "label": node_id.rsplit("/", 1)[-1], "kind": kind}
        if "/" in node_id:
            data["parent"] = _parent(node_id, parents)
        classes = list(states.get(node_id, ()))
        if node_id == start:
            classes.append("start")
        elements.append({"data": data, "classes": " ".join(classes)})
        known.add(node_id)
    for parent in sorted(parents):
        data = {"id": parent, "label": parent.rstrip("/").rsplit("/", 1)[-1]}
        if "/" in parent.rstrip("/"):
            data["parent"] = _parent(parent.rstrip("/"), parents)
        elements.append({"data": data, "classes": "group"})
    for number, group in enumerate(groups if isinstance(groups, list) else []):
        if not (isinstance(group, list) and len(group) >= 4):
            continue
        _gid, router, sources, targets = group[:4]
        if not isinstance(sources, list) or not isinstance(targets, list):
            continue
        for i, (source, target) in enumerate((s, t) for s in sources for t in targets):
            if source in known and target in known:
                # a short id: a fan-out group's own id names every target, so repeating
                # it per edge made a 1,000-node graph 14 MB of JSON
                edge = {"id": f"g{number}#{i}", "source": source, "target": target}
                elements.append({"data": {**edge, "label": str(router)}})
        if len(elements) > MAX_ELEMENTS:
            break
    return elements


def layered_positions(elements: Sequence[dict[str, Any]], start: Any) -> None:
    """Give each executor node a ``position``: its layer is its distance from ``start``
    along edges (breadth first; unreached nodes in a last layer), left to right, and nodes
    of a layer are stacked in id order. Linear in the graph: for graphs too big for dagre.
    """
    nodes = [e for e in elements if "source" not in e["data"] and e.get("classes") != "group"]
    following: dict[str, list[str]] = {}
    for edge in elements:
        data = edge["data"]
        if "source" in data:
            following.setdefault(data["source"], []).append(data["target"])
    depth: dict[str, int] = {}
    frontier = [start] if any(n["data"]["id"] == start for n in nodes) else []
    if frontier:
        depth[start] = 0
    while frontier:
        later = []
        for node in frontier:
            for target in following.get(node, ()):
                if target not in depth:
                    depth[target] = depth[node] + 1
                    later.append(target)
        frontier = later
    last = max(depth.values(), default=-1) + 1
    rows: dict[int, int] = {}
    for node in sorted(nodes, key=lambda n: (depth.get(n["data"]["id"], last), n["data"]["id"])):
        layer = depth.get(node["data"]["id"], last)
        row = rows.get(layer, 0)
        rows[layer] = row + 1
        node["position"] = {"x": layer * 220, "y": row * 40}


def _parent(node_id: str, parents: set[str]) -> str:
    """The compound node of ``a/b/c`` is ``a/b/``; every ancestor is added to ``parents``."""
    parts = node_id.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        parents.add("/".join(parts[:depth]) + "/")
    return "/".join(parts) + "/"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@attrs.frozen
class ScrubPoint:
    """One checkpoint on the scrubber: its listing, its index, whether it is a full
    snapshot, and whether it starts a branch (its parent is not the checkpoint before it:
    a resume from an older checkpoint)."""

    info: CheckpointInfo
    index: int
    full: bool
    branch: bool


def scrub_points(infos: Sequence[CheckpointInfo]) -> list[ScrubPoint]:
    """The scrubber's points for a run's checkpoints, oldest first."""
    points = []
    previous: str | None = None
    for index, info in enumerate(infos):
        branch = index > 0 and info.parent_id != previous
        points.append(ScrubPoint(info, index, info.base_id is None, branch))
        previous = info.checkpoint_id
    return points


# -- answers: a form from a JSON Schema --------------------------------------------------------

_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def schema_for_name(name: Any) -> dict[str, Any]:
    """The JSON Schema of a response type from its stored name (``response_type_name``):
    the JSON scalars by name, anything else as any JSON value."""
    if isinstance(name, str) and name in _NAMES:
        return {"type": _NAMES[name], "title": name}
    return {"title": name if isinstance(name, str) else "JSON"}


def schema_for_type(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a declared response type: scalars, ``Literal``, ``Optional``,
    ``list[X]`` and ``dict[str, X]``; other types as any JSON value (validated against the
    type when answered)."""
    if tp is type(None):
        return {"type": "null"}
    if isinstance(tp, type) and tp.__name__ in _NAMES and tp.__module__ == "builtins":
        return {"type": _NAMES[tp.__name__], "title": tp.__name__}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args), "title": "one of " + ", ".join(map(repr, args))}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [schema_for_type(a) for a in args], "title": _title(tp)}
    if origin is list and args:
        return {"type": "array", "items": schema_for_type(args[0]), "title": _title(tp)}
    if origin is dict and len(args) == 2:
        return {"type": "object", "additionalProperties": schema_for_type(args[1])}
    if isinstance(tp, type) and (attrs.has(tp) or dataclasses.is_dataclass(tp)):
        return _record_schema(tp)
    return {"title": _title(tp)}


def _record_schema(cls: type) -> dict[str, Any]:
    """An attrs class or dataclass as a JSON object: one property per field."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: its fields as any JSON
        hints = {}
    if attrs.has(cls):
        fields = [(f.name, f.default is attrs.NOTHING) for f in attrs.fields(cls)]
    else:
        fields = [
            (f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        ]
    return {
        "type": "object",
        "title": cls.__name__,
        "properties": {name: schema_for_type(hints.get(name, Any)) for name, _ in fields},
        "required": [name for name, required in fields if required],
    }


def _title(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def parse_answer(text: str, schema: Mapping[str, Any]) -> Any:
    """What a form's answer means under ``schema``: a string schema takes the text as it
    is, a boolean ``true``/``false``; anything else is read as JSON.

    :raises ValueError: the answer is not valid for the schema's type, saying why.
    """
    kind = schema.get("type")
    if kind == "string":
        return text
    stripped = text.strip()
    if kind == "boolean" and stripped in ("true", "false"):
        return stripped == "true"
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    types_of: dict[str, type | tuple[type, ...]] = {
        "integer": int,
        "number": (int, float),
        "boolean": bool,
    }
    expected = types_of.get(str(kind))
    if expected is not None and (
        not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool))
    ):
        raise ValueError(f"expected {schema.get('title') or kind}, got {json_text(value)}")
    return value


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def schema_problem(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """Why ``value`` does not fit ``schema`` (the subset :func:`schema_for_type` writes:
    ``type``, ``enum``, ``anyOf``, ``properties``, ``required``, ``items``,
    ``additionalProperties``), or ``None``. Checked before a value is built into the
    declared type, so a converter's lenience (``bool("perhaps")``) never decides."""
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(schema_problem(value, option, where) is None for option in options):
            return None
        return f"{where}: expected {schema.get('title') or 'one of the options'}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: expected one of {json.dumps(schema['enum'])}"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES:
        fits = isinstance(value, _JSON_TYPES[kind])
        if kind in ("integer", "number") and isinstance(value, bool):
            fits = False
        if not fits:
            return f"{where}: expected {kind}, got {json_text(value)[:80]}"
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                return f"{where}: {name} is missing"
        for name, item in value.items():
            sub = properties.get(name) or schema.get("additionalProperties")
            if isinstance(sub, dict):
                problem = schema_problem(item, sub, f"{where}.{name}")
                if problem is not None:
                    return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{index}]")
            if problem is not None:
                return problem
    return None
