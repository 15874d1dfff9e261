"""What the pages show, computed from stored JSON: graph elements, node states, values
cut to size, the checkpoint tree's marks, and forms from a response type's JSON Schema.

Everything here takes JSON values a store returned (untrusted): shapes are checked, and
nothing a value names is imported or called.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]
from plait_durable import CheckpointInfo, CheckpointView
from plait_export import boxes, split_id

__all__ = [
    "DAGRE_LIMIT",
    "VALUE_LIMIT",
    "conversations",
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


#: the type tag a team's conversation is stored under (plait-teams' ``Conversation``): the
#: transcript is read from stored JSON, so showing it needs no plait-teams here
CONVERSATION_TAG = "plait_teams._conversation:Conversation"
#: the most messages a transcript shows (the newest kept)
MAX_MESSAGES = 200


#: how deep in an executor's state a conversation is looked for (a team nested in a step or
#: node keeps its inner run's state inside the step's)
MAX_DEPTH = 32


def conversations(view: CheckpointView) -> list[dict[str, Any]]:
    """The team conversations in ``view``'s executor state, as chat transcripts: per
    executor and place in its state that holds one (a key, or a path of keys below it: a
    team run as one step or node of a workflow file keeps its inner run's state there, a
    Magentic manager each participant's history), ``{"executor", "key", "messages",
    "left_out"}`` with each message's ``author``, ``role`` and ``text`` (strings; the newest
    :data:`MAX_MESSAGES`), in executor order. When no executor's state holds one, the
    conversations among the run's outputs (``"executor": "outputs"``): a team step that
    has finished keeps no state, its answer only."""
    found: list[dict[str, Any]] = []
    for executor_id, state in sorted(_dict(view.state.get("executor_state")).items()):
        for path, value in _conversations_in(state, (), MAX_DEPTH):
            found.append(_transcript(executor_id, path, value))
    if not found:
        for path, value in _conversations_in(view.state.get("outputs"), (), MAX_DEPTH):
            found.append(_transcript("outputs", path, value))
    return found


def _conversations_in(
    value: Any, path: tuple[str, ...], depth: int
) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """The stored conversations in ``value`` and below it (``depth`` levels at most), each
    with its path of keys (list items by their index), in key order."""
    if isinstance(value, dict):
        if value.get("__plait__") == CONVERSATION_TAG:
            yield path, value
            return
        if "__plait__" in value:  # a tagged value (a dict, a type of the run): what it holds
            if depth > 0:
                yield from _conversations_in(value.get("v"), path, depth - 1)
            return
        items: list[tuple[str, Any]] = sorted((str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return
    if depth > 0:
        for key, inner in items:
            yield from _conversations_in(inner, (*path, key), depth - 1)


def _transcript(executor_id: str, path: tuple[str, ...], value: dict[str, Any]) -> dict[str, Any]:
    stored = value.get("v")
    items = stored if isinstance(stored, list) else []
    messages = [
        {name: str(item.get(name, "")) for name in ("author", "role", "text")}
        for item in items[-MAX_MESSAGES:]
        if isinstance(item, dict)
    ]
    return {
        "executor": executor_id,
        "key": "/".join(path),
        "messages": messages,
        "left_out": max(len(items) - MAX_MESSAGES, 0),
    }


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
    executor, a compound parent per box (each ``prefix/`` of composed workflows, and each
    foreach block, which holds its body: :func:`plait_export.boxes`), one edge per source
    and target of each edge group, each node with its ``states`` as classes."""
    nodes = topology.get("nodes")
    groups = topology.get("edge_groups")
    start = topology.get("start")
    kinds: dict[str, str] = {}
    for entry in nodes if isinstance(nodes, list) else []:
        if not (isinstance(entry, list) and entry and isinstance(entry[0], str)):
            continue
        kind = entry[1] if len(entry) > 1 and isinstance(entry[1], str) else ""
        kinds.setdefault(entry[0], kind)
    pairs: list[tuple[str, str, str]] = []  # (source, target, router)
    for group in groups if isinstance(groups, list) else []:
        if not (isinstance(group, list) and len(group) >= 4):
            continue
        _gid, router, sources, targets = group[:4]
        if not isinstance(sources, list) or not isinstance(targets, list):
            continue
        pairs.extend(
            (s, t, str(router)) for s in sources for t in targets if s in kinds and t in kinds
        )
        if len(pairs) > MAX_ELEMENTS:
            break
    found = boxes(kinds, [(s, t) for s, t, _router in pairs])
    elements: list[dict[str, Any]] = []
    for node_id, kind in kinds.items():
        data: dict[str, Any] = {"id": node_id, "label": split_id(node_id)[1], "kind": kind}
        if found.parent.get(node_id) is not None:
            data["parent"] = found.parent[node_id]
        classes = list(states.get(node_id, ()))
        if node_id == start:
            classes.append("start")
        elements.append({"data": data, "classes": " ".join(classes)})
    for box in sorted(found.labels):
        box_data = {"id": box, "label": found.labels[box]}
        if found.parent.get(box) is not None:
            box_data["parent"] = str(found.parent[box])
        kind = "group foreach" if box in found.foreach else "group"
        elements.append({"data": box_data, "classes": kind})
    for number, (source, target, router) in enumerate(pairs[:MAX_ELEMENTS]):
        # a short id: a fan-out group's own id names every target, so repeating it per
        # edge made a 1,000-node graph 14 MB of JSON
        edge = {"id": f"e{number}", "source": source, "target": target, "label": router}
        elements.append({"data": edge})
    return elements


def layered_positions(elements: Sequence[dict[str, Any]], start: Any) -> None:
    """Give each executor node a ``position``: its layer is its distance from ``start``
    along edges (breadth first; unreached nodes in a last layer), left to right, and nodes
    of a layer are stacked in id order, numbers by value (``w2`` before ``w10``). Linear in
    the graph: for graphs too big for dagre.
    """
    nodes = [
        e
        for e in elements
        if "source" not in e["data"] and "group" not in str(e.get("classes", "")).split()
    ]
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
    for node in sorted(
        nodes, key=lambda n: (depth.get(n["data"]["id"], last), _natural(n["data"]["id"]))
    ):
        layer = depth.get(node["data"]["id"], last)
        row = rows.get(layer, 0)
        rows[layer] = row + 1
        node["position"] = {"x": layer * 220, "y": row * 40}


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers in ``text`` by value: ``w2`` before ``w10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


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
    is, a boolean ``true``/``false``; anything else is read as JSON (and then checked
    against the schema by :func:`schema_problem`).

    :raises ValueError: the answer is not JSON, saying why.
    """
    kind = schema.get("type")
    if kind == "string":
        return text
    stripped = text.strip()
    if kind == "boolean" and stripped in ("true", "false"):
        return stripped == "true"
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None


def schema_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``value`` does not fit ``schema`` (the most relevant error ``jsonschema`` finds,
    prefixed with where: ``answer.approved: 'perhaps' is not of type 'boolean'``), or
    ``None``. Checked before a value is built into the declared type, so a converter's
    lenience (``bool("perhaps")``) never decides."""
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    return f"answer{error.json_path[1:]}: {error.message}"
