"""Type hints at run time: what a hint is, its readable name, and whether a value fits it.

The runner calls :func:`is_instance` to dispatch a message to the handler whose declared
type it fits, and uses :func:`is_class_decidable` to know when that decision may be cached
by ``type(value)``. Under them, the machinery that reads type hints: their canonical form
(:func:`normalize`), their parts, and their readable names (:func:`type_name`).

Static assignability (may a value *typed* A go where B is declared?) is not here: the
builder's edge check and the converter search ask ``plait_converters.is_assignable``. The
run-time rules agree with it: ``Literal`` values match by type and value (``True`` does
not fit ``Literal[1]``), ``int`` does not fit ``float``, and a ``Protocol`` that is not
runtime-checkable is checked by member names.
"""

from __future__ import annotations

import collections.abc as cabc
import functools
import os
import sys
import types
import typing
from typing import Any, TypeVar

import typing_extensions as tx

if sys.version_info >= (3, 11):
    from typing import Never
else:
    from typing_extensions import Never

__all__ = ["Never", "is_class_decidable", "is_instance", "normalize", "type_name"]

NONE_TYPE = type(None)
# Tuples, not sets: membership then compares by identity and equality without hashing,
# and some hints (Annotated with list metadata) are unhashable.
ANY_FORMS = (typing.Any, tx.Any)
NEVER_FORMS = (typing.NoReturn, tx.NoReturn, tx.Never, getattr(typing, "Never", tx.Never))
UNION_ORIGINS = (typing.Union, types.UnionType)
LITERAL_ORIGINS = (typing.Literal, tx.Literal)
ANNOTATED_ORIGINS = (typing.Annotated, tx.Annotated)
SHORT_MODULES = frozenset({"builtins", "typing", "typing_extensions", "collections.abc"})

# --------------------------------------------------------------------------- normalising


def normalize(tp: Any) -> Any:
    """Return the canonical top-level form of the type hint *tp*.

    ``None`` becomes ``NoneType``; ``Annotated[X, ...]`` becomes ``X``; ``NoReturn`` becomes
    ``Never``; a ``TypeVar`` becomes its bound, the union of its constraints, or ``Any``;
    a string or ``ForwardRef`` becomes ``Any`` (an unresolved forward reference);
    ``Optional``/``Union``/``X | Y`` become a ``typing.Union`` of normalised members, with
    ``Never`` members dropped. Parameters of generics are left as written.
    """
    while True:
        if tp is None:
            return NONE_TYPE
        if tp in ANY_FORMS:
            return Any
        if tp in NEVER_FORMS:
            return Never
        if isinstance(tp, (str, typing.ForwardRef)):
            return Any
        if isinstance(tp, TypeVar):
            if tp.__bound__ is not None:
                tp = tp.__bound__
            elif tp.__constraints__:
                tp = union_of(tp.__constraints__)
            else:
                return Any
            continue
        origin = tx.get_origin(tp)
        if origin in ANNOTATED_ORIGINS:
            tp = tx.get_args(tp)[0]
            continue
        if origin in UNION_ORIGINS:
            members = tuple(m for m in map(normalize, tx.get_args(tp)) if m is not Never)
            return union_of(members)
        return tp


def split(tp: Any) -> tuple[Any, tuple[Any, ...] | None]:
    """Return ``(origin class, args)``; args is None for an unparametrised class."""
    origin = tx.get_origin(tp)
    if origin is None:
        return tp, None
    args = tx.get_args(tp)
    if origin is tuple and args == ((),):  # typing.Tuple[()] on Python 3.10
        args = ()
    return origin, args


def union_members(tp: Any) -> tuple[Any, ...] | None:
    """The members of a union (``X | Y`` or ``Union[X, Y]``), or None for anything else."""
    return tx.get_args(tp) if tx.get_origin(tp) in UNION_ORIGINS else None


def is_literal(tp: Any) -> bool:
    """Whether ``tp`` is a ``Literal[...]``."""
    return tx.get_origin(tp) in LITERAL_ORIGINS


def is_newtype(tp: Any) -> bool:
    """Whether ``tp`` is a ``NewType`` (its ``__supertype__`` is what it stands for)."""
    return callable(tp) and hasattr(tp, "__supertype__") and not isinstance(tp, type)


def is_protocol(tp: Any) -> bool:
    """Whether ``tp`` is a ``Protocol`` class."""
    return isinstance(tp, type) and tx.is_protocol(tp)


@functools.lru_cache(maxsize=256)
def typeddict_fields(td: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """Value types and required keys of a TypedDict (unresolvable annotations are Any)."""
    try:
        hints = tx.get_type_hints(td)
    except Exception:  # a forward reference we cannot resolve: fall back to Any
        hints = dict.fromkeys(getattr(td, "__annotations__", {}), Any)
    return hints, frozenset(td.__required_keys__)


def tuple_shape(args: tuple[Any, ...] | None) -> tuple[tuple[Any, ...], bool]:
    """Return ``(element types, variadic)`` for tuple args (None: bare ``tuple``)."""
    if args is None:
        return (Any,), True
    if len(args) == 2 and args[1] is Ellipsis:
        return (args[0],), True
    return args, False


def union_of(members: tuple[Any, ...]) -> Any:
    """The union of ``members`` (``Never`` for none), built at run time from a tuple, which
    the ``X | Y`` spelling cannot do."""
    return typing.Union[members] if members else Never  # noqa: UP007


# --------------------------------------------------------------------------- naming


def type_name(tp: Any) -> str:
    """Return a short readable name of *tp* for error messages.

    Names of hashable types are computed once (a 1,000-node spec names the same few).
    See :func:`_type_name` for the rules.
    """
    if type(tp) is type:  # a plain class: hashable, without type arguments
        return _cached_type_name(tp) if tp.__module__ != "__main__" else _type_name(tp)
    if getattr(tp, "__module__", None) == "__main__" or typing.get_args(tp):
        return _type_name(tp)  # named by the running script: not cached
    try:
        return _cached_type_name(tp)
    except TypeError:  # unhashable
        return _type_name(tp)


@functools.lru_cache(maxsize=1024)
def _cached_type_name(tp: Any) -> str:
    return _type_name(tp)


def _type_name(tp: Any) -> str:
    """Return a short readable name of *tp* for error messages.

    Builtins and standard generics are named bare (``int``, ``list[str]``,
    ``Sequence[int]``, ``str | None``, ``Literal['a']``); other classes by module and
    qualified name (``mypkg.Msg``).

    A class defined in the running script is named by the module that script would be
    when imported (:func:`main_module_name`), never ``__main__``: these names go into the
    ids of inserted converter nodes, so a workflow started with ``python app.py`` has the
    topology signature it has when ``plait resume app.py:workflow`` imports ``app``.
    """
    if tp is None or tp is NONE_TYPE:
        return "None"
    if tp is Ellipsis:
        return "..."
    if tp in ANY_FORMS:
        return "Any"
    if tp in NEVER_FORMS:
        return "Never"
    if isinstance(tp, typing.ForwardRef):
        tp = tp.__forward_arg__
    if isinstance(tp, str):
        return tp
    if isinstance(tp, (list, tuple)):
        return "[" + ", ".join(map(type_name, tp)) + "]"
    if isinstance(tp, TypeVar) or is_newtype(tp):
        return str(tp.__name__)
    origin = tx.get_origin(tp)
    args = tx.get_args(tp)
    if origin in ANNOTATED_ORIGINS:
        return type_name(args[0])
    if origin in UNION_ORIGINS:
        return " | ".join(map(type_name, args))
    if origin in LITERAL_ORIGINS:
        return "Literal[" + ", ".join(map(repr, args)) + "]"
    if origin is not None:
        if origin is tuple and args in ((), ((),)):
            return "tuple[()]"
        return f"{type_name(origin)}[{', '.join(map(type_name, args))}]"
    if isinstance(tp, type):
        module = tp.__module__
        if module in SHORT_MODULES:
            return tp.__qualname__
        if module == "__main__":
            module = main_module_name()
        return f"{module}.{tp.__qualname__}"
    return repr(tp).replace("typing_extensions.", "").replace("typing.", "")


def main_module_name() -> str:
    """The name module ``__main__`` has when imported rather than run.

    Run with ``python -m pkg.app``, that is ``pkg.app`` (its spec's name). Run as
    ``python path/to/app.py``, it is the file's stem, prefixed by the packages above it
    (each folder holding an ``__init__.py``): the name ``plait run path/to/app.py:attr``
    imports it under. Without a file (``python -c``, a REPL, a notebook) it stays
    ``__main__``.

    The module's name, not just the class's, because a short name alone would let two
    scripts' ``Msg`` classes share a converter node id.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    file = getattr(main, "__file__", None)
    return _importable_name(getattr(spec, "name", None), file if isinstance(file, str) else None)


@functools.lru_cache(maxsize=8)
def _importable_name(spec_name: str | None, file: str | None) -> str:
    if spec_name and spec_name != "__main__":
        return spec_name
    if not file:
        return "__main__"
    # os.path, not pathlib: a cold start that names its script's classes skips pathlib
    path = os.path.realpath(file)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    folder = os.path.dirname(path)
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return ".".join(parts) or "__main__"


# --------------------------------------------------------------------------- run time


def is_instance(value: Any, tp: Any) -> bool:
    """Return True when the run-time *value* fits the type hint *tp*.

    Containers are checked element by element (keys and values for mappings) in a single
    pass; iterators and generators are never consumed. ``Literal`` compares by type and
    value; a ``TypedDict`` needs a mapping with its required keys and fitting values; a
    ``Protocol`` uses ``isinstance`` when runtime-checkable and a structural check
    otherwise; a class fits ``type[X]`` when it is ``X`` or a subclass of it.
    """
    return _fits(value, normalize(tp))


def _fits(value: Any, tp: Any) -> bool:
    if tp is Any or tp is object:
        return True
    if tp is Never:
        return False
    members = union_members(tp)
    if members is not None:
        return any(_fits(value, normalize(m)) for m in members)
    if is_literal(tp):
        return any(type(value) is type(v) and value == v for v in tx.get_args(tp))
    if is_newtype(tp):
        return is_instance(value, tp.__supertype__)
    if tx.is_typeddict(tp):
        return _fits_typeddict(value, tp)
    origin, args = split(tp)
    if is_protocol(origin):
        if getattr(origin, "_is_runtime_protocol", False):
            return isinstance(value, origin)
        return all(hasattr(value, name) for name in tx.get_protocol_members(origin))
    if not isinstance(origin, type) or not isinstance(value, origin):
        return False
    return args is None or _fits_args(value, origin, args)


def _fits_typeddict(value: Any, tp: Any) -> bool:
    if not isinstance(value, cabc.Mapping):
        return False
    hints, required = typeddict_fields(tp)
    return required.issubset(value.keys()) and all(
        key not in value or is_instance(value[key], hint) for key, hint in hints.items()
    )


def _fits_args(value: Any, origin: Any, args: tuple[Any, ...]) -> bool:
    if origin is tuple:
        elems, variadic = tuple_shape(args)
        if variadic:
            return _all_fit(value, normalize(elems[0]))
        return len(value) == len(elems) and all(map(is_instance, value, elems))
    if origin is type:
        return isinstance(value, type) and _subclass_fits(value, normalize(args[0]))
    if origin.__module__ not in ("builtins", "collections", "collections.abc"):
        return True  # a user generic: its parameters say nothing checkable about the value
    if len(args) == 2 and isinstance(value, cabc.Mapping):
        key_type, value_type = normalize(args[0]), normalize(args[1])
        return all(_fits(k, key_type) and _fits(v, value_type) for k, v in value.items())
    if len(args) == 1 and isinstance(value, cabc.Collection):
        return _all_fit(value, normalize(args[0]))
    return True  # iterators, awaitables, callables: checking would consume or call them


def _all_fit(items: cabc.Iterable[Any], tp: Any) -> bool:
    """Whether every one of ``items`` fits ``tp`` (normalized), in one pass: when an
    item's type alone decides (:func:`is_class_decidable`: ``int`` in ``list[int]``),
    one item of each type is checked, as a fan-in's list of a thousand ints has one."""
    if tp is Any:
        return True
    if is_class_decidable(tp):
        one_of_each = {type(item): item for item in items}
        return all(_fits(item, tp) for item in one_of_each.values())
    return all(_fits(item, tp) for item in items)


def _subclass_fits(cls: type, tp: Any) -> bool:
    """Whether the class *cls* (a value declared ``type[tp]``) is *tp* or a subclass of it.

    A ``Protocol`` that refuses ``issubclass`` is checked by member names, a ``TypedDict``
    by its keys (a TypedDict class with at least *tp*'s keys); ``Literal`` and ``NewType``
    are no class's superclass.
    """
    if tp is Any or tp is object:
        return True
    if tp is Never or is_literal(tp) or is_newtype(tp):
        return False
    members = union_members(tp)
    if members is not None:
        return any(_subclass_fits(cls, normalize(m)) for m in members)
    if tx.is_typeddict(tp):
        keys = typeddict_fields(tp)[0].keys()
        return tx.is_typeddict(cls) and keys <= typeddict_fields(cls)[0].keys()
    origin, _ = split(tp)
    if not isinstance(origin, type):
        return False
    try:
        return issubclass(cls, origin)
    except TypeError:  # a protocol that is not runtime-checkable, or has data members
        return is_protocol(origin) and _has_members(cls, origin)


def _has_members(cls: type, protocol: Any) -> bool:
    """Whether class *cls* has (or declares: annotations, attrs fields) every member of
    *protocol*, by name."""
    declared: set[str] = set()
    for klass in cls.__mro__:
        declared.update(getattr(klass, "__annotations__", {}))
        declared.update(a.name for a in getattr(klass, "__attrs_attrs__", ()))
    return all(hasattr(cls, name) or name in declared for name in tx.get_protocol_members(protocol))


def is_class_decidable(tp: Any) -> bool:
    """Return True when ``is_instance(v, tp)`` depends only on ``type(v)``.

    True for plain classes, ``Any``, ``object``, ``None``, ``Never``, ``NewType`` of such a
    class, and unions of these; False for parametrised generics, ``Literal``,
    ``TypedDict`` and ``Protocol``. The runner may cache dispatch by ``type(value)`` when
    this is True.
    """
    tp = normalize(tp)
    if tp is Any or tp is Never:
        return True
    members = union_members(tp)
    if members is not None:
        return all(map(is_class_decidable, members))
    if is_newtype(tp):
        return is_class_decidable(tp.__supertype__)
    if tx.get_origin(tp) is not None:  # parametrised (list[int] passes as a class on 3.10)
        return False
    return isinstance(tp, type) and not is_protocol(tp) and not tx.is_typeddict(tp)
