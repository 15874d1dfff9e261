"""Static type assignability: may a value of type A go where type B is declared?

The workflow builder calls :func:`is_assignable` for every edge to check that what an
executor sends can be received by the executor at the other end, and the converter search
(:mod:`plait_converters._graph`) for every step of a chain. The run-time side — does this
*value* fit that hint (``plait.spi.is_instance``), and the canonical form of a hint
(``plait.spi.normalize``) — is the kernel's: the runner dispatches messages with it.

The rules follow what users of static type checkers expect, with these deliberate choices:

* ``Any`` is gradual: an ``Any`` source is assignable anywhere ("unknown, check at run
  time") and anything is assignable to ``Any``. Bare generics (``list``) mean ``list[Any]``.
* No numeric tower: ``int`` is *not* assignable to ``float`` (nor ``float`` to
  ``complex``). Widening a number is a conversion, and conversions are the converters' job.
* Forms we cannot reason about (forward references given as strings, parameters of user
  generics whose bases we cannot map) are treated as ``Any``: the build passes and the
  run-time check decides.
* Protocols are checked structurally by member *names*, not member signatures.
* ``Literal`` values match by type and value, so ``True`` does not fit ``Literal[1]``.
"""

from __future__ import annotations

import collections.abc as cabc
import functools
from typing import Any, TypeVar

import typing_extensions as tx
from plait import Never
from plait.spi import (
    is_literal,
    is_newtype,
    is_protocol,
    normalize,
    split,
    tuple_shape,
    typeddict_fields,
    union_members,
    union_of,
)

__all__ = ["is_assignable"]

_CALLABLE: Any = cabc.Callable  # typed Any: mypy sees a special form, not a class

# Variance of the parameters of standard generics: "+" covariant, "-" contravariant,
# "=" invariant. Anything not listed (list, dict, set, MutableSequence, ...) is invariant,
# except user generics, whose TypeVars carry their own variance.
_COVARIANT_ABCS = """Iterable Iterator Reversible Collection Container Sequence Set KeysView
    ValuesView MappingView AsyncIterable AsyncIterator Awaitable"""
_VARIANCE: dict[Any, str] = {getattr(cabc, name): "+" for name in _COVARIANT_ABCS.split()}
_VARIANCE.update({frozenset: "+", type: "+", cabc.Mapping: "=+", cabc.ItemsView: "++"})
_VARIANCE.update({cabc.Generator: "+-+", cabc.Coroutine: "+-+", cabc.AsyncGenerator: "+-"})


# --------------------------------------------------------------------------- assignability


def is_assignable(source: Any, target: Any) -> bool:
    """Return True when a value statically typed *source* may be passed where *target* is declared.

    Handles classes (nominally, including attrs classes and dataclasses), ``Any``,
    ``Never``, unions, ``Literal``, ``Annotated``, ``NewType``, ``TypeVar``, parametrised
    generics with the variance of their parameters (``list`` invariant, ``Sequence``
    covariant, ...), tuples, ``Protocol`` (structurally) and ``TypedDict``. ``int`` is not
    assignable to ``float``: see the module docstring. Results are cached.
    """
    try:
        hash((source, target))
    except TypeError:  # e.g. Annotated with list metadata: compute without the cache
        return _assignable(normalize(source), normalize(target))
    return _assignable_cached(source, target)


@functools.lru_cache(maxsize=16384)
def _assignable_cached(source: Any, target: Any) -> bool:
    return _assignable(normalize(source), normalize(target))


def _assignable(source: Any, target: Any) -> bool:
    if source is Any or source is Never or target is Any or target is object:
        return True
    if source is target or source == target:
        return True
    if target is Never:
        return False
    members = union_members(source)
    if members is not None:
        return all(is_assignable(m, target) for m in members)
    if is_literal(source):
        return all(_literal_value_assignable(v, target) for v in tx.get_args(source))
    members = union_members(target)
    if members is not None:
        return any(is_assignable(source, m) for m in members)
    if is_literal(target):
        return False
    if is_newtype(source):
        return is_assignable(source.__supertype__, target)
    if is_newtype(target):
        return False
    if tx.is_typeddict(source):
        return _typeddict_assignable(source, target)
    if tx.is_typeddict(target):
        return False
    return _class_assignable(source, target)


def _literal_value_assignable(value: Any, target: Any) -> bool:
    members = union_members(target)
    if members is not None:
        return any(_literal_value_assignable(value, normalize(m)) for m in members)
    if is_literal(target):
        return any(type(value) is type(v) and value == v for v in tx.get_args(target))
    return is_assignable(type(value), target)


def _typeddict_assignable(source: Any, target: Any) -> bool:
    source_hints, source_required = typeddict_fields(source)
    if tx.is_typeddict(target):
        target_hints, target_required = typeddict_fields(target)
        return all(
            key in source_hints
            and (key not in target_required or key in source_required)
            and is_assignable(source_hints[key], value_type)
            for key, value_type in target_hints.items()
        )
    # Anywhere else a TypedDict behaves as a dict of its keys to the union of its values.
    values = union_of(tuple(map(normalize, source_hints.values())))
    return is_assignable(dict[str, values], target)  # type: ignore[valid-type]


def _structural(cls: Any, protocol: Any) -> bool:
    """Whether class *cls* has every member of *protocol* (by name)."""
    declared: set[str] = set()
    for klass in getattr(cls, "__mro__", ()):
        declared.update(getattr(klass, "__annotations__", {}))
        declared.update(a.name for a in getattr(klass, "__attrs_attrs__", ()))
    return all(hasattr(cls, name) or name in declared for name in tx.get_protocol_members(protocol))


def _class_assignable(source: Any, target: Any) -> bool:
    source_origin, source_args = split(source)
    target_origin, target_args = split(target)
    if not isinstance(source_origin, type) or not isinstance(target_origin, type):
        return False
    try:
        nominal = issubclass(source_origin, target_origin)
    except TypeError:  # e.g. protocols with data members refuse issubclass()
        nominal = False
    if not nominal:
        return is_protocol(target_origin) and _structural(source_origin, target_origin)
    if target_origin is tuple and target_args is not None:
        return _tuple_assignable(source_args, target_args)
    if not target_args or source_args is None:
        return True
    projected = _project(source_origin, source_args, target_origin, len(target_args))
    if projected is None:  # parameters we cannot map onto the target's: decide at run time
        return True
    if target_origin is _CALLABLE:
        return _callable_assignable(projected, target_args)
    return all(
        _vary(kind, s, t)
        for kind, s, t in zip(
            _variance(target_origin, len(target_args)), projected, target_args, strict=False
        )
    )


def _vary(kind: str, source: Any, target: Any) -> bool:
    """Check one type argument: "+" covariant, "-" contravariant, "=" both ways."""
    covariant_ok = kind == "-" or is_assignable(source, target)
    return covariant_ok and (kind == "+" or is_assignable(target, source))


def _variance(origin: Any, count: int) -> str:
    known = _VARIANCE.get(origin)
    if known is not None and len(known) == count:
        return known
    params = getattr(origin, "__parameters__", ())
    if len(params) == count:
        return "".join(
            "+" if p.__covariant__ else "-" if p.__contravariant__ else "=" for p in params
        )
    return "=" * count


def _tuple_assignable(source_args: tuple[Any, ...] | None, target_args: tuple[Any, ...]) -> bool:
    source_elems, source_variadic = tuple_shape(source_args)
    target_elems, target_variadic = tuple_shape(target_args)
    if target_variadic:
        return all(is_assignable(s, target_elems[0]) for s in source_elems)
    if source_variadic:
        return source_elems[0] is Any or normalize(source_elems[0]) is Any
    return len(source_elems) == len(target_elems) and all(
        map(is_assignable, source_elems, target_elems)
    )


def _callable_assignable(source_args: tuple[Any, ...], target_args: tuple[Any, ...]) -> bool:
    source_params, source_return = source_args
    target_params, target_return = target_args
    if not is_assignable(source_return, target_return):
        return False
    if source_params is Ellipsis or target_params is Ellipsis:
        return True
    return len(source_params) == len(target_params) and all(
        map(is_assignable, target_params, source_params)
    )


def _project(
    origin: Any, args: tuple[Any, ...] | None, target: Any, count: int
) -> tuple[Any, ...] | None:
    """Express *origin[args]* as arguments of its base *target*; None when unknown."""
    if args is None:
        return (Any,) * count
    if origin is tuple:
        elems, _ = tuple_shape(args)
        return (union_of(elems),) if count == 1 else None
    if origin is target:
        return args if len(args) == count else None
    params = getattr(origin, "__parameters__", ())
    if params and len(params) == len(args):  # a user generic: follow its declared bases
        substitution = dict(zip(params, args, strict=True))
        for base in getattr(origin, "__orig_bases__", ()):
            base_origin = tx.get_origin(base) or base
            if isinstance(base_origin, type) and issubclass(base_origin, target):
                base_args = tuple(_substitute(a, substitution) for a in tx.get_args(base))
                return _project(base_origin, base_args, target, count)
    if len(args) == count:
        return args
    if count == 1 and len(args) == 2 and issubclass(origin, cabc.Mapping):
        return (args[0],)  # iterating a mapping yields its keys
    return None


def _substitute(arg: Any, substitution: dict[Any, Any]) -> Any:
    if isinstance(arg, TypeVar):
        return substitution.get(arg, Any)
    params = getattr(arg, "__parameters__", ())
    if not params:
        return arg
    try:
        return arg[tuple(substitution.get(p, Any) for p in params)]
    except TypeError:
        return Any
