"""Splitting a template into literal text and ``{{ expr }}`` parts.

An expression ends at the first ``}}`` outside its string literals and outside its own
``{ }`` map literals, so ``{{ {"a": {"b": 1}} }}`` and ``{{ "}}" }}`` work. ``{{`` inside an
expression is an error (templates do not nest). ``\\{{`` is a literal ``{{``.
"""

from __future__ import annotations

from typing import Protocol

Piece = str | tuple[str, tuple[int, int]]


class Where(Protocol):
    """What places a template's errors in its document (the language's position map,
    passed in, so this module needs nothing of the language's)."""

    def error(self, message: str, pos: tuple[int, int]) -> Exception:
        """The error to raise for ``message`` at ``pos`` (line, column) of the text."""
        ...


def _pos(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return (line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def _expression_end(text: str, start: int, opener: int, where: Where) -> int:
    """The index of the ``}}`` that closes the expression starting at ``start``."""
    depth, quote, k, n = 0, "", start, len(text)
    while k < n:
        char = text[k]
        if quote:
            if char == "\\":
                k += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "{":
            if text.startswith("{{", k):
                raise where.error(
                    "'{{' inside an expression: templates do not nest (close the first "
                    "'{{' with '}}', or write '{ {' for a map inside a map)",
                    _pos(text, k),
                )
            depth += 1
        elif char == "}":
            if depth == 0 and text.startswith("}}", k):
                return k
            depth = max(depth - 1, 0)
        k += 1
    raise where.error("'{{' is not closed with '}}'", _pos(text, opener))


def split_template(text: str, where: Where) -> list[Piece]:
    """Literal strings and ``(expression text, (line, column) in the template)`` pairs."""
    pieces: list[Piece] = []
    literal: list[str] = []
    i = 0
    while True:
        j = text.find("{{", i)
        if j < 0:
            literal.append(text[i:])
            break
        if j > 0 and text[j - 1] == "\\":
            literal.append(text[i : j - 1] + "{{")
            i = j + 2
            continue
        literal.append(text[i:j])
        end = _expression_end(text, j + 2, j, where)
        body = text[j + 2 : end]
        if not body.strip():
            raise where.error("empty '{{ }}'", _pos(text, j))
        if any(literal):
            pieces.append("".join(literal))
        literal = []
        pieces.append((body, _pos(text, j + 2)))
        i = end + 2
    if any(literal) or not pieces:
        pieces.append("".join(literal))
    return pieces
