"""The fixed set of functions. Nothing else can be called: a call names one of these, checked
when the expression is compiled.

``has``/``exists`` and ``default`` are special forms (they look at their argument's *path*, or
evaluate it only when needed); the others evaluate their arguments and apply a function.
``x.f(a)`` is the same as ``f(x, a)`` for the functions in :data:`METHODS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import _runtime as rt
from ._nodes import CompileError, Fn, Node, token_pos
from ._parser import Token
from ._runtime import EvalError

Pos = tuple[int, int]
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,19}")


def _string(name: str, value: Any, pos: Pos) -> str:
    if not isinstance(value, str):
        raise EvalError(f"{name}() needs a string, not {rt.type_name(value)}", pos)
    return value


def _size(value: Any, pos: Pos) -> int:
    if isinstance(value, (str, Mapping)) or rt.is_list(value):
        return len(value)
    raise EvalError(f"size() needs a string, list or map, not {rt.type_name(value)}", pos)


def _contains(container: Any, item: Any, pos: Pos) -> bool:
    return rt.contains(container, item, pos)


def _starts_with(text: Any, prefix: Any, pos: Pos) -> bool:
    return _string("startsWith", text, pos).startswith(_string("startsWith", prefix, pos))


def _ends_with(text: Any, suffix: Any, pos: Pos) -> bool:
    return _string("endsWith", text, pos).endswith(_string("endsWith", suffix, pos))


def _lower(text: Any, pos: Pos) -> str:
    return _bounded("lower", _string("lower", text, pos).lower, len(text), pos)


def _upper(text: Any, pos: Pos) -> str:
    # one character may become three ("\ufb03".upper() is "FFI"): the result is checked too
    return _bounded("upper", _string("upper", text, pos).upper, len(text), pos)


def _bounded(name: str, make: Callable[[], str], at_least: int, pos: Pos) -> str:
    """``make()`` — a string of ``at_least`` characters or more — within
    :data:`~plait_expr._runtime.MAX_RENDERED`, checked before and after it is made."""
    error = rt.too_long(name, at_least, pos)
    if error is None:
        text = make()
        error = rt.too_long(name, len(text), pos)
        if error is None:
            return text
    raise error


def _int(value: Any, pos: Pos) -> int:
    if type(value) is int:
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise EvalError("int() of a non-finite float", pos)
        return rt.check_int(int(value), pos)
    if isinstance(value, str):
        text = value.strip()
        if _INT_TEXT.fullmatch(text) is None:
            raise EvalError(f"int() of {value[:40]!r}: not an integer of at most 19 digits", pos)
        return rt.check_int(int(text), pos)
    raise EvalError(f"int() needs a number or a string, not {rt.type_name(value)}", pos)


def _to_string(value: Any, pos: Pos) -> str:
    try:
        at_least = rt.json_length(value, rt.MAX_RENDERED)
        return _bounded("string", lambda: rt.to_json(value), at_least, pos)
    except (TypeError, ValueError, RecursionError) as exc:
        raise EvalError(f"string(): {exc}", pos) from None


#: name -> (number of arguments, implementation taking the values and the call's position)
_PLAIN: dict[str, tuple[int, Callable[..., Any], bool]] = {
    "size": (1, _size, False),
    "contains": (2, _contains, True),
    "startsWith": (2, _starts_with, True),
    "endsWith": (2, _ends_with, True),
    "lower": (1, _lower, False),
    "upper": (1, _upper, False),
    "int": (1, _int, False),
    "string": (1, _to_string, False),
}
#: every function name
FUNCTIONS = frozenset({*_PLAIN, "has", "exists", "default"})
#: the functions that may also be called as ``receiver.name(...)``
METHODS = frozenset(_PLAIN)


def unknown_function(name: str, known: Any, *, method: bool = False) -> str:
    """The message for a call to a function that does not exist, with the closest name
    (the same hint every front-end gives: plait-expr depends on no front-end machinery)."""
    kind = "method" if method else "function"
    import difflib  # here: only a misspelt name pays for it

    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {name!r} (there are: {', '.join(sorted(known))}){hint}"


def build_call(token: Token, args: list[Node], *, receiver: Node | None) -> Node:
    """The node for calling the function ``token`` names with ``args``."""
    name, pos = str(token.value), token_pos(token)
    if name not in FUNCTIONS:
        raise CompileError(unknown_function(name, FUNCTIONS), pos)
    at = receiver.pos if receiver is not None else pos
    if name in ("has", "exists"):
        return _has(name, args, pos)
    if name == "default":
        _arity(name, args, 2, pos)
        xf, yf = args[0].fn, args[1].fn

        def default(d: Any) -> Any:
            v = xf(d)
            return yf(d) if v is None else v

        return Node(default, at, tuple(args))
    count, impl, is_bool = _PLAIN[name]
    _arity(name, args, count, pos)
    if count == 1:
        (af,) = (a.fn for a in args)
        fn: Fn = lambda d: impl(af(d), pos)  # noqa: E731
    else:
        af, bf = (a.fn for a in args)
        fn = lambda d: impl(af(d), bf(d), pos)  # noqa: E731
    return Node(fn, at, tuple(args), is_bool=is_bool)


def _arity(name: str, args: list[Node], count: int, pos: Pos) -> None:
    if len(args) != count:
        plural = "s" if count != 1 else ""
        raise CompileError(f"{name}() takes {count} argument{plural}, got {len(args)}", pos)


def _has(name: str, args: list[Node], pos: Pos) -> Node:
    _arity(name, args, 1, pos)
    path = args[0].path
    if path is None:
        raise CompileError(
            f"{name}() takes a path: a name followed by .keys and [literal] indexes "
            "(has(steps.qa.output))",
            args[0].pos,
        )
    root, keys = path[0], path[1:]
    present, lookup = rt.present, rt.lookup

    def fn(data: Any) -> bool:
        if not present(data, root):
            return False
        v = lookup(data, root)
        for k in keys:
            if not present(v, k):
                return False
            v = lookup(v, k)
        return True

    return Node(fn, pos, (args[0],), is_bool=True)
