"""What a ``$steps`` path in a template reads, checked when the document loads.

A step's result has a shape the document decides: an agent or executor step gives
``{output, agent}``; a condition ``{output}`` (a boolean); a parallel block ``{output,
agent, outputs, order}``, whose ``outputs`` holds its children's results by step id, by
position (``outputs[0]``), by agent name for a child written without an id (seed 002's
``outputs.inner.outputs.researcher``) and, for a nested block's child, by the flatter key
``outputs["inner.researcher"]``; a foreach block ``{output, agent}`` (a list). A path
that leaves that shape would read ``null`` when the run gets there, so it is a load error
that says where and which paths exist instead. What an agent answers is the agent's own
(a declared ``structured_output`` is checked elsewhere), so a path stops being checked
below an agent's ``output``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ._document import Step

__all__ = ["Accessor", "PathProblem", "accessors", "aliases", "check_path"]

#: one accessor after ``$steps.<id>``: ``.name``, ``["key"]``, ``['key']`` or ``[n]``
_ACCESSOR = re.compile(
    r"\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)(?!\s*\()"
    r"|\[\s*(?:\"([^\"\n]{0,200})\"|'([^'\n]{0,200})'|(-?[0-9]{1,9}))\s*\])"
)
#: a path inside one of these calls is probed, not read: it may be absent
_PROBED = re.compile(r"\b(?:has|exists|default)\s*\(\s*$")
#: how many existing paths a problem lists
SHOWN = 12


@attrs.frozen
class Accessor:
    """One step of a path: a key (``str``) or a position (``int``), and its text."""

    key: str | int
    text: str


@attrs.frozen
class PathProblem:
    """Where a path stops resolving: the path up to there, the key it lacks, and what
    exists there instead (as paths)."""

    prefix: str
    key: str | int
    existing: list[str]
    #: what the prefix reads when it is a single value (``a boolean``), else ``""``
    what: str = ""


def accessors(text: str, start: int) -> Iterator[Accessor]:
    """The accessors written at ``text[start:]``, up to the first thing that is not one
    (an operator, a call, an index that is an expression)."""
    at = start
    while True:
        match = _ACCESSOR.match(text, at)
        if match is None:
            return
        name, double, single, number = match.groups()
        if name is not None:
            yield Accessor(name, f".{name}")
        elif number is not None:
            yield Accessor(int(number), f"[{number}]")
        else:
            key = double if double is not None else single
            yield Accessor(key, f"[{key!r}]")
        at = match.end()


def probed(text: str, start: int) -> bool:
    """Whether the path starting at ``text[start]`` is the argument of ``has``,
    ``exists`` or ``default`` (which read a path that may be absent)."""
    return _PROBED.search(text, 0, start) is not None


def aliases(block: Step) -> dict[str, str]:
    """The agent names a parallel block's children written without an id are found by in
    its ``outputs``: name -> step id, for each name only one such child has and no
    sibling uses as its id."""
    ids = {c.id for c in block.steps}
    named: dict[str, list[str]] = {}
    for child in block.steps:
        if child.type == "agent" and not child.explicit_id and child.name:
            named.setdefault(child.name, []).append(child.id)
    return {n: found[0] for n, found in named.items() if len(found) == 1 and n not in ids}


# -- shapes ---------------------------------------------------------------------------------
# ("entry", step) | ("outputs", block) | ("map", {key: shape}) | ("list", n | None, shape)
# | ("value", what) | ("any",)

_ANY: tuple[Any, ...] = ("any",)


def _entry(step: Step) -> tuple[Any, ...]:
    if step.type in ("agent", "executor"):
        return ("map", {"output": _ANY, "agent": ("value", "a name")})
    if step.type == "condition":
        return ("map", {"output": ("value", "a boolean")})
    if step.type == "foreach":
        return ("map", {"output": ("list", None, _ANY), "agent": ("value", "null")})
    if step.type == "parallel":
        children = [c for c in step.steps if c.type != "goto"]
        keyed = {c.id: ("map", {"output": _output(c), "agent": _ANY}) for c in children}
        order = ("list", len(children), ("value", "a step id"))
        fields = {
            "output": ("map", {"steps": ("map", keyed), "order": order}),
            "agent": ("value", "null"),
            "outputs": ("outputs", step),
            "order": order,
        }
        return ("map", fields, step)  # the block: a child read without ".outputs" is hinted
    return _ANY  # a step of an unknown type: reported already


def _output(step: Step) -> tuple[Any, ...]:
    """The shape of ``step``'s ``output``."""
    entry = _entry(step)
    return entry[1].get("output", _ANY) if entry[0] == "map" else _ANY


def _outputs_child(block: Step, key: str | int) -> Step | None:
    children = [c for c in block.steps if c.type != "goto"]
    if isinstance(key, int):
        return children[key] if -len(children) <= key < len(children) else None
    by_id = {c.id: c for c in children}
    if key in by_id:
        return by_id[key]
    alias = aliases(block).get(key)
    if alias is not None:
        return by_id[alias]
    head, dot, rest = key.partition(".")
    inner = by_id.get(head)
    if dot and inner is not None and inner.type == "parallel":
        return _outputs_child(inner, rest)
    return None


def _existing(shape: tuple[Any, ...], prefix: str) -> list[str]:
    kind = shape[0]
    if kind == "map":
        return [f"{prefix}.{k}" for k in shape[1]]
    if kind == "list":
        n = shape[1]
        return [f"{prefix}[0]" + (f" … {prefix}[{n - 1}]" if n > 1 else "")] if n else []
    if kind == "outputs":
        block: Step = shape[1]
        found = []
        names = {v: k for k, v in aliases(block).items()}
        for child in block.steps:
            if child.type == "goto":
                continue
            found.append(f"{prefix}.{child.id}" if _plain(child.id) else f"{prefix}[{child.id!r}]")
            if child.id in names:
                found.append(f"{prefix}.{names[child.id]}")
            if child.type == "parallel":
                found.extend(f"{prefix}[{child.id + '.' + k!r}]" for k in _flat_keys(child))
        return found
    return []


def _flat_keys(block: Step) -> list[str]:
    keys = []
    for child in block.steps:
        if child.type != "goto":
            keys.append(child.id)
    keys.extend(aliases(block))
    return keys


def _plain(key: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) is not None


def check_path(
    step: Step, written: str, path: list[Accessor], steps: Mapping[str, Step]
) -> PathProblem | None:
    """Where ``$steps.<step.id>`` followed by ``path`` stops resolving (``None``: it
    resolves, or reaches what an agent answers). ``written`` is ``$steps.<id>`` as the
    template wrote it."""
    shape = _entry(step)
    prefix = written
    for accessor in path:
        kind = shape[0]
        key = accessor.key
        if kind == "any":
            return None
        nxt: tuple[Any, ...] | None = None
        if kind == "map" and isinstance(key, str):
            nxt = shape[1].get(key)
        elif kind == "list" and isinstance(key, int):
            n = shape[1]
            nxt = shape[2] if n is None or -n <= key < n else None
        elif kind == "outputs":
            child = _outputs_child(shape[1], key)
            nxt = _entry(child) if child is not None else None
        if nxt is None and kind == "map" and len(shape) > 2:
            block = shape[2]
            if _outputs_child(block, key) is not None:  # the flatter "inner.researcher"
                text = f".{key}" if isinstance(key, str) and _plain(key) else f"[{key!r}]"
                hint = [f"{prefix}.outputs{text}"]
                if isinstance(key, str) and "." in prefix:
                    outer, _, last = prefix.rpartition(".")
                    hint.append(f"{outer}[{last + '.' + key!r}]")
                return PathProblem(prefix, key, hint, "")
        if nxt is None:
            what = shape[1] if kind == "value" else ""
            return PathProblem(prefix, key, _existing(shape, prefix)[:SHOWN], what)
        shape = nxt
        prefix += accessor.text
    return None
