"""What evaluation may do to a value: the bounds, and the operations over JSON-like data.

Nothing here reaches a Python attribute: values are looked into only as mappings (by string
key) and sequences (by integer index); anything else is opaque and behaves as ``null`` when
looked into.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: the longest expression text compiled, in characters
MAX_TEXT = 10_000
#: the longest template text compiled, in characters
MAX_TEMPLATE = 100_000
#: the deepest nesting of operations (brackets, operators, calls)
MAX_DEPTH = 100
#: the longest name or key
MAX_NAME = 256
#: integer literals and results stay within 64-bit signed integers, as in CEL and JSON tools
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
#: the longest float literal, in characters
MAX_FLOAT_TEXT = 40
#: the longest string ``+`` may build, in characters
MAX_STRING = 1_000_000
#: the longest list ``+`` may build
MAX_LIST = 100_000
#: the longest text a template may render, in characters: a template repeating a large
#: value would otherwise grow as the template's size times the data's. Every function that
#: makes a string (``string()``, ``lower()``, ``upper()``) is held to it too, checked before
#: the string is built (data may share one large value many times over)
MAX_RENDERED = 10_000_000

_NUMBERS = (int, float)


class EvalError(Exception):
    """An evaluation failure at ``(line, column)`` of the expression's own text; the
    compiled expression turns it into a document-positioned ``ExpressionError``."""

    def __init__(self, message: str, pos: tuple[int, int]) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def type_name(value: Any) -> str:
    """The JSON name of ``value``'s type (``opaque <class>`` for anything else)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map"
    if is_list(value):
        return "list"
    return f"opaque {type(value).__name__}"


def is_list(value: Any) -> bool:
    """A sequence that is not a string or bytes."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def is_number(value: Any) -> bool:
    """An int or a float, but not a bool."""
    return isinstance(value, _NUMBERS) and value is not True and value is not False


def lookup(value: Any, key: Any) -> Any:
    """``value[key]`` for a mapping and a string key, or a sequence (string included) and
    an integer index (negative counts from the end); ``None`` for anything else or absent."""
    if type(key) is str:
        if isinstance(value, Mapping):
            try:
                return value[key]
            except KeyError:
                return None
        return None
    if type(key) is int and (isinstance(value, str) or is_list(value)):
        try:
            return value[key]
        except IndexError:
            return None
    return None


def present(value: Any, key: Any) -> bool:
    """Whether :func:`lookup` would find ``key`` (rather than default to ``None``)."""
    if type(key) is str:
        return isinstance(value, Mapping) and key in value
    if type(key) is int and (isinstance(value, str) or is_list(value)):
        return -len(value) <= key < len(value)
    return False


def truth(value: Any) -> bool:
    """Truthiness: ``false``, ``null``, ``0``, ``""``, ``[]`` and ``{}`` are false."""
    if value is True or value is False:
        return value
    if value is None:
        return False
    if isinstance(value, _NUMBERS):
        return value != 0
    if isinstance(value, (str, Mapping)) or is_list(value):
        return len(value) > 0
    return True


def equal(a: Any, b: Any) -> bool:
    """JSON equality: a bool equals only a bool (``true != 1``), numbers compare by value,
    lists and maps element by element; opaque values only equal themselves."""
    ta = type(a)
    if ta is type(b) and (ta is str or ta is int or ta is float or ta is bool or a is None):
        return bool(a == b)
    if ta is bool or type(b) is bool:
        return False
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)
    if is_list(a) and is_list(b):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        return all(k in b and equal(v, b[k]) for k, v in a.items())
    return a is b


def contains(container: Any, item: Any, pos: tuple[int, int]) -> bool:
    """``item in container``: a substring of a string, an element of a list (by
    :func:`equal`), or a key of a map."""
    if isinstance(container, str):
        if not isinstance(item, str):
            raise EvalError(f"'in' a string needs a string, not {type_name(item)}", pos)
        return item in container
    if isinstance(container, Mapping):
        return isinstance(item, str) and item in container
    if is_list(container):
        return any(equal(x, item) for x in container)
    raise EvalError(f"'in' needs a string, list or map, not {type_name(container)}", pos)


def check_int(value: int, pos: tuple[int, int]) -> int:
    """``value`` if it fits a 64-bit signed integer."""
    if MIN_INT <= value <= MAX_INT:
        return value
    raise EvalError("integer overflow: results stay within -2**63 .. 2**63-1", pos)


def check_float(value: float, pos: tuple[int, int]) -> float:
    """``value`` if it is finite (JSON has no infinity or NaN)."""
    if math.isfinite(value):
        return value
    raise EvalError("float overflow: the result is not a finite number", pos)


def to_json(value: Any) -> str:
    """Compact JSON of a JSON-like value; a string is returned as it is."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return str(value)
    if value is True or value is False or value is None:
        return "true" if value else ("false" if value is False else "null")
    if kind is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes
    if isinstance(value, str):
        return str(value)
    import json  # here: the first compile does not pay for it

    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_refuse
    )


def too_long(name: str, length: int, pos: tuple[int, int]) -> EvalError | None:
    """The error for a function ``name`` about to make a string of ``length`` (at least)
    characters, when that passes :data:`MAX_RENDERED`."""
    if length <= MAX_RENDERED:
        return None
    return EvalError(
        f"{name}() would make a string longer than {MAX_RENDERED:,} characters; "
        "use a part of the data, not all of it",
        pos,
    )


def json_length(value: Any, limit: int) -> int:
    """The length of :func:`to_json`'s text for ``value`` — exact but for the escapes
    ``json`` adds, so never more than the real length — or ``limit + 1`` as soon as that
    is known to pass ``limit``. The work is bounded by the value's distinct containers
    (one shared many times is measured once), never by the text it would make.

    :raises ValueError: for a container that holds itself.
    """
    if isinstance(value, str):
        return len(value)  # to_json returns a string as it is
    return _Measure(limit).length(value)


class _Measure:
    """The JSON text length of values, memoised by container identity (see
    :func:`json_length`)."""

    __slots__ = ("known", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.known: dict[int, int] = {}  # id(container) -> its length; -1 while measuring

    def length(self, value: Any) -> int:
        if isinstance(value, str):
            return len(value) + 2
        if value is None or value is True:
            return 4
        if value is False:
            return 5
        if isinstance(value, int):
            return len(str(value)) if -(10**18) < value < 10**18 else 19
        if isinstance(value, float):
            return len(repr(value))
        is_map = isinstance(value, Mapping)
        if not is_map and not is_list(value):
            return 0  # json refuses it when the text is built
        known = self.known.get(id(value))
        if known is not None:
            if known < 0:
                raise ValueError("Circular reference detected")
            return known
        self.known[id(value)] = -1
        total = 1 + max(len(value), 1)  # the brackets and the commas
        if is_map:
            for key, item in value.items():
                total += len(str(key)) + 3 + self.length(item)  # "key":
                if total > self.limit:
                    break
        else:
            for item in value:
                total += self.length(item)
                if total > self.limit:
                    break
        total = min(total, self.limit + 1)
        self.known[id(value)] = total
        return total


def _refuse(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if is_list(value):
        return list(value)
    raise TypeError(f"a {type_name(value)} value has no JSON form")
