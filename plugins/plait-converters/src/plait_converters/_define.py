"""Defining converters: :class:`TypeFamily` (many types at once, as a converter's source or
target) and :func:`converter`, which registers an annotated function in-process.

The record a plugin registers is the kernel's :class:`plait.spi.Converter`; what a family
means, and which chain of converters an edge gets, is this distribution's.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import attrs
from plait import PluginConflictError, get_plugin_manager, hookimpl
from plait.spi import Converter, Register

__all__ = ["TypeFamily", "converter"]


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"'{attribute.name}' must be a non-empty str, got {value!r}")


@attrs.frozen
class TypeFamily:
    """Many types at once, given by a predicate: a converter's source or target.

    As a source, the converter applies to every type ``contains(tp)`` accepts; its ``fn``
    is called as ``fn(value)``. As a target, it is bound to the type the edge's target
    declares (when ``contains`` accepts it) and ``fn`` is called as ``fn(value, type)``.
    """

    name: str = attrs.field(validator=_name)
    contains: Callable[[Any], bool] = attrs.field(validator=attrs.validators.is_callable())

    def __contains__(self, tp: object) -> bool:
        try:
            return bool(self.contains(tp))
        except Exception:  # a predicate that chokes on an odd hint does not match it
            return False

    def __str__(self) -> str:
        return f"<{self.name}>"


class _InProcessConverter:
    """The in-process plugin :func:`converter` registers: one converter."""

    def __init__(self, conv: Converter) -> None:
        self.converter = conv

    @hookimpl
    def plait_register_converters(self, register: Register) -> None:
        register(self.converter.name, self.converter)


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def converter(
    *, lossless: bool, name: str | None = None, cost: float = 1
) -> Callable[[Callable[..., Any]], Converter]:
    """Make a :class:`Converter` of an annotated function and register it in-process.

    ``@plait_converters.converter(lossless=True)`` on ``def celsius(value: Kelvin) -> Celsius`` (or
    ``async def``) registers ``Converter(Kelvin, Celsius, celsius, True, "celsius")`` with
    the process-wide plugin manager, as plugin ``converter:<name>``. Defining the same
    function again (a re-run notebook cell) replaces it; another function with the same
    converter name is an error.

    :return: a decorator returning the :class:`Converter` (callable like the function).
    """

    def wrap(fn: Callable[..., Any]) -> Converter:
        try:
            hints = typing.get_type_hints(fn)
            first = next(iter(inspect.signature(fn).parameters))
        except (StopIteration, TypeError, NameError) as exc:
            raise TypeError(f"@converter cannot read the signature of {_qualname(fn)}") from exc
        if first not in hints or "return" not in hints:
            raise TypeError(
                f"@converter needs {_qualname(fn)} annotated: def f(value: Source) -> Target"
            )
        conv = Converter(hints[first], hints["return"], fn, lossless, name or fn.__name__, cost)
        manager = get_plugin_manager()
        plugin_name = f"converter:{conv.name}"
        existing = manager.get_plugin(plugin_name)
        if isinstance(existing, _InProcessConverter):
            if _qualname(existing.converter.fn) != _qualname(fn):
                raise PluginConflictError(
                    f"converter {conv.name!r} is already registered in-process by "
                    f"{_qualname(existing.converter.fn)}; pass another name="
                )
            manager.unregister(plugin_name)  # the same function defined again
        manager.register(_InProcessConverter(conv), plugin_name)
        return conv

    return wrap
