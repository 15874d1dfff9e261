"""The converter record plugins register (``plait_register_converters``).

A :class:`Converter` is a named function from one message type to another, marked
``lossless`` (nothing the value says is lost: a partial converter raises rather than
guesses) or lossy, with a ``cost``. Everything else about converting is
``plait-converters``': type families (``plait_converters.TypeFamily``), registering a
function from a script (``plait_converters.converter``), the cheapest chain between two
types (``plait_converters.find_chain``), and Plait's cattrs converter for messages with
the hooks plugins register for their own types (``plait_converters.message_converter``,
``CattrsHooks``, through ``plait_register_type_hooks``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ._records import record_repr

__all__ = ["Converter"]


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"'{attribute.name}' must be a non-empty str, got {value!r}")


def _not_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        raise TypeError(f"'{attribute.name}' must be a type or a type family, got None")


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
        raise ValueError(f"'{attribute.name}' must be a positive number, got {value!r}")


@attrs.frozen(repr=False)
class Converter:
    """A named function from messages of type ``source`` to messages of type ``target``.

    :param source: the type it takes (or a ``plait_converters.TypeFamily``).
    :param target: the type it returns (or a ``plait_converters.TypeFamily``).
    :param fn: ``fn(value) -> converted``, sync or async (``fn(value, target_type)`` when
        ``target`` is a family). Raise on values it cannot convert faithfully.
    :param lossless: True when the result keeps everything the value says; lossy
        converters join a chain only where the builder or the edge allows it.
    :param name: its registry name, unique among installed converters.
    :param cost: a positive weight; the cheapest chain wins.

    Calling a converter calls ``fn``.
    """

    __repr__ = record_repr

    source: Any = attrs.field(validator=_not_none)
    target: Any = attrs.field(validator=_not_none)
    fn: Callable[..., Any] = attrs.field(validator=attrs.validators.is_callable())
    lossless: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    name: str = attrs.field(validator=_name)
    cost: float = attrs.field(default=1, validator=_positive)

    def __call__(self, value: Any, *args: Any) -> Any:
        return self.fn(value, *args)
