"""Binary operators: each builder takes the operands' closures and returns the operation's.

Comparisons against a literal are specialised (``x == true`` is one identity test, ``n < 3``
one type test and one comparison), which is what keeps a typical condition near a
microsecond.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from . import _runtime as rt
from ._nodes import Fn
from ._runtime import EvalError

Pos = tuple[int, int]
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _ordered(op: str, a: Any, b: Any, pos: Pos) -> bool:
    if (rt.is_number(a) and rt.is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
        return _ORDER[op](a, b)
    raise EvalError(
        f"'{op}' compares two numbers or two strings, not {rt.type_name(a)} and {rt.type_name(b)}",
        pos,
    )


def _order_builder(op: str) -> Callable[[Fn, Fn, Pos], Fn]:
    def build(lf: Fn, rf: Fn, pos: Pos) -> Fn:
        return lambda d: _ordered(op, lf(d), rf(d), pos)

    return build


def _eq(lf: Fn, rf: Fn, pos: Pos) -> Fn:
    equal = rt.equal
    return lambda d: equal(lf(d), rf(d))


def _ne(lf: Fn, rf: Fn, pos: Pos) -> Fn:
    equal = rt.equal
    return lambda d: not equal(lf(d), rf(d))


def _in(lf: Fn, rf: Fn, pos: Pos) -> Fn:
    contains = rt.contains
    return lambda d: contains(rf(d), lf(d), pos)


def add(a: Any, b: Any, pos: Pos) -> Any:
    """``+``: numbers, or two strings, or two lists, within the size bounds."""
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return rt.check_int(a + b, pos)
    if rt.is_number(a) and rt.is_number(b):
        return (
            rt.check_float(a + b, pos) if (ta is float or tb is float) else rt.check_int(a + b, pos)
        )
    if isinstance(a, str) and isinstance(b, str):
        if len(a) + len(b) > rt.MAX_STRING:
            raise EvalError(f"string longer than {rt.MAX_STRING:,} characters", pos)
        return str(a) + str(b)
    if rt.is_list(a) and rt.is_list(b):
        if len(a) + len(b) > rt.MAX_LIST:
            raise EvalError(f"list longer than {rt.MAX_LIST:,} items", pos)
        return [*a, *b]
    raise EvalError(
        f"'+' adds numbers, strings or lists, not {rt.type_name(a)} and {rt.type_name(b)}", pos
    )


def _numbers(op: str, a: Any, b: Any, pos: Pos) -> None:
    if not (rt.is_number(a) and rt.is_number(b)):
        raise EvalError(
            f"'{op}' takes two numbers, not {rt.type_name(a)} and {rt.type_name(b)}", pos
        )


def sub(a: Any, b: Any, pos: Pos) -> Any:
    _numbers("-", a, b, pos)
    if type(a) is int and type(b) is int:
        return rt.check_int(a - b, pos)
    return rt.check_float(a - b, pos)


def mul(a: Any, b: Any, pos: Pos) -> Any:
    _numbers("*", a, b, pos)
    if type(a) is int and type(b) is int:
        return rt.check_int(a * b, pos)
    return rt.check_float(a * b, pos)


def div(a: Any, b: Any, pos: Pos) -> Any:
    """``/`` is true division: its result is a float."""
    _numbers("/", a, b, pos)
    if b == 0:
        raise EvalError("division by zero", pos)
    try:
        return rt.check_float(a / b, pos)
    except OverflowError:
        raise EvalError("float overflow: the result is not a finite number", pos) from None


def mod(a: Any, b: Any, pos: Pos) -> Any:
    """``%`` is the floored remainder (its sign is the divisor's, as in Python)."""
    _numbers("%", a, b, pos)
    if b == 0:
        raise EvalError("modulo by zero", pos)
    if type(a) is int and type(b) is int:
        return a % b
    return rt.check_float(a % b, pos)


def _arith_builder(fn: Callable[[Any, Any, Pos], Any]) -> Callable[[Fn, Fn, Pos], Fn]:
    def build(lf: Fn, rf: Fn, pos: Pos) -> Fn:
        return lambda d: fn(lf(d), rf(d), pos)

    return build


BINARY: dict[str, Callable[[Fn, Fn, Pos], Fn]] = {
    "==": _eq,
    "!=": _ne,
    "in": _in,
    "+": _arith_builder(add),
    "-": _arith_builder(sub),
    "*": _arith_builder(mul),
    "/": _arith_builder(div),
    "%": _arith_builder(mod),
    **{op: _order_builder(op) for op in _ORDER},
}


def compare_const(op: str, lf: Fn, const: Any, pos: Pos) -> Fn | None:
    """A specialised closure for ``x <op> <literal>``, or ``None`` to use the general one."""
    if op in ("==", "!="):
        if const is True or const is False or const is None:
            if op == "==":
                return lambda d: lf(d) is const
            return lambda d: lf(d) is not const
        return None
    if type(const) in (int, float):
        compare = _ORDER[op]

        def ordered(d: Any) -> bool:
            v = lf(d)
            if type(v) is int or type(v) is float:
                return compare(v, const)
            return _ordered(op, v, const, pos)

        return ordered
    return None
