"""The grammar's rules, reduced straight into closures while the text is parsed.

The compiler is *inline* (its methods are the parser's reductions), so each rule is turned into a
:class:`Node` the moment it is reduced: no parse tree is kept, nothing recurses over the
input, and the nesting bound is enforced as soon as it is passed. A node's ``fn`` takes the
data and returns the value; evaluation is a handful of nested calls, never a tree walk.
"""

from __future__ import annotations

import math
import re
from typing import Any

from . import _runtime as rt
from ._nodes import CompileError, Fn, Node, constant, token_pos
from ._ops import BINARY, compare_const
from ._parser import Token
from ._runtime import EvalError

# ---------------------------------------------------------------------------
# literals
# ---------------------------------------------------------------------------

#: an escape in a string literal (compiled by :mod:`re` the first time a literal has one)
_ESCAPE = r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)"
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "0": "\0",
    "/": "/",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def decode_string(token: Token) -> str:
    """The value of a quoted string literal; unknown escapes are errors."""
    body = token.value[1:-1]
    line, column = token_pos(token)

    def replace(match: re.Match[str]) -> str:
        code = match.group(1)
        where = (line, column + 1 + match.start())
        if len(code) > 1:
            char = chr(int(code[1:], 16))
            if "\ud800" <= char <= "\udfff":
                raise CompileError(f"'\\{code}' is a lone surrogate, not a character", where)
            return char
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        raise CompileError(
            f"unknown escape '\\{code}' (known: \\n \\t \\r \\b \\f \\0 \\/ \\\\ \\\" \\' "
            "\\xHH \\uHHHH)",
            where,
        )

    return re.sub(_ESCAPE, replace, body) if "\\" in body else body


def _int_literal(token: Token) -> int:
    text = token.value
    if len(text.lstrip("0")) > 19 or int(text) > rt.MAX_INT:
        raise CompileError(
            f"integer literal too large ({len(text)} digits); integers stay within "
            "-2**63 .. 2**63-1",
            token_pos(token),
        )
    return int(text)


def _float_literal(token: Token) -> float:
    text = token.value
    value = float(text) if len(text) <= rt.MAX_FLOAT_TEXT else float("inf")
    if not math.isfinite(value):
        raise CompileError(
            f"float literal too large or too long (at most {rt.MAX_FLOAT_TEXT} characters, finite)",
            token_pos(token),
        )
    return value


# ---------------------------------------------------------------------------
# paths: a name and its .keys / [literal] indexes, fused into one closure
# ---------------------------------------------------------------------------


def path_node(path: tuple[Any, ...], pos: tuple[int, int], children: tuple[Node, ...]) -> Node:
    root, keys = path[0], path[1:]
    lookup = rt.lookup
    if not keys:

        def fn(data: Any) -> Any:
            return data.get(root) if type(data) is dict else lookup(data, root)

    elif len(keys) == 1:
        (k1,) = keys

        def fn(data: Any) -> Any:
            v = data.get(root) if type(data) is dict else lookup(data, root)
            return v.get(k1) if type(v) is dict else lookup(v, k1)

    else:

        def fn(data: Any) -> Any:
            v = data.get(root) if type(data) is dict else lookup(data, root)
            for k in keys:
                v = v.get(k) if type(v) is dict else lookup(v, k)
            return v

    return Node(fn, pos, children, path=path, names=frozenset((root,)))


def index_node(target: Node, key: Node, pos: tuple[int, int]) -> Node:
    if target.path is not None and key.is_const and type(key.const) in (str, int):
        return path_node((*target.path, key.const), target.pos, (target, key))
    tf, kf, lookup = target.fn, key.fn, rt.lookup

    def fn(data: Any) -> Any:
        return lookup(tf(data), kf(data))

    return Node(fn, target.pos, (target, key))


def _check_name(token: Token, *, sigil: int = 0) -> str:
    """The name ``token`` spells (after a ``$`` when ``sigil`` is 1), within the bound."""
    name = str(token.value)[sigil:]
    if len(name) > rt.MAX_NAME:
        raise CompileError(
            f"name too long ({len(name)} characters; at most {rt.MAX_NAME})",
            token_pos(token),
        )
    return name


# ---------------------------------------------------------------------------
# the transformer
# ---------------------------------------------------------------------------


class Compiler:
    """Rule callbacks, named as the grammar's rule aliases: each takes the rule's children
    and returns a :class:`Node`. Stateless, so one parser serves every compile (and every
    thread)."""

    # atoms -------------------------------------------------------------------

    def name(self, c: list[Any]) -> Node:
        return path_node((_check_name(c[0]),), token_pos(c[0]), ())

    def var(self, c: list[Any]) -> Node:
        return path_node((_check_name(c[0], sigil=1),), token_pos(c[0]), ())

    def int_(self, c: list[Any]) -> Node:
        return constant(_int_literal(c[0]), token_pos(c[0]))

    def float_(self, c: list[Any]) -> Node:
        return constant(_float_literal(c[0]), token_pos(c[0]))

    def string(self, c: list[Any]) -> Node:
        return constant(decode_string(c[0]), token_pos(c[0]))

    def true(self, c: list[Any]) -> Node:
        return constant(True, token_pos(c[0]))

    def false(self, c: list[Any]) -> Node:
        return constant(False, token_pos(c[0]))

    def null(self, c: list[Any]) -> Node:
        return constant(None, token_pos(c[0]))

    def group(self, c: list[Any]) -> Node:
        inner: Node = c[1]
        if inner.depth + 1 > rt.MAX_DEPTH:
            raise CompileError(f"nested more than {rt.MAX_DEPTH} levels deep", token_pos(c[0]))
        inner.depth += 1
        return inner

    def args(self, c: list[Any]) -> list[Node]:
        return [x for x in c if isinstance(x, Node)]

    def pairs(self, c: list[Any]) -> list[tuple[Node, Node]]:
        return [x for x in c if isinstance(x, tuple)]

    def pair(self, c: list[Any]) -> tuple[Node, Node]:
        return (c[0], c[2])

    def list_(self, c: list[Any]) -> Node:
        items: list[Node] = c[1] or []
        fns = tuple(i.fn for i in items)

        def fn(data: Any) -> Any:
            return [f(data) for f in fns]

        return Node(fn, token_pos(c[0]), tuple(items))

    def map_(self, c: list[Any]) -> Node:
        pairs: list[tuple[Node, Node]] = c[1] or []
        fns = tuple((k.fn, v.fn, k.pos) for k, v in pairs)

        def fn(data: Any) -> Any:
            out: dict[str, Any] = {}
            for kf, vf, kpos in fns:
                key = kf(data)
                if not isinstance(key, str):
                    raise EvalError(f"map keys are strings, not {rt.type_name(key)}", kpos)
                out[key] = vf(data)
            return out

        return Node(fn, token_pos(c[0]), tuple(n for p in pairs for n in p))

    # postfix -----------------------------------------------------------------

    def member(self, c: list[Any]) -> Node:
        target: Node = c[0]
        key = _check_name(c[2])
        if target.path is not None:
            return path_node((*target.path, key), target.pos, (target,))
        return index_node(target, constant(key, token_pos(c[2])), token_pos(c[1]))

    def index(self, c: list[Any]) -> Node:
        return index_node(c[0], c[2], token_pos(c[1]))

    def call(self, c: list[Any]) -> Node:
        # the functions are imported by the first expression that calls one
        from ._functions import build_call

        return build_call(c[0], c[2] or [], receiver=None)

    def method(self, c: list[Any]) -> Node:
        from ._functions import METHODS, build_call, unknown_function

        token: Token = c[2]
        if token.value not in METHODS:
            raise CompileError(
                unknown_function(token.value, METHODS, method=True), token_pos(token)
            )
        return build_call(token, [c[0], *(c[4] or [])], receiver=c[0])

    # operators ---------------------------------------------------------------

    def not_(self, c: list[Any]) -> Node:
        operand: Node = c[1]
        f, truth = operand.fn, rt.truth
        if operand.is_bool:
            return Node(lambda data: not f(data), token_pos(c[0]), (operand,), is_bool=True)
        return Node(lambda data: not truth(f(data)), token_pos(c[0]), (operand,), is_bool=True)

    def neg(self, c: list[Any]) -> Node:
        operand: Node = c[1]
        f, pos = operand.fn, token_pos(c[0])
        if operand.is_const and rt.is_number(operand.const):
            return constant(-operand.const, pos, (operand,))

        def fn(data: Any) -> Any:
            v = f(data)
            if type(v) is float:
                return -v
            if type(v) is int:
                return rt.check_int(-v, pos)
            raise EvalError(f"'-' needs a number, not {rt.type_name(v)}", pos)

        return Node(fn, pos, (operand,))

    def binary(self, c: list[Any]) -> Node:
        left, op, right = c
        pos = token_pos(op)
        if right.is_const and op.value in ("==", "!=", "<", "<=", ">", ">="):
            special = compare_const(op.value, left.fn, right.const, pos)
            if special is not None:
                return Node(special, left.pos, (left, right), is_bool=True, at=pos)
        fn = BINARY[op.value](left.fn, right.fn, pos)
        is_bool = op.value in ("==", "!=", "<", "<=", ">", ">=", "in")
        return Node(fn, left.pos, (left, right), is_bool=is_bool, at=pos)

    def and_(self, c: list[Any]) -> Node:
        left, op, right = c
        lf, rf, truth, at = left.fn, right.fn, rt.truth, token_pos(op)
        if left.is_bool and right.is_bool:
            fn: Fn = lambda d: lf(d) and rf(d)  # noqa: E731
        else:
            fn = lambda d: truth(lf(d)) and truth(rf(d))  # noqa: E731
        return Node(fn, left.pos, (left, right), is_bool=True, at=at)

    def or_(self, c: list[Any]) -> Node:
        left, op, right = c
        lf, rf, truth, at = left.fn, right.fn, rt.truth, token_pos(op)
        if left.is_bool and right.is_bool:
            fn: Fn = lambda d: lf(d) or rf(d)  # noqa: E731
        else:
            fn = lambda d: truth(lf(d)) or truth(rf(d))  # noqa: E731
        return Node(fn, left.pos, (left, right), is_bool=True, at=at)

    def ternary(self, c: list[Any]) -> Node:
        cond, mark, then, _, other = c
        cf, tf, of, truth = cond.fn, then.fn, other.fn, rt.truth
        if cond.is_bool:
            fn: Fn = lambda d: tf(d) if cf(d) else of(d)  # noqa: E731
        else:
            fn = lambda d: tf(d) if truth(cf(d)) else of(d)  # noqa: E731
        is_bool = then.is_bool and other.is_bool
        return Node(fn, cond.pos, (cond, then, other), is_bool=is_bool, at=token_pos(mark))


__all__ = ["Compiler"]
