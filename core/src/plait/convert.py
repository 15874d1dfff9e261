"""Converters between message types, and the search for the cheapest chain of them.

A :class:`Converter` is a named function from one message type to another, marked
``lossless`` (nothing the value says is lost: a partial converter raises rather than
guesses) or lossy, with a ``cost``. Plugins register converters through
``plait_register_converters``; scripts use :func:`converter`. Where an edge's types differ,
the builder asks :class:`ConverterGraph` for the cheapest chain (Dijkstra; lossless steps
only unless lossy ones are allowed; ties broken by the names along the chain, so every
build picks the same one) and inserts a node per :class:`Step`.

A :class:`TypeFamily` stands for many types (every attrs class, say). A :class:`CattrsHooks`
registered under the same hook teaches :func:`message_converter` a plugin's own type.

Two rules keep chains honest. A converter's output that is a ``NewType`` (``JsonText``)
counts only as that ``NewType``, never as its supertype, so encoding converters are chosen
only where a target asks for them. A chain holds at most one generic (``TypeFamily``)
step, so ``record -> dict -> other record`` never reinterprets one class as another.

.. versionadded:: 0.1
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import typing
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import cattrs
from cattrs.preconf.json import make_converter

from .errors import PluginConflictError
from .hookspecs import Register, hookimpl
from .plugins import PluginManager, Registry, get_plugin_manager
from .types import is_assignable, normalize, type_name

__all__ = [
    "CattrsHooks",
    "Chain",
    "Converter",
    "ConverterGraph",
    "LossyConversion",
    "Step",
    "TypeFamily",
    "converter",
    "converter_graph",
    "message_converter",
]

_MAX_STEPS = 8  # no sane chain is longer; bounds the search on odd registries


def _not_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        raise TypeError(f"'{attribute.name}' must be a type or a TypeFamily, got None")


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"'{attribute.name}' must be a non-empty str, got {value!r}")


def _is_cost(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not _is_cost(value):
        raise ValueError(f"'{attribute.name}' must be a positive number, got {value!r}")


def _identity(value: Any) -> Any:
    return value


@attrs.frozen
class TypeFamily:
    """Many types at once, given by a predicate: a converter's source or target.

    As a source, the converter applies to every type ``contains(tp)`` accepts; its ``fn``
    is called as ``fn(value)``. As a target, it is bound to the type the edge's target
    declares (when ``contains`` accepts it) and ``fn`` is called as ``fn(value, type)``.

    .. versionadded:: 0.1
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

    .. versionadded:: 0.1
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

    .. versionadded:: 0.1
    """

    type: Any = attrs.field(validator=_not_none)
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


@attrs.frozen
class Step:
    """One converter bound to concrete types: a node of an inserted chain."""

    name: str
    converter: Any
    source: Any
    target: Any
    lossless: bool
    cost: float
    distribution: str = "(in-process)"
    bound: bool = False  # the converter's target is a family: fn(value, target)

    @property
    def node_id(self) -> str:
        """``convert:<from>-><to>:<name>``, the id of the node that runs it."""
        return f"convert:{type_name(self.source)}->{type_name(self.target)}:{self.name}"

    def function(self) -> Callable[[Any], Any]:
        """The one-argument function the node calls."""
        fn: Callable[..., Any] = self.converter.fn
        if not self.bound:
            return fn
        target = self.target
        return lambda value: fn(value, target)

    def __str__(self) -> str:
        kind = "lossless" if self.lossless else "lossy"
        where = f", {self.distribution}" if self.distribution else ""
        return f"{self.name} ({type_name(self.source)} -> {type_name(self.target)}, {kind}{where})"


@attrs.frozen
class Chain:
    """The steps that turn ``source`` into a type the target accepts (maybe none)."""

    source: Any
    steps: tuple[Step, ...]
    cost: float = 0

    @property
    def lossless(self) -> bool:
        """True when no step is lossy."""
        return all(s.lossless for s in self.steps)

    @property
    def lossy_steps(self) -> tuple[Step, ...]:
        """The steps that lose information."""
        return tuple(s for s in self.steps if not s.lossless)

    def __str__(self) -> str:
        return " -> ".join(s.name for s in self.steps) or "(no conversion)"


@attrs.frozen
class LossyConversion:
    """The data of the :class:`~plait.events.CustomEvent` a lossy converter node adds."""

    node: str
    converter: str
    source: str
    target: str


# --------------------------------------------------------------------------- the graph


@attrs.frozen
class _Edge:
    name: str
    obj: Any
    distribution: str
    source: Any
    target: Any
    lossless: bool
    cost: float

    @property
    def family_source(self) -> bool:
        return isinstance(self.source, TypeFamily)

    @property
    def generic(self) -> bool:
        return self.family_source or isinstance(self.target, TypeFamily)

    def step(self, source: Any, target: Any) -> Step:
        bound = isinstance(self.target, TypeFamily)
        return Step(
            self.name, self.obj, source, target, self.lossless, self.cost, self.distribution, bound
        )


def _cost(obj: Any) -> float:
    # the search needs positive weights; a duck-typed converter with an odd cost counts 1
    cost = getattr(obj, "cost", 1)
    return float(cost) if _is_cost(cost) else 1.0


def _key(tp: Any) -> Any:
    try:
        hash(tp)
    except TypeError:
        return ("unhashable", type_name(tp))
    return tp


def _is_newtype(tp: Any) -> bool:
    return callable(tp) and hasattr(tp, "__supertype__") and not isinstance(tp, type)


def _reaches(tp: Any, wanted: Any, produced: bool) -> bool:
    """Whether ``tp`` may go where ``wanted`` is declared (produced NewTypes stay themselves)."""
    if not produced or not _is_newtype(tp):
        return is_assignable(tp, wanted)
    wanted = normalize(wanted)
    members = typing.get_args(wanted) if typing.get_origin(wanted) is typing.Union else (wanted,)
    return any(m is tp or m is Any or m is object for m in members)


class ConverterGraph:
    """Every registered converter, and a cached cheapest-chain search over them.

    :param converters: ``(name, converter, distribution)`` triples; :class:`CattrsHooks`
        are skipped. Use :func:`converter_graph` for the one of a plugin manager.

    .. versionadded:: 0.1
    """

    def __init__(self, converters: Iterable[tuple[str, Any, str]]) -> None:
        self.edges = tuple(
            _Edge(name, obj, dist, obj.source, obj.target, obj.lossless is True, _cost(obj))
            for name, obj, dist in sorted(converters, key=lambda c: c[0])
            if not isinstance(obj, CattrsHooks)
        )
        self._cache: dict[tuple[Any, Any, bool], Chain | None] = {}

    @classmethod
    def from_registry(cls, registry: Registry[Any]) -> ConverterGraph:
        """The graph of a plugin manager's ``converter`` registry."""
        return cls((r.name, r.obj, r.distribution) for r in registry.values())

    def find_chain(self, source: Any, target: Any, *, allow_lossy: bool = False) -> Chain | None:
        """The cheapest chain from ``source`` to ``target``, or None.

        :param target: the type wanted, or a tuple of acceptable types (an executor's
            ``input_types``); the chain ends at the first type assignable to one of them.
        :param allow_lossy: let lossy converters take part.
        :return: an empty chain when ``source`` already fits. Among chains of equal cost
            the one whose converter names sort first wins. Results are cached.
        """
        goals = target if isinstance(target, tuple) else (target,)
        key = (_key(source), tuple(map(_key, goals)), allow_lossy)
        if key not in self._cache:
            self._cache[key] = self._search(source, goals, allow_lossy)
        return self._cache[key]

    def _search(self, source: Any, goals: tuple[Any, ...], allow_lossy: bool) -> Chain | None:
        order = itertools.count()
        # (cost, names, push order, type, produced, generic, steps): cost then names decide
        # ties; the push order is deterministic and keeps types from ever being compared
        heap: list[tuple[float, tuple[str, ...], int, Any, bool, bool, tuple[Step, ...]]] = [
            (0, (), next(order), source, False, False, ())
        ]
        done: set[tuple[Any, bool]] = set()
        while heap:
            cost, names, _, tp, produced, generic, steps = heapq.heappop(heap)
            if (_key(tp), generic) in done:
                continue
            done.add((_key(tp), generic))
            if any(_reaches(tp, goal, produced) for goal in goals):
                return Chain(source, steps, cost)
            if len(steps) >= _MAX_STEPS:
                continue
            for edge in self.edges:
                if not (allow_lossy or edge.lossless) or (generic and edge.generic):
                    continue  # two generic steps would turn one record into another
                for nxt in self._next_types(edge, tp, produced, goals):
                    step = edge.step(tp if edge.family_source else edge.source, nxt)
                    entry = (cost + edge.cost, (*names, edge.name), next(order), nxt, True)
                    heapq.heappush(heap, (*entry, generic or edge.generic, (*steps, step)))
        return None

    @staticmethod
    def _next_types(edge: _Edge, tp: Any, produced: bool, goals: tuple[Any, ...]) -> list[Any]:
        if isinstance(edge.source, TypeFamily):
            if tp not in edge.source:
                return []
        elif not _reaches(tp, edge.source, produced):
            return []
        if isinstance(edge.target, TypeFamily):
            return [g for g in goals if g in edge.target]
        return [edge.target]

    def nearest(self, source: Any, target: Any, *, limit: int = 6) -> list[Step]:
        """Converters that touch either end: from or to ``source`` or ``target``.

        What an error message lists when no chain connects the two, sorted by name.
        """
        ends = (source, *(target if isinstance(target, tuple) else (target,)))
        found: list[Step] = []
        for edge in self.edges:
            if any(self._touches(edge, end) for end in ends):
                src = edge.source if not isinstance(edge.source, TypeFamily) else str(edge.source)
                tgt = edge.target if not isinstance(edge.target, TypeFamily) else str(edge.target)
                found.append(edge.step(src, tgt))
        return found[:limit]

    @staticmethod
    def _touches(edge: _Edge, end: Any) -> bool:
        if isinstance(edge.source, TypeFamily):
            from_end = end in edge.source
        else:
            from_end = is_assignable(end, edge.source)
        if isinstance(edge.target, TypeFamily):
            return from_end or end in edge.target
        return from_end or is_assignable(edge.target, end)


_GRAPHS: weakref.WeakKeyDictionary[Registry[Any], ConverterGraph] = weakref.WeakKeyDictionary()
_CATTRS: weakref.WeakKeyDictionary[Registry[Any], cattrs.Converter] = weakref.WeakKeyDictionary()


def converter_graph(manager: PluginManager | None = None) -> ConverterGraph:
    """The converter graph of ``manager`` (default: the process-wide one).

    It is made once per registry version: registering or removing a plugin rebuilds the
    registry, and with it the graph and its search cache.

    .. versionadded:: 0.1
    """
    registry = (manager or get_plugin_manager()).registry("converter")
    graph = _GRAPHS.get(registry)
    if graph is None:
        graph = _GRAPHS[registry] = ConverterGraph.from_registry(registry)
    return graph


def message_converter(manager: PluginManager | None = None) -> cattrs.Converter:
    """The kernel's cattrs converter for messages, with every registered :class:`CattrsHooks`.

    JSON-ready (cattrs' JSON preconf: datetimes as ISO text, bytes as base85) and strict
    (unknown keys are an error). One per registry version of ``manager`` (default: the
    process-wide one); treat it as read-only and register hooks instead.

    .. versionadded:: 0.1
    """
    registry = (manager or get_plugin_manager()).registry("converter")
    found = _CATTRS.get(registry)
    if found is None:
        found = _CATTRS[registry] = make_converter(forbid_extra_keys=True)
        for reg in registry.values():
            hooks = reg.obj
            if isinstance(hooks, CattrsHooks):
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

    .. versionadded:: 0.1
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
        existing = manager.pm.get_plugin(plugin_name)
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
