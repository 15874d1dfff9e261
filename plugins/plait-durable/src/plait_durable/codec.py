"""Messages and state to JSON-ready data and back, for checkpoints.

JSON natives (``str``, ``int``, ``float``, ``bool``, ``None``), lists and string-keyed
dicts of encodable values travel as themselves. Everything else is tagged with its type so
the exact type comes back:
``{"__plait__": "tuple" | "dict" | "set" | "module:QualName", "v": ...}``.
attrs classes, dataclasses and any type with registered cattrs hooks are unstructured
through Plait's message converter (:func:`plait_converters.message_converter`); plugins
add hooks for their own types by registering :class:`plait_converters.CattrsHooks` through
``plait_register_type_hooks``, scripts with :func:`plait_converters.register_type_hooks`.

Decoding is a trust boundary: stored data is untrusted. :func:`decode_value` rebuilds
JSON values, the built-in tags above and only the classes in the mapping it is given —
:func:`declared_types` of the workflow (the types its handlers take, send and yield,
their fields, and every type some plugin registered hooks for). A tag naming anything
else is a :class:`DecodeError`; nothing named by stored data is ever imported.

Pydantic (v2) models encode through their own ``model_dump``/``model_validate``: with
pydantic installed, plait-durable registers hooks for ``pydantic.BaseModel``, which
cover every model class. A model still decodes only when the workflow declares it.

A value that cannot be encoded raises :class:`EncodeError` with the path inside the
value; the checkpointer turns it into a :class:`~plait_durable.CheckpointEncodeError` naming the
executor or state key and the superstep.

Checkpoints, and ``plait-ray``'s messages to and from its workers, go through it; every
name here is also a name of ``plait_durable``.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

# its names are imported on first use (through the package): a run whose values are plain
# JSON never imports the message converter's module
import plait_converters
from plait import PlaitError, get_plugin_manager

if TYPE_CHECKING:
    from plait.spi import CompiledGraph, Registry

__all__ = [
    "EncodeError",
    "DecodeError",
    "encode_value",
    "decode_value",
    "declared_types",
    "type_ref",
]

TAG = "__plait__"
_NATIVE = (str, int, bool, type(None))
# One slot, not a dict keyed by registry: an old registry is never pinned in memory.
_hooked_last: tuple[Any, tuple[bool, ...], frozenset[Any]] | None = None
_BUILTIN_TYPES = (str, int, float, bool, bytes, list, dict, tuple, set, frozenset, type(None))


class EncodeError(PlaitError, ValueError):
    """A value has no JSON encoding; ``path`` says where inside it."""

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(f"{message} (at {path})" if path else message)


class DecodeError(PlaitError, ValueError):
    """Encoded data does not decode: a type tag the workflow does not declare (``tag``
    names it), or a value of the wrong shape."""

    def __init__(self, message: str, tag: str | None = None) -> None:
        self.tag = tag
        super().__init__(message)


def _hooked() -> frozenset[Any]:
    """Types some plugin registered :class:`~plait_converters.CattrsHooks` for, that apply
    now (cached per registry and :func:`~plait_converters.hooks_key`: a registration builds
    a new registry, and importing a library a hook requires changes the key)."""
    global _hooked_last
    registry = get_plugin_manager().registry("type_hooks")
    cached = _hooked_last
    key = plait_converters.hooks_key(registry)
    if cached is None or cached[0] is not registry or cached[1] != key:
        cached = _hooked_last = (registry, key, _hooked_types(registry))
    return cached[2]


def _is_hooked(cls: type) -> bool:
    """Whether some plugin's hooks cover ``cls``: registered for it, or for a base class
    of it (the message converter dispatches a class's hooks to its subclasses: one hook
    for ``pydantic.BaseModel`` covers every model)."""
    hooked = _hooked()
    if cls in hooked:
        return True
    return any(isinstance(h, type) and issubclass(cls, h) for h in hooked)


def _hooked_types(registry: Registry[Any]) -> frozenset[Any]:
    return frozenset(hooks.type for hooks in plait_converters.type_hooks(registry))


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
    if attrs.has(cls) or dataclasses.is_dataclass(cls) or _is_hooked(cls):
        try:
            data = plait_converters.message_converter().unstructure(value)
            return {TAG: _ref(cls), "v": encode_value(data, path)}
        except EncodeError:
            raise
        except Exception as exc:
            raise EncodeError(f"cannot encode {cls.__qualname__}: {exc}", path) from exc
    raise EncodeError(
        f"cannot encode a value of type {cls.__module__}.{cls.__qualname__}; use JSON types, "
        "attrs classes or dataclasses, or register hooks with plait_converters.register_type_hooks",
        path,
    )


def decode_value(data: Any, types: Mapping[str, type] | None = None) -> Any:
    """Inverse of :func:`encode_value`, rebuilding only the classes in ``types``.

    :param types: tag (``module:qualname``) -> class, usually :func:`declared_types` of
        the workflow. Without it only JSON values and the built-in tags decode.
    :raises DecodeError: a tag not in ``types`` (its ``tag`` attribute names it), a value
        of the wrong shape, or nesting too deep to decode.
    """
    try:
        return _decode(data, types or {})
    except DecodeError:
        raise
    except RecursionError:
        raise DecodeError("encoded value is nested too deeply to decode") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise DecodeError(f"encoded value has the wrong shape: {exc}") from exc


def _decode(data: Any, types: Mapping[str, type]) -> Any:
    if isinstance(data, list):
        return [_decode(item, types) for item in data]
    if not isinstance(data, dict):
        return data
    if TAG not in data:
        return {key: _decode(item, types) for key, item in data.items()}
    tag = data.get(TAG)
    raw: Any = data.get("v")
    if tag == "dict":
        return {key: _decode(item, types) for key, item in raw.items()}
    if tag == "tuple":
        return tuple(_decode(x, types) for x in raw)
    if tag == "set":
        return {_decode(x, types) for x in raw}
    if tag == "frozenset":
        return frozenset(_decode(x, types) for x in raw)
    if tag == "bytes":
        return bytes.fromhex(raw)
    if tag == "float":
        if not isinstance(raw, str):
            raise DecodeError(f"encoded float is not text: {raw!r:.80}", "float")
        return float(raw)
    cls = types.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise DecodeError(
            f"type tag {tag!r:.200} is not a type this workflow declares or a plugin "
            "registers; it is not rebuilt",
            str(tag)[:200],
        )
    try:
        return plait_converters.message_converter().structure(_decode(raw, types), cls)
    except (DecodeError, RecursionError):
        raise
    except Exception as exc:
        raise DecodeError(f"cannot rebuild {tag}: {exc}", tag) from exc


def declared_types(graph: CompiledGraph) -> Mapping[str, type]:
    """Tag -> class for every class a checkpoint of ``graph``'s runs may hold.

    The classes its handlers take, send and yield (and their type arguments and field
    types), the classes executors list in ``request_types`` (payloads of
    ``ctx.request_info``) and ``state_types`` (values kept in ``ctx.state``),
    :class:`~plait.RequestResponse`, the built-in types, and every type a
    plugin of the graph's plugin manager registered :class:`~plait_converters.CattrsHooks`
    for. Computed once per graph and type-hooks registry, in the graph's cache
    (:meth:`~plait.spi.CompiledGraph.cached`).
    """
    return graph.cached(_DECLARED_TYPES_KEY, _compute_declared_types, registry="type_hooks")


#: the key of a graph's declared types in the graph's cache
_DECLARED_TYPES_KEY = ("plait_durable", "declared_types")


def _compute_declared_types(graph: CompiledGraph) -> Mapping[str, type]:
    registry = graph.plugin_manager.registry("type_hooks")
    from plait import RequestResponse

    found: dict[str, type] = {}
    seen: set[int] = set()
    roots: list[Any] = [RequestResponse, *_BUILTIN_TYPES, *_hooked_types(registry)]
    for executor in graph.executors.values():
        # request payloads and state values are not in handler signatures: an executor
        # declares their classes in these optional attributes
        roots.extend(getattr(executor, "request_types", ()))
        roots.extend(getattr(executor, "state_types", ()))
        for handler in executor.handlers:
            roots.append(handler.input_type)
            roots.extend(handler.output_types)
            roots.extend(handler.workflow_output_types)
    for root in roots:
        _collect(root, found, seen)
    return found


def _collect(tp: Any, found: dict[str, type], seen: set[int]) -> None:
    if id(tp) in seen:
        return
    seen.add(id(tp))
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return
    if origin is None and isinstance(tp, type):
        found[_ref(tp)] = tp
        if attrs.has(tp) or dataclasses.is_dataclass(tp):
            try:
                hints = typing.get_type_hints(tp)
            except Exception:  # unresolvable annotations: the class itself still counts
                hints = {}
            for hint in hints.values():
                _collect(hint, found, seen)
        return
    if origin is not None:
        _collect(origin, found, seen)
    for arg in typing.get_args(tp):
        if isinstance(arg, (list, tuple)):  # Callable[[A, B], C]
            for item in arg:
                _collect(item, found, seen)
        else:
            _collect(arg, found, seen)


def type_ref(tp: Any) -> str | None:
    """``module:qualname`` of a plain class (a tag :func:`declared_types` resolves), else
    None."""
    return _ref(tp) if isinstance(tp, type) else None
