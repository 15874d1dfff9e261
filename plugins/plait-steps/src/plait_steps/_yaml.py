"""Safe YAML 1.2 reading with positions, for the steps loader.

ruamel.yaml's parser (its C parser when installed) turns the text into a stream of events;
we build plain values from the events ourselves, in one pass and without ruamel's composer
or constructor, so no tag can name a Python type. Plain scalars are resolved with ruamel's
YAML 1.2 rules (``on``/``yes``/``no`` stay strings). Each value keeps its line and column.

Bounds, so hostile text is an error and never a hang: the text's size, the nesting depth
(checked as each collection opens, so the parser never goes deeper; an alias counts the
levels of what it repeats), the number of values the document expands to (a "billion
laughs" alias bomb expands past it at once; aliases are counted every time they are used),
and the length of one scalar. An alias inside its own anchor (a structure that contains
itself) is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from plait import ConfigError, SourcePosition

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_NUMBER",
    "MAX_SCALAR",
    "MAX_TEXT",
    "Y",
    "YamlProblem",
    "parse",
]

#: the largest document the steps format reads, in characters
MAX_TEXT = 2 * 1024 * 1024
#: the deepest nesting of mappings and sequences
MAX_DEPTH = 64
#: how many values a document may expand to, aliases counted at every use
MAX_NODES = 200_000
#: the longest scalar, in characters
MAX_SCALAR = 256 * 1024
#: the longest number, in characters (a 64-bit integer needs 20; 0x and 100 hex digits
#: still fit a float)
MAX_NUMBER = 100

_STD = "tag:yaml.org,2002:"
_NO_KEYS: Mapping[Any, tuple[int, int]] = MappingProxyType({})


class YamlProblem(Exception):
    """The document is not YAML we accept; ``error`` is the positioned error."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(str(error))
        self.error = error


class Y:
    """One value of the document: ``value`` is a ``dict`` (keys as YAML resolved them: a
    string, a bool, a number or None), a ``list`` of :class:`Y`, or a scalar; ``line`` and
    ``column`` are 1-based; ``keys`` holds each mapping key's own position (empty for
    anything but a mapping). A value an alias repeats is the anchored value itself: read
    it, never change it."""

    __slots__ = ("column", "keys", "line", "quoted", "value")

    def __init__(
        self,
        value: Any,
        line: int,
        column: int,
        quoted: bool = False,
        keys: Mapping[Any, tuple[int, int]] = _NO_KEYS,
    ) -> None:
        self.value = value
        self.line = line
        self.column = column
        self.quoted = quoted
        self.keys = keys

    def __repr__(self) -> str:
        return f"Y({self.value!r} @{self.line}:{self.column})"


def position(source: str, lines: list[str], line: int, column: int) -> SourcePosition:
    """A :class:`SourcePosition` with the offending line of text."""
    text = lines[line - 1] if 0 < line <= len(lines) else None
    return SourcePosition(source=source, line=line, column=column, text=text)


def parse(text: str, source: str) -> tuple[Y | None, list[str]]:
    """The document's root value (``None`` for an empty document) and its lines.

    :raises YamlProblem: the text is not YAML, holds several documents, a tag, or passes
        a bound.
    """
    lines = text.splitlines()
    builder = _Builder(source, lines)
    if len(text) > MAX_TEXT:
        raise builder.fail(
            f"the document is {len(text)} characters long; the limit is {MAX_TEXT}", 1, 1
        )
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        yaml = YAML(typ="safe", pure=False)
    except Exception:  # pragma: no cover - no C extension on this interpreter
        yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    try:
        return builder.build(yaml.parse(text)), lines
    except YamlProblem:
        raise
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "invalid YAML"
        if mark is None:
            raise builder.fail(f"not valid YAML: {reason}", 1, 1) from None
        raise builder.fail(f"not valid YAML: {reason}", mark.line + 1, mark.column + 1) from None
    except (YAMLError, ValueError, RecursionError, UnicodeError) as exc:
        raise builder.fail(f"not valid YAML: {exc}", 1, 1) from None


_RESOLVERS: list[dict[Any, list[tuple[str, Any]]]] = []


def _implicit_resolvers() -> dict[Any, list[tuple[str, Any]]]:
    """ruamel's YAML 1.2 implicit resolvers of plain scalars, by first character:
    ``{first: [(tag, regex), …]}``, built once (ruamel's own ``resolve`` looks the version
    up again per scalar: a third of the load time of a large file)."""
    if not _RESOLVERS:
        from ruamel.yaml.resolver import VersionedResolver

        class Yaml12Resolver(VersionedResolver):
            processing_version = (1, 2)

        _RESOLVERS.append(dict(Yaml12Resolver().versioned_resolver))
    return _RESOLVERS[0]


class _Open:
    """A mapping or sequence whose end event has not come yet."""

    __slots__ = ("anchor", "count", "key", "key_at", "keys", "levels", "mapping", "y")

    def __init__(self, y: Y, mapping: bool, anchor: str | None, count: int) -> None:
        self.y = y
        self.mapping = mapping
        #: a mapping's key positions (``y.keys``), filled in as its values come
        self.keys: dict[Any, tuple[int, int]] = {}
        if mapping:
            y.keys = self.keys
        self.anchor = anchor
        #: values built before this one opened
        self.count = count
        #: levels of collections inside it so far
        self.levels = 0
        #: a mapping's key whose value comes next, and where it was
        self.key: Any = _NO_KEY
        self.key_at = (0, 0)


_NO_KEY = object()


class _Builder:
    def __init__(self, source: str, lines: list[str]) -> None:
        self.source = source
        self.lines = lines
        self.count = 0  # the values the document expands to so far
        self.aliased = 0  # how many of them aliases repeat

    def fail(self, message: str, line: int, column: int) -> YamlProblem:
        return YamlProblem(ConfigError(message, position(self.source, self.lines, line, column)))

    def at(self, message: str, event: Any) -> YamlProblem:
        mark = event.start_mark
        return self.fail(message, mark.line + 1, mark.column + 1)

    def build(self, events: Iterable[Any]) -> Y | None:
        """The one document of ``events`` (ruamel's parser events) as :class:`Y` values."""
        from ruamel.yaml.events import (
            AliasEvent,
            DocumentStartEvent,
            MappingEndEvent,
            MappingStartEvent,
            ScalarEvent,
            SequenceEndEvent,
            SequenceStartEvent,
        )

        resolvers = _implicit_resolvers()
        # anchor -> (its value, the values it expands to, the levels of collections in it)
        anchors: dict[str, tuple[Y, int, int]] = {}
        stack: list[_Open] = []
        root: Y | None = None
        documents = 0
        for event in events:
            kind = type(event)
            if kind is ScalarEvent:
                if documents > 1:
                    raise self.at("the file holds several YAML documents; write one", event)
                parent = stack[-1] if stack else None
                is_key = parent is not None and parent.mapping and parent.key is _NO_KEY
                y = self.scalar(event, resolvers, is_key)
                size, levels = 1, 0
                if event.anchor is not None:
                    anchors[event.anchor] = (y, 1, 0)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if documents > 1:
                    raise self.at("the file holds several YAML documents; write one", event)
                mapping = kind is MappingStartEvent
                if stack and stack[-1].mapping and stack[-1].key is _NO_KEY:
                    raise self.at("a mapping key must be a plain scalar", event)
                tag = None if event.ctag is None else str(event.ctag)
                if tag is not None and tag != "!" and tag != _STD + ("map" if mapping else "seq"):
                    raise self.at(f"the tag {tag!r} is not allowed; write plain YAML", event)
                if len(stack) >= MAX_DEPTH:
                    raise self.at(f"nesting deeper than {MAX_DEPTH} levels", event)
                self.counted(1, event)
                if event.anchor is not None:  # an alias inside it means the value itself
                    anchors.pop(event.anchor, None)
                mark = event.start_mark
                line, column = mark.line + 1, mark.column + 1
                y = Y({} if mapping else [], line, column)
                stack.append(_Open(y, mapping, event.anchor, self.count - 1))
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                done = stack.pop()
                y, size, levels = done.y, self.count - done.count, done.levels + 1
                if done.anchor is not None:
                    anchors[done.anchor] = (y, size, levels)
            elif kind is AliasEvent:
                found = anchors.get(event.anchor)
                if found is None:
                    if any(o.anchor == event.anchor for o in stack):
                        raise self.at(
                            f"nesting deeper than {MAX_DEPTH} levels: the alias "
                            f"*{event.anchor} repeats a value it is inside of",
                            event,
                        )
                    raise self.at(f"the alias *{event.anchor} names no anchor before it", event)
                y, size, levels = found
                expects_key = stack and stack[-1].mapping and stack[-1].key is _NO_KEY
                if expects_key and isinstance(y.value, (dict, list)):
                    raise self.at("a mapping key must be a plain scalar", event)
                if len(stack) + levels > MAX_DEPTH:
                    raise self.at(f"nesting deeper than {MAX_DEPTH} levels", event)
                self.aliased += size
                self.counted(size, event)
            elif kind is DocumentStartEvent:
                documents += 1
                continue
            else:  # the stream's start and end, a document's end
                continue
            if not stack:
                root = y
                continue
            parent = stack[-1]
            if levels > parent.levels:
                parent.levels = levels
            if not parent.mapping:
                parent.y.value.append(y)
            elif parent.key is _NO_KEY:
                key = y.value
                if key in parent.y.value:
                    raise self.at(f"duplicate key {key!r}", event)
                mark = event.start_mark
                parent.key, parent.key_at = key, (mark.line + 1, mark.column + 1)
            else:
                parent.y.value[parent.key] = y
                parent.keys[parent.key] = parent.key_at
                parent.key = _NO_KEY
        return root

    def counted(self, values: int, event: Any) -> None:
        """Count ``values`` more values; refuse a document that expands past the bound,
        saying which: the values written, or (when aliases repeat some) what they expand
        to."""
        self.count += values
        if self.count > MAX_NODES:
            if not self.aliased:
                raise self.at(
                    f"the document holds more than {MAX_NODES:,} values (scalars, mappings "
                    f"and lists); the limit is {MAX_NODES:,}",
                    event,
                )
            raise self.at(
                f"the document expands to more than {MAX_NODES:,} values, the limit, "
                f"{self.aliased:,} of them repeated by aliases (an alias counts the values "
                "it repeats at every use); refused as a possible alias bomb",
                event,
            )

    def scalar(self, event: Any, resolvers: dict[Any, list[tuple[str, Any]]], key: bool) -> Y:
        text: str = event.value
        self.counted(1, event)
        if len(text) > MAX_SCALAR:
            raise self.at(f"a scalar of {len(text)} characters; the limit is {MAX_SCALAR}", event)
        mark = event.start_mark
        quoted = bool(event.style)
        ctag = event.ctag
        tag = None if ctag is None else str(ctag)
        if tag is None or tag == "!":
            # plain: what it looks like decides (the YAML 1.2 core schema); else a string
            found = resolvers.get(text[:1]) if event.implicit[0] else None
            if not found:
                return Y(text, mark.line + 1, mark.column + 1, quoted)
            tag = next((t for t, pattern in found if pattern.match(text)), _STD + "str")
        if tag == _STD + "str":
            return Y(text, mark.line + 1, mark.column + 1, quoted)
        if key and tag == _STD + "merge":
            raise self.at("merge keys (<<) are not supported", event)
        return Y(self.value(text, tag, event), mark.line + 1, mark.column + 1, quoted)

    def value(self, text: str, tag: str, event: Any) -> Any:
        """The value of a scalar that is not a plain string."""
        name = tag[len(_STD) :] if tag.startswith(_STD) else None
        if name in ("str", "timestamp"):
            return text
        if name == "null":
            return None
        if name == "bool":
            return text.lower() == "true"
        if name in ("int", "float") and len(text) > MAX_NUMBER:
            # Python refuses to convert (or print) an integer of more than 4,300 digits,
            # and a hex one that long overflows float(): bound the text first
            raise self.at(f"a number of {len(text):,} characters; the limit is {MAX_NUMBER}", event)
        if name == "int":
            digits = text.replace("_", "")
            try:
                return int(digits, 0)
            except ValueError:
                try:
                    return int(digits, 10)
                except ValueError:
                    raise self.at(f"{text!r} is not an integer", event) from None
        if name == "float":
            try:
                value = float(text.replace("_", ""))
            except ValueError:
                raise self.at(f"{text!r} is not a number", event) from None
            if not math.isfinite(value):
                raise self.at(f"{text!r}: only finite numbers are allowed", event)
            return value
        raise self.at(f"the tag {tag!r} is not allowed; write plain YAML", event)
