"""Where things are in JSON text, for the problems :mod:`json` finds without saying where.

:func:`json.loads` gives a line and column for a syntax error only. A document that nests
too deeply (a ``RecursionError``), repeats a key, or holds an integer with more digits
than Python converts is valid JSON to it, or fails without a position. :func:`scan` walks
the text's tokens once (linear: one regular expression without nested quantifiers, one
stack: :func:`_walk`, the one walker every function here reads) and finds each of them
with its line, column and JSON path. It runs only after
:func:`json.loads` has failed or a hook has seen one of them, so a good document pays
nothing.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator

import attrs
from plait import SourcePosition

from ._schema import pointer

__all__ = [
    "MAX_DEPTH",
    "MAX_DIGITS",
    "Finding",
    "at_offset",
    "locate",
    "locate_values",
    "path_at",
    "raw_offset",
    "scan",
]

#: the deepest nesting of objects and arrays a document may have
MAX_DEPTH = 64
#: the most digits an integer may have (Python converts at most 4,300; 20 hold any 64-bit one)
MAX_DIGITS = 100

#: the most problems one scan reports
MAX_FINDINGS = 1000

# A string (the unrolled loop: plain runs between escapes, nothing to backtrack into),
# one punctuation character, or a run of anything else (numbers, true, false, null).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
_INTEGER = re.compile(r"-?[0-9]+")


@attrs.frozen
class Finding:
    """One problem at ``line``:``column`` (1-based) and JSON ``path``; ``text`` is the
    part of the line around it, starting at column ``text_column``."""

    message: str
    line: int
    column: int
    path: str
    text: str
    text_column: int


class _Frame:
    __slots__ = ("index", "is_object", "key", "keys")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.index = 0
        self.key: str | None = None
        self.keys: set[str] = set()


def _pointer(stack: list[_Frame], last: str | None = None) -> str:
    parts: list[str | int] = [(f.key or "") if f.is_object else f.index for f in stack]
    if last is not None:
        parts[-1] = last
    return pointer(parts)


def _walk(text: str, end: int | None = None) -> Iterator[tuple[str, re.Match[str], list[_Frame]]]:
    """The one walk over the tokens of ``text`` (to offset ``end``): linear, one regular
    expression without nested quantifiers and one stack of the open objects and arrays.

    Yields ``(event, token, stack)`` for each token, ``stack`` being the containers open
    at it (a caller may read it, and set a frame's ``key`` or ``keys``):

    - ``"item"``, before the token's own event, when the token starts an array item;
    - ``"open"`` after ``[`` or ``{`` is pushed; ``"too_deep"`` instead, with the stack
      not pushed, for one past :data:`MAX_DEPTH` (and the walk ends there);
    - ``"close"`` after ``]`` or ``}`` is popped;
    - ``"comma"`` and ``"colon"``;
    - ``"key"`` for a member's name, once the top frame's ``key`` holds it (decoded);
    - ``"value"`` for anything else (a string value, a number, ``true`` …).
    """
    stack: list[_Frame] = []
    expect_key = False
    item_start = True  # the next token starts an array item
    tokens = _TOKEN.finditer(text) if end is None else _TOKEN.finditer(text, 0, end)
    for match in tokens:
        token = match.group()
        head = token[0]
        if item_start and head != "]" and stack and not stack[-1].is_object:
            yield "item", match, stack
        item_start = False
        if head in "[{":
            if len(stack) >= MAX_DEPTH:
                yield "too_deep", match, stack
                return
            stack.append(_Frame(head == "{"))
            expect_key = head == "{"
            item_start = head == "["
            yield "open", match, stack
        elif head in "]}":
            if stack:
                stack.pop()
            expect_key = False
            yield "close", match, stack
        elif head == ",":
            if stack and stack[-1].is_object:
                expect_key = True
            elif stack:
                stack[-1].index += 1
                item_start = True
            yield "comma", match, stack
        elif head == ":":
            expect_key = False
            yield "colon", match, stack
        elif head == '"' and expect_key and stack:
            try:
                stack[-1].key = json.loads(token) if "\\" in token else token[1:-1]
            except ValueError:
                stack[-1].key = token[1:-1]
            yield "key", match, stack
        else:
            yield "value", match, stack


def scan(text: str) -> list[Finding]:
    """Every repeated key, every integer longer than :data:`MAX_DIGITS`, and the first
    object or array nested deeper than :data:`MAX_DEPTH` (the scan stops there), in
    document order; at most :data:`MAX_FINDINGS`."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    findings: list[Finding] = []

    def found(message: str, offset: int, path: str) -> None:
        line = bisect.bisect_left(newlines, offset)
        start = newlines[line - 1] + 1 if line else 0
        end = newlines[line] if line < len(newlines) else len(text)
        # only the part of the line an error shows, so a long line is not copied per problem
        first = max(start, offset - SourcePosition.WINDOW)
        shown = text[first : min(end, offset + SourcePosition.WINDOW)]
        findings.append(
            Finding(message, line + 1, offset - start + 1, path, shown, first - start + 1)
        )

    for event, match, stack in _walk(text):
        if len(findings) >= MAX_FINDINGS:
            break
        if event == "too_deep":
            found(
                f"the document nests deeper than {MAX_DEPTH} levels", match.start(), _pointer(stack)
            )
        elif event == "key":
            frame = stack[-1]
            key = frame.key or ""
            if key in frame.keys:
                found(f"duplicate key {key!r}", match.start(), _pointer(stack, key))
            frame.keys.add(key)
        elif event == "value":
            token = match.group()
            if _INTEGER.fullmatch(token) and len(token.lstrip("-")) > MAX_DIGITS:
                found(
                    f"an integer of {len(token.lstrip('-')):,} digits; the limit is {MAX_DIGITS:,}",
                    match.start(),
                    _pointer(stack),
                )
    return findings


def locate(text: str, paths: set[str]) -> dict[str, tuple[int, int, str]]:
    """Where each JSON pointer of ``paths`` is in ``text`` (a document :func:`json.loads`
    read): ``(line, column, the line)`` of a member's key, or of an array item's first
    character. One pass over the tokens (:func:`_walk`); pointers not found are left out.
    """
    wanted = set(paths)
    if not wanted:
        return {}
    newlines = [m.start() for m in re.finditer("\n", text)]
    found: dict[str, tuple[int, int, str]] = {}
    for event, match, stack in _walk(text):
        if event == "item":
            path = _pointer(stack)
        elif event == "key":
            path = _pointer(stack, stack[-1].key)
        else:
            continue
        if path in wanted and path not in found:
            offset = match.start()
            line = bisect.bisect_left(newlines, offset)
            start = newlines[line - 1] + 1 if line else 0
            end = newlines[line] if line < len(newlines) else len(text)
            found[path] = (line + 1, offset - start + 1, text[start:end])
            if len(found) == len(wanted):
                break
    return found


def path_at(text: str, offset: int) -> str:
    """The JSON pointer of what is being read at ``offset`` of ``text`` (where
    :func:`json.loads` stopped): the member whose value it is in, the array item, or the
    object between members; ``""`` for the document itself."""
    stack: list[_Frame] = []
    for event, _, stack in _walk(text, offset):
        if event == "comma" and stack and stack[-1].is_object:
            stack[-1].key = None  # between members: the object itself
    parts: list[str | int] = []
    for frame in stack:
        if frame.is_object and frame.key is None:
            break
        parts.append(frame.key if frame.is_object else frame.index)  # type: ignore[arg-type]
    return pointer(parts)


def locate_values(text: str, paths: set[str]) -> dict[str, int]:
    """The offset in ``text`` (a document :func:`json.loads` read) of the value of each
    member of ``paths`` (a string value's opening quote). One pass over the tokens
    (:func:`_walk`)."""
    wanted = set(paths)
    found: dict[str, int] = {}
    pending: str | None = None  # a wanted member whose value comes next
    if not wanted:
        return found
    for event, match, stack in _walk(text):
        if pending is not None and event != "colon":
            found.setdefault(pending, match.start())
            pending = None
            if len(found) == len(wanted):
                break
        if event == "key":
            path = _pointer(stack, stack[-1].key)
            if path in wanted:
                pending = path
    return found


def raw_offset(text: str, start: int, decoded: int) -> int:
    """The offset in ``text`` of character ``decoded`` of the JSON string whose opening
    quote is at ``start`` (escapes are longer in the text than in the string)."""
    k, count = start + 1, 0
    while count < decoded and k < len(text) and text[k] != '"':
        if text[k] == "\\":
            if text.startswith("u", k + 1):
                high = text[k + 2 : k + 6]
                pair = text.startswith("\\u", k + 6) and "d800" <= high.lower() < "dc00"
                k += 12 if pair else 6
            else:
                k += 2
        else:
            k += 1
        count += 1
    return k


def at_offset(text: str, offset: int, path: str | None, source: str) -> SourcePosition:
    """The position of ``offset`` in ``text``: its line, column and (part of) its line."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    first = max(start, offset - SourcePosition.WINDOW)
    return SourcePosition(
        source=source,
        line=line + 1,
        column=offset - start + 1,
        path=path,
        text=text[first : min(end, offset + SourcePosition.WINDOW)],
        text_column=first - start + 1,
    )
