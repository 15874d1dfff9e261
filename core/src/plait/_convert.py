"""Converters between message types: the records plugins register, and registering them.

A :class:`Converter` is a named function from one message type to another, marked
``lossless`` (nothing the value says is lost: a partial converter raises rather than
guesses) or lossy, with a ``cost``; its source or target may be a :class:`TypeFamily`.
Plugins register converters through ``plait_register_converters``; scripts use
:func:`converter`. A :class:`CattrsHooks` registered under the same hook teaches
:func:`message_converter` a plugin's own type; scripts use :func:`register_type_hooks`.

Chaining converters is not here: where an edge's types differ, the builder asks
``plait-converters`` (``plait_converters.find_chain``) for the cheapest chain of the
registered converters, so the kernel never holds a search.

cattrs is imported when :func:`message_converter` first builds a converter, not when this
module is imported: a process that never encodes a message never pays for it.
"""

from __future__ import annotations

import inspect
import typing
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ._errors import PluginConflictError
from ._hookspecs import Register, hookimpl
from ._plugins import PluginManager, Registry, get_plugin_manager
from ._registry import Lazy
from ._types import type_name

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "CattrsHooks",
    "Converter",
    "TypeFamily",
    "converter",
    "message_converter",
    "register_type_hooks",
]


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"'{attribute.name}' must be a non-empty str, got {value!r}")


def _not_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        raise TypeError(f"'{attribute.name}' must be a type or a TypeFamily, got None")


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
        raise ValueError(f"'{attribute.name}' must be a positive number, got {value!r}")


def _identity(value: Any) -> Any:
    return value


# --------------------------------------------------------------------------- the records


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


@attrs.frozen
class Converter:
    """A named function from messages of type ``source`` to messages of type ``target``.

    :param source: the type it takes (or a :class:`TypeFamily`).
    :param target: the type it returns (or a :class:`TypeFamily`).
    :param fn: ``fn(value) -> converted``, sync or async (``fn(value, target_type)`` when
        ``target`` is a family). Raise on values it cannot convert faithfully.
    :param lossless: True when the result keeps everything the value says; lossy
        converters join a chain only where the builder or the edge allows it.
    :param name: its registry name, unique among installed converters.
    :param cost: a positive weight; the cheapest chain wins.

    Calling a converter calls ``fn``.
    """

    source: Any = attrs.field(validator=_not_none)
    target: Any = attrs.field(validator=_not_none)
    fn: Callable[..., Any] = attrs.field(validator=attrs.validators.is_callable())
    lossless: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    name: str = attrs.field(validator=_name)
    cost: float = attrs.field(default=1, validator=_positive)

    def __call__(self, value: Any, *args: Any) -> Any:
        return self.fn(value, *args)


@attrs.frozen
class CattrsHooks:
    """cattrs structure/unstructure hooks for a plugin's own ``type``.

    Register it through ``plait_register_converters`` like a converter; it is not an edge
    of the converter graph, but :func:`message_converter` applies it, so messages of that
    type unstructure to JSON-ready data and back (the record converters and checkpoints).

    :param structure: ``structure(data, type) -> value``.
    :param unstructure: ``unstructure(value) -> data``.
    """

    type: Any = attrs.field(validator=_not_none)
    #: Not an edge of the converter graph: the converter search skips it.
    graph_edge: ClassVar[bool] = False
    structure: Callable[[Any, Any], Any] | None = None
    unstructure: Callable[[Any], Any] | None = None

    def __attrs_post_init__(self) -> None:
        if self.structure is None and self.unstructure is None:
            raise TypeError(f"CattrsHooks for {type_name(self.type)} needs a hook")

    # What the converter registry checks for: the unstructure direction, lossless.
    source = property(lambda self: self.type, doc="The type the hooks are for.")
    target = property(lambda self: Any, doc="JSON-ready data.")
    fn = property(lambda self: self.unstructure or _identity, doc="The unstructure hook.")
    lossless = property(lambda self: True, doc="Hooks must round-trip.")


# --------------------------------------------------------------------------- cattrs


_CATTRS: weakref.WeakKeyDictionary[Registry[Any], cattrs.Converter] = weakref.WeakKeyDictionary()


def registered_hooks(registry: Registry[Any]) -> list[CattrsHooks]:
    """Every :class:`CattrsHooks` of the converter ``registry``, in registration order:
    registered as itself, or lazily with ``lazy("module:HOOKS", graph_edge=False, ...)``
    (its module is imported now; lazily registered converters are not).
    """
    found: list[CattrsHooks] = []
    for reg in registry.values():
        obj = reg.obj
        if isinstance(obj, CattrsHooks):
            found.append(obj)
        elif isinstance(obj, Lazy) and obj.__dict__.get("graph_edge") is False:
            hooks = obj.resolve()
            if not isinstance(hooks, CattrsHooks):
                raise TypeError(f"{obj.ref}, registered with graph_edge=False, is not CattrsHooks")
            found.append(hooks)
    return found


def message_converter(manager: PluginManager | None = None) -> cattrs.Converter:
    """The kernel's cattrs converter for messages, with every registered :class:`CattrsHooks`.

    JSON-ready (cattrs' JSON preconf: datetimes as ISO text, bytes as base85) and strict
    (unknown keys are an error). One per registry version of ``manager`` (default: the
    process-wide one); treat it as read-only and register hooks instead.
    """
    registry = (manager or get_plugin_manager()).registry("converter")
    found = _CATTRS.get(registry)
    if found is None:
        from cattrs.preconf.json import make_converter  # on first use: see the module doc

        found = _CATTRS[registry] = make_converter(forbid_extra_keys=True)
        for hooks in registered_hooks(registry):
            if hooks.structure is not None:
                found.register_structure_hook(hooks.type, hooks.structure)
            if hooks.unstructure is not None:
                found.register_unstructure_hook(hooks.type, hooks.unstructure)
    return found


# --------------------------------------------------------------------------- in-process


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

    ``@plait.converter(lossless=True)`` on ``def celsius(value: Kelvin) -> Celsius`` (or
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


def register_type_hooks(
    cls: type,
    unstructure: Callable[[Any], Any],
    structure: Callable[[Any, type], Any],
) -> None:
    """Teach checkpoints (and record converters) to handle ``cls`` from a script:
    ``unstructure(obj) -> JSON-ready`` and ``structure(data, cls) -> obj``.

    Registers an in-process plugin named ``cattrs:<module>:<qualname>`` whose
    :class:`CattrsHooks` :func:`message_converter` applies; in a plugin distribution
    register :class:`CattrsHooks` through ``plait_register_converters`` instead.
    """
    hooks = CattrsHooks(cls, structure=structure, unstructure=unstructure)
    name = f"cattrs:{cls.__module__}:{cls.__qualname__}"

    class _Plugin:
        @staticmethod
        @hookimpl
        def plait_register_converters(register: Any) -> None:
            register(name, hooks)

    manager = get_plugin_manager()
    manager.unregister(name)  # registering again replaces the hooks
    manager.register(_Plugin(), name)
