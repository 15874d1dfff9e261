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

import itertools
import re
from collections.abc import Iterator
from typing import Any

import attrs

from ._document import Step

__all__ = ["Accessor", "PathProblem", "Shapes", "accessors", "aliases", "probed"]

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
    # a bounded look back: a template may read many paths
    return _PROBED.search(text, max(0, start - 40), start) is not None


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
# ("outputs", block) | ("map", {key: shape}[, block]) | ("list", n | None, shape)
# | ("value", what) | ("any",)

_ANY: tuple[Any, ...] = ("any",)


class Shapes:
    """The shapes of a document's step results, each made once (a document may read a
    large block many times: the work stays linear in what it reads)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, ...]] = {}
        self._children: dict[int, tuple[list[Step], dict[str, Step], dict[str, str]]] = {}

    def children(self, block: Step) -> tuple[list[Step], dict[str, Step], dict[str, str]]:
        """A parallel block's children, by id, and its :func:`aliases`."""
        found = self._children.get(id(block))
        if found is None:
            children = [c for c in block.steps if c.type != "goto"]
            found = (children, {c.id: c for c in children}, aliases(block))
            self._children[id(block)] = found
        return found

    def entry(self, step: Step) -> tuple[Any, ...]:
        """The shape of ``step``'s result."""
        found = self._entries.get(id(step))
        if found is None:
            found = self._entries[id(step)] = self._make(step)
        return found

    def _make(self, step: Step) -> tuple[Any, ...]:
        if step.type in ("agent", "executor"):
            return ("map", {"output": _ANY, "agent": ("value", "a name")})
        if step.type == "condition":
            return ("map", {"output": ("value", "a boolean")})
        if step.type == "foreach":
            return ("map", {"output": ("list", None, _ANY), "agent": ("value", "null")})
        if step.type == "parallel":
            children = self.children(step)[0]
            keyed = {c.id: ("map", {"output": self.output(c), "agent": _ANY}) for c in children}
            order = ("list", len(children), ("value", "a step id"))
            fields = {
                "output": ("map", {"steps": ("map", keyed), "order": order}),
                "agent": ("value", "null"),
                "outputs": ("outputs", step),
                "order": order,
            }
            return ("map", fields, step)  # the block: a child read without ".outputs" is hinted
        return _ANY  # a step of an unknown type: reported already

    def output(self, step: Step) -> tuple[Any, ...]:
        """The shape of ``step``'s ``output``."""
        entry = self.entry(step)
        return entry[1].get("output", _ANY) if entry[0] == "map" else _ANY

    def outputs_child(self, block: Step, key: str | int) -> Step | None:
        """The child of ``block`` that ``outputs[key]`` reads: by position, step id, agent
        name (:func:`aliases`) or, in a nested block, ``"inner.<key>"``."""
        children, by_id, names = self.children(block)
        if isinstance(key, int):
            return children[key] if -len(children) <= key < len(children) else None
        if key in by_id:
            return by_id[key]
        if key in names:
            return by_id[names[key]]
        head, dot, rest = key.partition(".")
        inner = by_id.get(head)
        if dot and inner is not None and inner.type == "parallel":
            return self.outputs_child(inner, rest)
        return None

    def existing(self, shape: tuple[Any, ...], prefix: str) -> Iterator[str]:
        """The paths there are at ``prefix``, whose shape is ``shape``."""
        kind = shape[0]
        if kind == "map":
            yield from (f"{prefix}.{k}" for k in shape[1])
        elif kind == "list" and shape[1]:
            n = shape[1]
            yield f"{prefix}[0]" + (f" … {prefix}[{n - 1}]" if n > 1 else "")
        elif kind == "outputs":
            children, _, names = self.children(shape[1])
            by_child = {v: k for k, v in names.items()}
            for child in children:
                yield f"{prefix}.{child.id}" if _plain(child.id) else f"{prefix}[{child.id!r}]"
                if child.id in by_child:
                    yield f"{prefix}.{by_child[child.id]}"
                if child.type == "parallel":
                    inner, _, inner_names = self.children(child)
                    for key in [*(c.id for c in inner), *inner_names]:
                        yield f"{prefix}[{child.id + '.' + key!r}]"

    def check(self, step: Step, written: str, path: list[Accessor]) -> PathProblem | None:
        """Where ``$steps.<step.id>`` followed by ``path`` stops resolving (``None``: it
        resolves, or reaches what an agent answers). ``written`` is ``$steps.<id>`` as
        the template wrote it."""
        shape = self.entry(step)
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
                child = self.outputs_child(shape[1], key)
                nxt = self.entry(child) if child is not None else None
            # a block's child read without ".outputs" (the flatter form): say how to read it
            flat = nxt is None and kind == "map" and len(shape) > 2
            if flat and self.outputs_child(shape[2], key) is not None:
                text = f".{key}" if isinstance(key, str) and _plain(key) else f"[{key!r}]"
                hint = [f"{prefix}.outputs{text}"]
                if isinstance(key, str) and "." in prefix:
                    outer, _, last = prefix.rpartition(".")
                    hint.append(f"{outer}[{last + '.' + key!r}]")
                return PathProblem(prefix, key, hint, "")
            if nxt is None:
                what = shape[1] if kind == "value" else ""
                shown = list(itertools.islice(self.existing(shape, prefix), SHOWN))
                return PathProblem(prefix, key, shown, what)
            shape = nxt
            prefix += accessor.text
        return None


def _plain(key: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) is not None
