"""Messages and state to JSON-ready data and back, for checkpoints.

JSON natives (``str``, ``int``, ``float``, ``bool``, ``None``), lists and string-keyed
dicts of encodable values travel as themselves. Everything else is tagged with its type so
the exact type comes back:
``{"__plait__": "tuple" | "dict" | "set" | "module:QualName", "v": ...}``.
attrs classes, dataclasses and any type with registered cattrs hooks are unstructured
through the kernel's message converter (:func:`plait.convert.message_converter`); plugins
add hooks for their own types by registering :class:`plait.convert.CattrsHooks` through
``plait_register_converters``, scripts with :func:`register_type_hooks`.

A value that cannot be encoded raises :class:`EncodeError` with the path inside the
value; the runner turns it into a :class:`~plait.errors.CheckpointEncodeError` naming the
executor or state key and the superstep.

.. versionadded:: 0.1
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable
from typing import Any

import attrs
import cattrs

__all__ = [
    "EncodeError",
    "DecodeError",
    "encode_value",
    "decode_value",
    "message_converter",
    "register_type_hooks",
]

TAG = "__plait__"
_NATIVE = (str, int, bool, type(None))
_hooked_cache: dict[int, tuple[Any, frozenset[Any]]] = {}


class EncodeError(ValueError):
    """A value has no JSON encoding; ``path`` says where inside it."""

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(f"{message} (at {path})" if path else message)


class DecodeError(ValueError):
    """Encoded data does not decode (unknown type, bad shape)."""


def message_converter() -> cattrs.Converter:
    """The cattrs converter for message and state values, with every registered hook."""
    from .convert import message_converter as current

    return current()


def _hooked() -> frozenset[Any]:
    """Types some plugin registered :class:`~plait.convert.CattrsHooks` for (cached per
    registry: a registration builds a new one)."""
    from .convert import CattrsHooks
    from .plugins import get_plugin_manager

    registry = get_plugin_manager().registry("converter")
    cached = _hooked_cache.get(id(registry))
    if cached is None or cached[0] is not registry:
        types = frozenset(r.obj.type for r in registry.values() if isinstance(r.obj, CattrsHooks))
        cached = _hooked_cache[id(registry)] = (registry, types)
    return cached[1]


def register_type_hooks(
    cls: type,
    unstructure: Callable[[Any], Any],
    structure: Callable[[Any, type], Any],
) -> None:
    """Teach checkpoints (and record converters) to handle ``cls`` from a script:
    ``unstructure(obj) -> JSON-ready`` and ``structure(data, cls) -> obj``.

    Registers an in-process plugin named ``cattrs:<module>:<qualname>``; in a plugin
    distribution register :class:`~plait.convert.CattrsHooks` through
    ``plait_register_converters`` instead.
    """
    from .convert import CattrsHooks
    from .hookspecs import hookimpl
    from .plugins import get_plugin_manager

    hooks = CattrsHooks(cls, structure=structure, unstructure=unstructure)
    name = f"cattrs:{_ref(cls)}"

    class _Plugin:
        @staticmethod
        @hookimpl
        def plait_register_converters(register: Any) -> None:
            register(name, hooks)

    manager = get_plugin_manager()
    manager.unregister(name)  # registering again replaces the hooks
    manager.register(_Plugin(), name)


def _ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode_value(value: Any, path: str = "") -> Any:
    """JSON-ready form of ``value`` that :func:`decode_value` turns back into it."""
    cls = type(value)
    if cls in _NATIVE:
        return value
    if cls is float:
        if math.isfinite(value):
            return value
        return {TAG: "float", "v": repr(value)}
    if cls is list:
        return [encode_value(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if cls is dict:
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise EncodeError(f"dict key {key!r} is not a string", path)
            out[key] = encode_value(item, f"{path}.{key}" if path else key)
        # a plain dict travels as itself; only one with a key named like the tag is wrapped
        return {TAG: "dict", "v": out} if TAG in out else out
    if cls is tuple:
        return {TAG: "tuple", "v": [encode_value(x, f"{path}[{i}]") for i, x in enumerate(value)]}
    if cls in (set, frozenset):
        items = [encode_value(x, f"{path}[*]") for x in value]
        return {TAG: cls.__name__, "v": sorted(items, key=repr)}
    if cls is bytes:
        return {TAG: "bytes", "v": value.hex()}
    if attrs.has(cls) or dataclasses.is_dataclass(cls) or cls in _hooked():
        try:
            data = message_converter().unstructure(value)
            return {TAG: _ref(cls), "v": encode_value(data, path)}
        except EncodeError:
            raise
        except Exception as exc:
            raise EncodeError(f"cannot encode {cls.__qualname__}: {exc}", path) from exc
    raise EncodeError(
        f"cannot encode a value of type {cls.__module__}.{cls.__qualname__}; use JSON types, "
        "attrs classes or dataclasses, or register hooks with plait.codec.register_type_hooks",
        path,
    )


def decode_value(data: Any) -> Any:
    """Inverse of :func:`encode_value`."""
    if isinstance(data, list):
        return [decode_value(item) for item in data]
    if not isinstance(data, dict):
        return data
    if TAG not in data:
        return {key: decode_value(item) for key, item in data.items()}
    tag = data.get(TAG)
    raw: Any = data.get("v")
    if tag == "dict":
        return {key: decode_value(item) for key, item in raw.items()}
    if tag == "tuple":
        return tuple(decode_value(x) for x in raw)
    if tag == "set":
        return {decode_value(x) for x in raw}
    if tag == "frozenset":
        return frozenset(decode_value(x) for x in raw)
    if tag == "bytes":
        return bytes.fromhex(raw)
    if tag == "float":
        return float(raw)
    if not isinstance(tag, str) or ":" not in tag:
        raise DecodeError(f"unknown encoded value {data!r:.200}")
    cls = _import(tag)
    try:
        return message_converter().structure(decode_value(raw), cls)
    except Exception as exc:
        raise DecodeError(f"cannot rebuild {tag}: {exc}") from exc


def _import(ref: str) -> type:
    module_name, _, qualname = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise DecodeError(f"type {ref} named in a checkpoint cannot be imported: {exc}") from exc
    if not isinstance(obj, type):
        raise DecodeError(f"{ref} named in a checkpoint is not a class")
    return obj


def type_ref(tp: Any) -> str | None:
    """``module:qualname`` of a plain class (to re-import it in another process), else None."""
    return _ref(tp) if isinstance(tp, type) else None


def import_type(ref: str) -> type:
    """Import the class named by :func:`type_ref`."""
    return _import(ref)
