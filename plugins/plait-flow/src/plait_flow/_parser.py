"""Parsing a flow text with lark, and turning lark's errors into positioned flow errors.

lark is imported, and the LALR parser built, on the first parse (never at plugin
registration); the parser is kept for the life of the process. Its inline transformer
(:class:`plait_flow._elements.Elements`) reduces every rule straight into a flow element,
so no parse tree is built.
"""

from __future__ import annotations

import functools
import threading
from importlib import resources
from typing import Any

from plait import ConfigError, SourcePosition

from ._elements import MAX_DEPTH, Document, Elements

__all__ = ["FlowError", "parse", "position"]

_parser: Any = None
_lock = threading.Lock()

#: how the grammar's terminals read in "expected ..." lists
_READABLE = {
    "ERROR_ARROW": "'-error->'",
    "ARROW": "'->'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "QMARK": "'?'",
    "COLON": "':'",
    "EQUAL": "'='",
    "SEMI": "';'",
    "AT": "'@'",
    "BY": "'by'",
    "NAME": "a name",
    "STRING": "a string",
    "EXPR": "a condition",
    "$END": "the end of the flow",
}
_ORDER = list(_READABLE)


class FlowError(ConfigError):
    """A problem in a flow text, at its line and column (with the line and a caret)."""


def _get_parser() -> Any:
    global _parser
    if _parser is None:
        with _lock:
            if _parser is None:
                import lark

                grammar = resources.files(__package__).joinpath("flow.lark").read_text("utf-8")
                _parser = lark.Lark(
                    grammar,
                    parser="lalr",
                    lexer="contextual",
                    transformer=Elements(),
                    propagate_positions=True,
                    maybe_placeholders=False,
                    lexer_callbacks={
                        "LSQB": _open_bracket,
                        "LPAR": _open_bracket,
                        "RSQB": _close_bracket,
                        "RPAR": _close_bracket,
                    },
                )
    return _parser


class _TooDeep(Exception):
    def __init__(self, token: Any) -> None:
        super().__init__(token)
        self.token = token


# Brackets open in the text this thread is parsing: past MAX_BRACKETS the parse stops at
# once (the compiler's own, element-wise check says the same for anything past MAX_DEPTH),
# so 64 KB of "[" costs as much as 64 KB of names, not lark's reductions of all of them.
_open_now = threading.local()
MAX_BRACKETS = 2 * MAX_DEPTH + 2  # a merge's "(…)" inside each block, and some room


def _open_bracket(token: Any) -> Any:
    _open_now.count = getattr(_open_now, "count", 0) + 1
    if _open_now.count > MAX_BRACKETS:
        raise _TooDeep(token)
    return token


def _close_bracket(token: Any) -> Any:
    _open_now.count = getattr(_open_now, "count", 0) - 1
    return token


@functools.lru_cache(maxsize=4)
def _line_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts (computed once per text, however many problems)."""
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def position(text: str, source: str, line: int, column: int) -> SourcePosition:
    """The position ``line:column`` of ``text``, with the part of the line around it shown
    (unprintable characters as ``?``); costs the same on a long line as on a short one."""
    starts = _line_starts(text)
    if not 0 < line <= len(starts):
        return SourcePosition(source=source, line=line, column=column, text="")
    begin = starts[line - 1]
    end = starts[line] - 1 if line < len(starts) else len(text)
    width = SourcePosition.WINDOW
    first = max(begin, min(begin + column - 1 - width, end - 2 * width))
    shown = text[first : min(end, first + 2 * width)]
    if not shown.isprintable():
        shown = "".join(c if c.isprintable() else "?" for c in shown)
    return SourcePosition(
        source=source, line=line, column=column, text=shown, text_column=first - begin + 1
    )


def _expected(names: Any) -> str:
    keys = sorted({str(n) for n in names if str(n) in _READABLE}, key=_ORDER.index)
    known = [_READABLE[k] for k in keys]
    if not known:
        return "nothing more"
    if len(known) == 1:
        return known[0]
    return f"{', '.join(known[:-1])} or {known[-1]}"


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _describe(token: Any) -> str:
    if token.type == "NAME":
        return f"name {token.value!r}"
    if token.type == "EXPR":
        return f"condition {token.value.strip()!r}"
    return _READABLE.get(token.type, repr(token.value))


def _stack(exc: Any) -> list[Any]:
    """What the parser had shifted when it failed (tokens still unreduced, like an
    unclosed ``[``), or ``[]`` when lark does not say."""
    state = getattr(getattr(exc, "interactive_parser", None), "parser_state", None)
    stack = getattr(state, "value_stack", None)
    return list(stack) if stack is not None else []


def parse(text: str, source: str) -> Document:
    """The flow's elements.

    :raises FlowError: the first syntax error, with its position and what was expected.
    """
    import lark

    parser = _get_parser()
    _open_now.count = 0
    try:
        document: Document = parser.parse(text)
    except _TooDeep as exc:
        raise FlowError(
            f"parallel blocks and conditions nest more than {MAX_DEPTH} deep here",
            position(text, source, exc.token.line, exc.token.column),
        ) from None
    except lark.UnexpectedCharacters as exc:
        pos = exc.pos_in_stream or 0
        char = text[pos] if 0 <= pos < len(text) else ""
        raise FlowError(
            f"unexpected character {char!r}; expected {_expected(exc.allowed or ())}",
            position(text, source, exc.line, exc.column),
        ) from None
    except lark.UnexpectedToken as exc:
        raise _token_error(text, source, exc) from None
    except lark.UnexpectedInput as exc:  # pragma: no cover - LALR raises the two above
        line, column = getattr(exc, "line", 1), getattr(exc, "column", 1)
        raise FlowError(f"syntax error: {exc}", position(text, source, line, column)) from None
    return document


def _token_error(text: str, source: str, exc: Any) -> FlowError:
    token = exc.token
    expected = _expected(exc.expected)
    stack = _stack(exc)
    tokens: list[Any] = [v for v in stack if _is_token(v)]
    if token.type == "$END":
        line, column = _end(text)
        unclosed = [t for t in tokens if t.type in ("LSQB", "LPAR")]
        if unclosed:
            bracket: Any = unclosed[-1]
            closing = "]" if bracket.type == "LSQB" else ")"
            return FlowError(
                f"unclosed {bracket.value!r}: the flow ends at {line}:{column} before its "
                f"{closing!r}; expected {expected}",
                position(text, source, bracket.line, bracket.column),
            )
        last: Any = stack[-1] if stack else None
        if _is_token(last) and last.type in ("ARROW", "ERROR_ARROW"):
            return FlowError(
                f"dangling {last.value!r}: nothing follows it; expected a step (a name, "
                "'[', '(' or '@name')",
                position(text, source, last.line, last.column),
            )
        return FlowError(
            f"the flow ends too early; expected {expected}", position(text, source, line, column)
        )
    message = f"unexpected {_describe(token)}; expected {expected}"
    last = stack[-1] if stack else None
    if (
        _is_token(last)
        and last.type in ("ARROW", "ERROR_ARROW")
        and token.type in ("ARROW", "ERROR_ARROW", "RSQB", "RPAR", "COMMA", "COLON", "SEMI")
    ):
        return FlowError(
            f"dangling {last.value!r}: {_describe(token)} follows it; expected a step",
            position(text, source, last.line, last.column),
        )
    elif token.type == "EXPR":  # the lexer's fallback matched a condition's text out of place
        message = f"unexpected character {token.value[0]!r}; expected {expected}"
    elif token.type == "RSQB" and _is_token(last) and last.type == "COMMA":
        message = "a ',' in a parallel block must be followed by a branch; expected a step"
    return FlowError(message, position(text, source, token.line, token.column))


def _is_token(value: Any) -> bool:
    import lark

    return isinstance(value, lark.Token)
