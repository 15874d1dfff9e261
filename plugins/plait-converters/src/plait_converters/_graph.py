"""The converter graph: the search for the cheapest chain of converters between two types.

Where an edge's types differ, the workflow builder asks :func:`find_chain`, which searches
the :class:`ConverterGraph` of the plugin manager's converter registry (one graph per
registry version). The graph runs Dijkstra over the registered converters: lossless steps
only unless lossy ones are allowed; ties broken by the names along the chain, so every
build picks the same one. A :class:`TypeFamily` stands for many types (every
attrs class, say).

Two rules keep chains honest. A converter's output that is a ``NewType`` (``JsonText``)
counts only as that ``NewType``, never as its supertype, so encoding converters are chosen
only where a target asks for them. A chain holds at most one generic (``TypeFamily``)
step, so ``record -> dict -> other record`` never reinterprets one class as another.

What a chain is (:class:`~plait_converters.Chain`, :class:`~plait_converters.Step`) lives
in ``_chain``: the builder turns the steps into nodes. This module is imported when an
edge first needs a conversion, never when plugins load.
"""

from __future__ import annotations

import heapq
import itertools
import typing
import weakref
from collections.abc import Iterable
from typing import Any

import attrs
import plait
from plait.spi import PluginManager, Registry, is_newtype, normalize, type_name

from ._assignable import is_assignable
from ._chain import Chain, Step
from ._define import TypeFamily

__all__ = ["ConverterGraph", "converter_graph", "find_chain", "nearest_converters"]

_MAX_STEPS = 8  # no sane chain is longer; bounds the search on odd registries


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
    positive = isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0
    return float(cost) if positive else 1.0


def _key(tp: Any) -> Any:
    try:
        hash(tp)
    except TypeError:
        return ("unhashable", type_name(tp))
    return tp


def _reaches(tp: Any, wanted: Any, produced: bool) -> bool:
    """Whether ``tp`` may go where ``wanted`` is declared (produced NewTypes stay themselves)."""
    if not produced or not is_newtype(tp):
        return is_assignable(tp, wanted)
    wanted = normalize(wanted)
    members = typing.get_args(wanted) if typing.get_origin(wanted) is typing.Union else (wanted,)
    return any(m is tp or m is Any or m is object for m in members)


class ConverterGraph:
    """Every registered converter, and a cached cheapest-chain search over them.

    :param converters: ``(name, converter, distribution)`` triples. Use
        :func:`converter_graph` for the one of a plugin manager.
    """

    def __init__(self, converters: Iterable[tuple[str, Any, str]]) -> None:
        self.edges = tuple(
            _Edge(name, obj, dist, obj.source, obj.target, obj.lossless is True, _cost(obj))
            for name, obj, dist in sorted(converters, key=lambda c: c[0])
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


def _graph_of(converters: Registry[Any]) -> ConverterGraph:
    graph = _GRAPHS.get(converters)
    if graph is None:
        graph = _GRAPHS[converters] = ConverterGraph.from_registry(converters)
    return graph


def converter_graph(manager: PluginManager | None = None) -> ConverterGraph:
    """The converter graph of ``manager`` (default: the process-wide one).

    It is made once per registry version: registering or removing a plugin rebuilds the
    registry, and with it the graph and its search cache.
    """
    return _graph_of((manager or plait.get_plugin_manager()).registry("converter"))


def find_chain(
    source: Any, target: Any, *, allow_lossy: bool = False, manager: PluginManager | None = None
) -> Chain | None:
    """The cheapest chain of ``manager``'s converters (default: the process-wide plugin
    manager's) from ``source`` to ``target``; None when no chain connects them.

    :param target: the type wanted, or a tuple of acceptable types (an executor's
        ``input_types``); the chain ends at the first type assignable to one of them.
    :param allow_lossy: let lossy converters take part.
    :return: an empty chain when ``source`` already fits; among chains of equal cost, the
        same one on every call (a build is reproducible). See
        :meth:`ConverterGraph.find_chain`.
    """
    return converter_graph(manager).find_chain(source, target, allow_lossy=allow_lossy)


def nearest_converters(
    source: Any, target: Any, *, manager: PluginManager | None = None
) -> list[Step]:
    """The converters of ``manager`` that touch either end: what an error names when no
    chain exists (see :meth:`ConverterGraph.nearest`).
    """
    return converter_graph(manager).nearest(source, target)
