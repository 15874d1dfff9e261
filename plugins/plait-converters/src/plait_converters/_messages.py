"""Plait's message converter: the cattrs converter that turns messages into JSON-ready
data and back (checkpoints, the record converters, a form's values), with the hooks plugins
register for their own types (:class:`CattrsHooks`, through
``plait_register_type_hooks``) and scripts add with :func:`register_type_hooks`.

cattrs is imported when :func:`message_converter` first builds a converter, not when this
module is imported: a process that never encodes a message never pays for it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from plait import get_plugin_manager, hookimpl
from plait.spi import PluginManager, Registry, type_name

if TYPE_CHECKING:
    import cattrs

__all__ = ["CattrsHooks", "message_converter", "register_type_hooks"]


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
    """

    type: Any = attrs.field(validator=_not_none)
    structure: Callable[[Any, Any], Any] | None = None
    unstructure: Callable[[Any], Any] | None = None

    def __attrs_post_init__(self) -> None:
        if self.structure is None and self.unstructure is None:
            raise TypeError(f"CattrsHooks for {type_name(self.type)} needs a hook")


_CATTRS: weakref.WeakKeyDictionary[Registry[Any], cattrs.Converter] = weakref.WeakKeyDictionary()


def message_converter(manager: PluginManager | None = None) -> cattrs.Converter:
    """Plait's cattrs converter for messages, with every registered :class:`CattrsHooks`.

    JSON-ready (cattrs' JSON preconf: datetimes as ISO text, bytes as base85) and strict
    (unknown keys are an error). One per registry version of ``manager`` (default: the
    process-wide one); treat it as read-only and register hooks instead.
    """
    registry = (manager or get_plugin_manager()).registry("type_hooks")
    found = _CATTRS.get(registry)
    if found is None:
        from cattrs.preconf.json import make_converter  # on first use: see the module doc

        found = _CATTRS[registry] = make_converter(forbid_extra_keys=True)
        for reg in registry.values():
            hooks = reg.obj
            if hooks.structure is not None:
                found.register_structure_hook(hooks.type, hooks.structure)
            if hooks.unstructure is not None:
                found.register_unstructure_hook(hooks.type, hooks.unstructure)
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
