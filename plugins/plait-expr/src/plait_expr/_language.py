"""The ``"plait"`` language: compiling, positioned errors, compiled expressions and templates.

Importing this module imports no parser: the parser's tables (computed from the grammar
ahead of time, see :mod:`plait_expr._generate`) are imported on the first ``compile``, and
nothing is built at run time, so loading plugins stays cheap and the first compile is fast.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Mapping
from typing import Any, TypeVar

from plait import ExpressionError, SourcePosition

from . import _runtime as rt

__all__ = ["CompiledExpression", "CompiledTemplate", "PlaitLanguage"]

_parser: Any = None
_C = TypeVar("_C")
_parser_lock = threading.Lock()

#: how the grammar's terminals read in "expected ..." lists
_TERMINALS = {
    "OR": "'||'",
    "AND": "'&&'",
    "EQ_OP": "'=='",
    "REL_OP": "'<'",
    "ADD_OP": "'+'",
    "MINUS": "'-'",
    "MUL_OP": "'*'",
    "NOT": "'!'",
    "QMARK": "'?'",
    "COLON": "':'",
    "COMMA": "','",
    "DOT": "'.'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "IN": "'in'",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "NAME": "a name",
    "VAR": "a name",
    "INT": "a number",
    "FLOAT": "a number",
    "STRING": "a string",
    "$END": "the end",
}


def _get_parser() -> Any:
    """The LALR parser with the compiler inlined, made once (its tables imported here)."""
    global _parser
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                from ._compiler import Compiler
                from ._parser import Parser

                _parser = Parser(Compiler())
    return _parser


class _Where:
    """Maps positions in an expression's text to positions in its document."""

    __slots__ = ("column", "line", "lines", "source")

    def __init__(self, text: str, source: str | None, line: int, column: int) -> None:
        self.lines = text.split("\n")
        self.source = source
        self.line = line
        self.column = column

    def at(self, pos: tuple[int, int]) -> SourcePosition:
        line, column = pos
        line = min(max(line, 1), len(self.lines))
        shown = self.lines[line - 1]
        if line == 1:
            # the document's own text before the expression is not known: blanks keep the
            # caret under the right column
            shown = " " * (self.column - 1) + shown
            column += self.column - 1
        shown = "".join(c if c.isprintable() else "?" for c in shown)
        return SourcePosition(
            source=self.source, line=self.line + line - 1, column=column, text=shown
        )

    def end(self) -> tuple[int, int]:
        return (len(self.lines), len(self.lines[-1]) + 1)

    def error(self, message: str, pos: tuple[int, int]) -> ExpressionError:
        return ExpressionError(message, self.at(pos))

    def inner(self, text: str, start: tuple[int, int]) -> _Where:
        """The positions of ``text``, an expression found at ``start`` in this text (a
        template), so that its errors show the template's line."""
        return _Inner(text, self, start)


class _Inner(_Where):
    __slots__ = ("outer", "start")

    def __init__(self, text: str, outer: _Where, start: tuple[int, int]) -> None:
        super().__init__(text, outer.source, outer.line, outer.column)
        self.outer = outer
        self.start = start

    def at(self, pos: tuple[int, int]) -> SourcePosition:
        line, column = pos
        line = min(max(line, 1), len(self.lines))
        if line == 1:
            column += self.start[1] - 1
        return self.outer.at((self.start[0] + line - 1, column))


class CompiledExpression:
    """An expression compiled to closures; :meth:`evaluate` runs it over JSON-like data."""

    __slots__ = ("_fn", "_where", "names", "text")

    def __init__(self, text: str, fn: Any, names: frozenset[str], where: _Where) -> None:
        self.text = text
        self.names = names
        self._fn = fn
        self._where = where

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        """The value over ``data``. Raises :class:`~plait.ExpressionError` only."""
        try:
            return self._fn(data)
        except rt.EvalError as exc:
            raise self._where.error(exc.message, exc.pos) from None
        except ExpressionError:
            raise
        except RecursionError:
            raise self._where.error("the data is nested too deeply", (1, 1)) from None
        except Exception as exc:
            raise self._where.error(
                f"evaluation failed: {type(exc).__name__}: {exc}", (1, 1)
            ) from exc

    def __repr__(self) -> str:
        return f"CompiledExpression({self.text!r})"


class CompiledTemplate:
    """A template: literal text and compiled ``{{ expr }}`` parts."""

    __slots__ = ("_parts", "_single", "names", "text")

    def __init__(self, text: str, parts: list[str | CompiledExpression]) -> None:
        self.text = text
        self._parts = tuple(parts)
        self._single = parts[0] if len(parts) == 1 and not isinstance(parts[0], str) else None
        self.names = frozenset(
            n for p in parts if isinstance(p, CompiledExpression) for n in p.names
        )

    def render(self, data: Mapping[str, Any]) -> str:
        """The text with each ``{{ expr }}`` replaced: strings as they are, any other value
        as compact JSON; at most :data:`~plait_expr._runtime.MAX_RENDERED` characters
        (past that, an :class:`~plait.ExpressionError` at the part that crossed it)."""
        out: list[str] = []
        size = 0
        last: _Where | None = None  # where the last expression is, to place an error
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                size += len(part)
                if size > rt.MAX_RENDERED and last is not None:  # literal text alone fits
                    raise last.error(
                        f"the rendered template would be longer than {rt.MAX_RENDERED:,} "
                        "characters; render a part of the data, not all of it",
                        (1, 1),
                    )
                continue
            last = part._where
            value = part.evaluate(data)
            try:
                # measured before the text is made: shared data can stand for far more
                length = rt.json_length(value, rt.MAX_RENDERED - size)
                exact = isinstance(value, str)
                if size + length <= rt.MAX_RENDERED:
                    piece = rt.to_json(value)
                    length, exact = len(piece), True
            except (TypeError, ValueError, RecursionError) as exc:
                raise part._where.error(f"cannot render the value: {exc}", (1, 1)) from None
            if size + length > rt.MAX_RENDERED:
                shown = f"{length:,}" if exact else f"at least {length:,}"
                raise part._where.error(
                    f"the rendered template would be longer than {rt.MAX_RENDERED:,} "
                    f"characters (a value of {shown} characters here, after "
                    f"{size:,}); render a part of the data, not all of it",
                    (1, 1),
                )
            out.append(piece)
            size += length
        return "".join(out)

    def value(self, data: Mapping[str, Any]) -> Any:
        """The raw value when the template is exactly one ``{{ expr }}``; else :meth:`render`."""
        if self._single is not None:
            return self._single.evaluate(data)
        return self.render(data)

    def __repr__(self) -> str:
        return f"CompiledTemplate({self.text!r})"


class PlaitLanguage:
    """The ``"plait"`` expression language (see ``docs/expressions.md``)."""

    name = "plait"
    #: how many compiled texts the language keeps: a document's expressions are compiled
    #: when it loads and again when its workflow builds (a 1,000-step file holds 1,000
    #: templates); what compiled is immutable, so the same text at the same place is
    #: compiled once
    CACHED = 8192

    def __init__(self) -> None:
        self._compiled: dict[tuple[bool, str, str | None, int, int], Any] = {}

    def _cached(self, key: tuple[bool, str, str | None, int, int], compiled: _C) -> _C:
        if len(self._compiled) >= self.CACHED:
            self._compiled.clear()
        self._compiled[key] = compiled
        return compiled

    def compile(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledExpression:
        """Compile ``text``; errors are :class:`~plait.ExpressionError` positioned in
        the document where the text starts at ``line``:``column``."""
        if not isinstance(text, str):
            raise ExpressionError(
                f"an expression is a string, not {type(text).__name__}",
                SourcePosition(source=source, line=line, column=column),
            )
        key = (False, text, source, line, column)
        found: CompiledExpression | None = self._compiled.get(key)
        if found is not None:
            return found
        where = _Where(text, source, line, column)
        if len(text) > rt.MAX_TEXT:
            raise where.error(
                f"expression longer than {rt.MAX_TEXT:,} characters ({len(text):,})",
                _offset_pos(text, rt.MAX_TEXT),
            )
        if not text.strip():
            raise where.error("empty expression", (1, 1))
        fn, names = _parse(text, where)
        return self._cached(key, CompiledExpression(text, fn, names, where))

    def compile_template(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledTemplate:
        """Compile a template with ``{{ expr }}`` parts (``\\{{`` is a literal ``{{``)."""
        from ._template import split_template

        if not isinstance(text, str):
            raise ExpressionError(
                f"a template is a string, not {type(text).__name__}",
                SourcePosition(source=source, line=line, column=column),
            )
        key = (True, text, source, line, column)
        found: CompiledTemplate | None = self._compiled.get(key)
        if found is not None:
            return found
        where = _Where(text, source, line, column)
        if len(text) > rt.MAX_TEMPLATE:
            raise where.error(
                f"template longer than {rt.MAX_TEMPLATE:,} characters ({len(text):,})",
                _offset_pos(text, rt.MAX_TEMPLATE),
            )
        parts: list[str | CompiledExpression] = []
        for piece in split_template(text, where):
            if isinstance(piece, str):
                parts.append(piece)
            else:
                expr_text, start = piece
                inner = where.inner(expr_text, start)
                fn, names = _parse(expr_text, inner)
                parts.append(CompiledExpression(expr_text, fn, names, inner))
        return self._cached(key, CompiledTemplate(text, parts))


def _offset_pos(text: str, offset: int) -> tuple[int, int]:
    """``(line, column)``, 1-based, of character ``offset`` of ``text``."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return (line, offset - start + 1)


def _parse(text: str, where: _Where) -> tuple[Any, frozenset[str]]:
    from ._nodes import CompileError
    from ._parser import UnexpectedCharacters, UnexpectedToken

    try:
        node = _get_parser().parse(text)
    except CompileError as exc:
        raise where.error(exc.message, exc.pos) from None
    except UnexpectedCharacters as exc:
        raise where.error(_unexpected_character(text, exc), (exc.line, exc.column)) from None
    except UnexpectedToken as exc:
        token = exc.token
        if token.type == "$END":
            found, pos = "end of the expression", where.end()
        else:
            found, pos = repr(str(token.value)), (token.line, token.column)
        raise where.error(
            f"unexpected {found}; expected {_expected(exc.expected)}{_hint(text, token)}", pos
        ) from None
    return node.fn, node.names


def _expected(terminals: Any) -> str:
    shown = sorted({_TERMINALS.get(str(t), str(t)) for t in terminals})
    if len(shown) == 1:
        return shown[0]
    return "one of " + ", ".join(shown)


def _unexpected_character(text: str, exc: Any) -> str:
    char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
    try:
        name = unicodedata.name(char)
    except ValueError:
        name = "a control character" if char else "end"
    message = (
        f"unexpected character {char!r} (U+{ord(char):04X} {name})" if char else ("unexpected end")
    )
    if char in "'\"":
        return f"{message}: a string is not closed on its line"
    if char == "=":
        return f"{message}; did you mean '=='?"
    if char in "&|":
        return f"{message}; did you mean '{char * 2}'?"
    if char.isidentifier() or char.isdigit():
        return f"{message}: names are ASCII letters, digits and '_', numbers ASCII digits"
    return message


def _hint(text: str, token: Any) -> str:
    value = str(token.value)
    start = getattr(token, "start_pos", None)
    if value == "*" and start and text[start - 1] == "*":
        return " (there is no '**' operator)"
    if "{{" in text or "}}" in text:
        return " ('{{' and '}}' do not nest: an expression cannot hold a template)"
    return ""
