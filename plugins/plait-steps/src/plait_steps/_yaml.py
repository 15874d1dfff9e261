"""Safe YAML 1.2 reading with positions, for the steps loader.

ruamel.yaml composes the document into a node graph (its C parser when installed, which
keeps YAML 1.2 resolution: ``on``/``yes``/``no`` stay strings); we then build plain values
ourselves, so no tag can name a Python type. Each value keeps its line and column.

Bounds, so hostile text is an error and never a hang: the text's size, the nesting depth,
the number of values the document expands to (a "billion laughs" alias bomb expands past it
at once; aliases are counted every time they are used), and the length of one scalar.
"""

from __future__ import annotations

import math
from typing import Any

from plait.errors import ConfigError, SourcePosition

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


class YamlProblem(Exception):
    """The document is not YAML we accept; ``error`` is the positioned error."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(str(error))
        self.error = error


class Y:
    """One value of the document: ``value`` is a ``dict`` (keys as YAML resolved them: a
    string, a bool, a number or None), a ``list`` of :class:`Y`, or a scalar; ``line`` and
    ``column`` are 1-based; ``keys`` holds each mapping key's own position."""

    __slots__ = ("column", "keys", "line", "quoted", "value")

    def __init__(self, value: Any, line: int, column: int, quoted: bool = False) -> None:
        self.value = value
        self.line = line
        self.column = column
        self.quoted = quoted
        self.keys: dict[Any, tuple[int, int]] = {}

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

    def fail(message: str, line: int = 1, column: int = 1) -> YamlProblem:
        return YamlProblem(ConfigError(message, position(source, lines, line, column)))

    if len(text) > MAX_TEXT:
        raise fail(f"the document is {len(text)} characters long; the limit is {MAX_TEXT}")
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        yaml = YAML(typ="safe", pure=False)
    except Exception:  # pragma: no cover - no C extension on this interpreter
        yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    yaml.Resolver = _resolver()
    try:
        # ruamel's C composer recurses once per level and overflows the C stack (a
        # segfault) on some 50,000 levels, long before _Builder's depth check: bound the
        # depth on the parser's events first (the parser keeps its own stack; linear).
        _check_depth(yaml, text, fail)
        nodes = list(yaml.compose_all(text))
    except YamlProblem:
        raise
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "invalid YAML"
        if mark is None:
            raise fail(f"not valid YAML: {reason}") from None
        raise fail(f"not valid YAML: {reason}", mark.line + 1, mark.column + 1) from None
    except (YAMLError, ValueError, RecursionError, UnicodeError) as exc:
        raise fail(f"not valid YAML: {exc}") from None
    if not nodes:
        return None, lines
    if len(nodes) > 1:
        mark = nodes[1].start_mark
        raise fail("the file holds several YAML documents; write one", mark.line + 1, 1)
    builder = _Builder(source, lines)
    return builder.build(nodes[0], 0), lines


def _check_depth(yaml: Any, text: str, fail: Any) -> None:
    """Refuse collections nested deeper than :data:`MAX_DEPTH`, at the first one too deep."""
    depth = 0
    for event in yaml.parse(text):
        name = type(event).__name__
        if name in ("MappingStartEvent", "SequenceStartEvent"):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise fail(
                    f"nesting deeper than {MAX_DEPTH} levels", mark.line + 1, mark.column + 1
                )
        elif name in ("MappingEndEvent", "SequenceEndEvent"):
            depth -= 1


_RESOLVER: list[Any] = []


def _resolver() -> Any:
    """ruamel's YAML 1.2 resolver, with the version fixed: its own lookup of the version
    raises and catches an AttributeError per scalar under the C parser (a third of the
    load time of a large file)."""
    if not _RESOLVER:
        from ruamel.yaml.resolver import VersionedResolver

        class Yaml12Resolver(VersionedResolver):
            processing_version = (1, 2)

        _RESOLVER.append(Yaml12Resolver)
    return _RESOLVER[0]


class _Builder:
    def __init__(self, source: str, lines: list[str]) -> None:
        self.source = source
        self.lines = lines
        self.count = 0

    def fail(self, message: str, node: Any) -> YamlProblem:
        mark = node.start_mark
        return YamlProblem(
            ConfigError(message, position(self.source, self.lines, mark.line + 1, mark.column + 1))
        )

    def build(self, node: Any, depth: int) -> Y:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                f"the document expands to more than {MAX_NODES} values (anchors and aliases "
                "are counted at every use); refused as a possible alias bomb",
                node,
            )
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", node)
        line, column = node.start_mark.line + 1, node.start_mark.column + 1
        tag = str(node.tag)
        kind = type(node).__name__
        if kind == "MappingNode":
            if tag != _STD + "map":
                raise self.fail(f"the tag {tag!r} is not allowed; write plain YAML", node)
            result = Y({}, line, column)
            for key_node, value_node in node.value:
                if type(key_node).__name__ != "ScalarNode":
                    raise self.fail("a mapping key must be a plain scalar", key_node)
                if str(key_node.tag) == _STD + "merge":
                    raise self.fail("merge keys (<<) are not supported", key_node)
                key = self.build(key_node, depth + 1).value
                if key in result.value:
                    raise self.fail(f"duplicate key {key!r}", key_node)
                result.value[key] = self.build(value_node, depth + 1)
                mark = key_node.start_mark
                result.keys[key] = (mark.line + 1, mark.column + 1)
            return result
        if kind == "SequenceNode":
            if tag != _STD + "seq":
                raise self.fail(f"the tag {tag!r} is not allowed; write plain YAML", node)
            return Y([self.build(item, depth + 1) for item in node.value], line, column)
        return Y(self.scalar(node, tag), line, column, quoted=bool(node.style))

    def scalar(self, node: Any, tag: str) -> Any:
        text: str = node.value
        if len(text) > MAX_SCALAR:
            raise self.fail(f"a scalar of {len(text)} characters; the limit is {MAX_SCALAR}", node)
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
            raise self.fail(
                f"a number of {len(text):,} characters; the limit is {MAX_NUMBER}", node
            )
        if name == "int":
            digits = text.replace("_", "")
            try:
                return int(digits, 0)
            except ValueError:
                try:
                    return int(digits, 10)
                except ValueError:
                    raise self.fail(f"{text!r} is not an integer", node) from None
        if name == "float":
            try:
                value = float(text.replace("_", ""))
            except ValueError:
                raise self.fail(f"{text!r} is not a number", node) from None
            if not math.isfinite(value):
                raise self.fail(f"{text!r}: only finite numbers are allowed", node)
            return value
        raise self.fail(f"the tag {tag!r} is not allowed; write plain YAML", node)
