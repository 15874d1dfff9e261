"""Plait's message converter: the cattrs converter that turns messages into JSON-ready
data and back (checkpoints, the record converters, a form's values), with the hooks plugins
register for their own types (:class:`CattrsHooks`, through
``plait_register_type_hooks``) and scripts add with :func:`register_type_hooks`.

cattrs is imported when :func:`message_converter` first builds a converter, not when this
module is imported: a process that never encodes a message never pays for it.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from plait import get_plugin_manager, hookimpl
from plait.spi import PluginManager, Registry, type_name

if TYPE_CHECKING:
    import cattrs

__all__ = ["CattrsHooks", "message_converter", "register_type_hooks", "type_hooks"]


def _not_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        raise TypeError(f"'{attribute.name}' must be a type, got None")


@attrs.frozen
class CattrsHooks:
    """cattrs structure/unstructure hooks for a plugin's own ``type``.

    Register it through ``plait_register_type_hooks`` (under any name: the type's own is
    customary); :func:`message_converter` applies it, so messages of that type unstructure
    to JSON-ready data and back (the record converters and checkpoints).

    :param type: the type the hooks are for.
    :param structure: ``structure(data, type) -> value``.
    :param unstructure: ``unstructure(value) -> data``.
    :param requires: the module the hooks apply after (``None``: always).
    """

    type: Any = attrs.field(validator=_not_none)
    structure: Callable[[Any, Any], Any] | None = None
    unstructure: Callable[[Any], Any] | None = None
    #: The module the hooks apply after (``"pydantic"``): until it is imported no value of
    #: ``type`` can exist, so :func:`type_hooks` leaves them out. Register such hooks
    #: lazily with the same static attribute (``lazy(ref, requires="pydantic")``) and
    #: encoding never imports that library for a workflow that does not use it.
    requires: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.structure is None and self.unstructure is None:
            raise TypeError(f"CattrsHooks for {type_name(self.type)} needs a hook")


def _requires(obj: Any) -> str | None:
    """The module ``obj`` applies after: ``requires="pydantic"``, a static attribute of a
    lazy registration (``lazy("pkg._mod:HOOKS", requires="pydantic")``), read without
    importing anything."""
    need = getattr(obj, "requires", None)
    return need if isinstance(need, str) else None


def type_hooks(registry: Registry[Any]) -> list[CattrsHooks]:
    """The hooks of the ``type_hooks`` ``registry`` that apply now, in registration order.

    A hook registered lazily with ``requires="module"`` applies once that module has been
    imported: no value of a type it covers can exist before, so encoding a message never
    imports a library the workflow does not use (plait-durable registers Pydantic's hooks
    so: a run whose messages are attrs classes never imports pydantic).
    """
    return [
        reg.obj
        for reg in registry.values()
        if (need := _requires(reg.obj)) is None or need in sys.modules
    ]


def hooks_key(registry: Registry[Any]) -> tuple[bool, ...]:
    """What :func:`type_hooks` depends on besides ``registry``: which of the modules its
    hooks require are imported (a cache of what it gave is good while this is the same)."""
    return tuple(need in sys.modules for need in _required(registry))


def _required(registry: Registry[Any]) -> tuple[str, ...]:
    found = _REQUIRED.get(registry)
    if found is None:
        needs = (_requires(reg.obj) for reg in registry.values())
        found = _REQUIRED[registry] = tuple(n for n in needs if n is not None)
    return found


_REQUIRED: weakref.WeakKeyDictionary[Registry[Any], tuple[str, ...]] = weakref.WeakKeyDictionary()
_CATTRS: weakref.WeakKeyDictionary[Registry[Any], tuple[tuple[bool, ...], cattrs.Converter]] = (
    weakref.WeakKeyDictionary()
)


def message_converter(manager: PluginManager | None = None) -> cattrs.Converter:
    """Plait's cattrs converter for messages, with every registered :class:`CattrsHooks`
    that applies (:func:`type_hooks`).

    JSON-ready (cattrs' JSON preconf: datetimes as ISO text, bytes as base85) and strict
    (unknown keys are an error). One per registry version of ``manager`` (default: the
    process-wide one) and set of imported required modules; treat it as read-only and
    register hooks instead.
    """
    registry = (manager or get_plugin_manager()).registry("type_hooks")
    cached = _CATTRS.get(registry)
    key = hooks_key(registry)
    if cached is not None and cached[0] == key:
        return cached[1]
    from cattrs.preconf.json import make_converter  # on first use: see the module doc

    found = make_converter(forbid_extra_keys=True)
    for hooks in type_hooks(registry):
        if hooks.structure is not None:
            found.register_structure_hook(hooks.type, hooks.structure)
        if hooks.unstructure is not None:
            found.register_unstructure_hook(hooks.type, hooks.unstructure)
    _CATTRS[registry] = (key, found)
    return found


def register_type_hooks(
    cls: type,
    unstructure: Callable[[Any], Any],
    structure: Callable[[Any, type], Any],
) -> None:
    """Teach checkpoints (and record converters) to handle ``cls`` from a script:
    ``unstructure(obj) -> JSON-ready`` and ``structure(data, cls) -> obj``.

    Registers an in-process plugin named ``cattrs:<module>:<qualname>`` whose
    :class:`CattrsHooks` :func:`message_converter` applies; in a plugin distribution
    register :class:`CattrsHooks` through ``plait_register_type_hooks`` instead.
    """
    hooks = CattrsHooks(cls, structure=structure, unstructure=unstructure)
    name = f"cattrs:{cls.__module__}:{cls.__qualname__}"

    class _Plugin:
        @staticmethod
        @hookimpl
        def plait_register_type_hooks(register: Any) -> None:
            register(name, hooks)

    manager = get_plugin_manager()
    manager.unregister(name)  # registering again replaces the hooks
    manager.register(_Plugin(), name)
