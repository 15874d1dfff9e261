"""The compiled graph: routing tables derived once from a workflow, shared by its runs.

The runner and the checkpointer depend on this module, never on :mod:`plait._workflow`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._errors import RunOptionError
from ._executor import Executor, Handler
from ._options import Policy, RetryPolicy
from ._spec import WorkflowSpec

if TYPE_CHECKING:
    # annotations only: the runner imports asyncio, which building a graph never needs
    from ._options import RunOptions
    from ._routing import EdgeRunner

__all__ = [
    "ERROR_ROUTER",
    "CompiledGraph",
    "Invocable",
    "Limits",
    "Registries",
    "reach_masks",
    "resolve_limits",
]

T = TypeVar("T")

#: The router name of error edges: ``A -error-> fallback``. The runner delivers an
#: :class:`~plait.InvocationFailure` along them when A fails after its retries.
ERROR_ROUTER = "error"


class Registries(Protocol):
    """Where a compiled graph finds what plugins registered (a
    :class:`plait.spi.PluginManager`): converters for the codec, placements, schedules."""

    def registry(self, kind: str) -> Any: ...


class Invocable(Protocol):
    """What a run calls for an executor id: the executor, or what stands for it when its
    invocations run elsewhere (:class:`plait._workflow.PlacedExecutor`)."""

    @property
    def input_types(self) -> tuple[Any, ...]: ...

    def find_handler(self, message: Any) -> Handler | None: ...


class CompiledGraph:
    """Routing tables derived once from a workflow, shared by its runs."""

    def __init__(
        self,
        spec: WorkflowSpec,
        executors: Mapping[str, Executor],
        edge_runners: Mapping[str, EdgeRunner],
        plugin_manager: Registries,
    ) -> None:
        self.spec = spec
        self.executors = dict(executors)
        #: executor id -> its placement, for executors whose invocations run elsewhere than
        #: on the driver (resolved when the workflow compiles: :func:`plait._workflow.place`)
        self.placements: dict[str, Any] = {}
        #: what runs call per executor id: the executors, a placed one standing behind
        #: its placement (the same mapping as :attr:`executors` when nothing is placed)
        self.run_executors: Mapping[str, Invocable] = self.executors
        self.edge_runners = dict(edge_runners)
        routes: dict[str, list[tuple[str, EdgeRunner]]] = {}
        errors: dict[str, list[str]] = {}
        for group in spec.edge_groups:
            if group.router == ERROR_ROUTER:
                # not a route for messages: where a source's failures go instead of failing
                for source in group.sources:
                    errors.setdefault(source, []).extend(group.targets)
                continue
            for source in group.sources:
                routes.setdefault(source, []).append((group.id, self.edge_runners[group.id]))
        #: executor id -> the executors its failures are delivered to (error edges)
        self.error_targets = {k: tuple(v) for k, v in errors.items()}
        self.routes_from = {k: tuple(v) for k, v in routes.items()}
        #: executor id -> the one target every message it sends goes to (its only edge
        #: group passes every message on: :attr:`EdgeRunner.passthrough`), known here
        self.passthrough = {
            source: runners[0][1].passthrough
            for source, runners in self.routes_from.items()
            if len(runners) == 1 and runners[0][1].passthrough is not None
        }
        self.flushers = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.needs_flush
        )
        self.stateful = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.stateful
        )
        self.plugin_manager = plugin_manager
        #: executor id -> its rank: the declaration order of the spec's nodes, the order
        #: a superstep's effects are committed in (never the order handlers finish in)
        self.rank = {node.id: i for i, node in enumerate(spec.nodes)}
        #: executors marked ``order="arrival"`` (the node's setting, else the executor's):
        #: they take their messages as they arrive (in ``plait-pipeline``'s schedule)
        self.arrival = frozenset(
            node.id
            for node in spec.nodes
            if _first(node.order, getattr(self.executors[node.id], "order", None)) == "arrival"
        )
        #: the limits of a run that sets no per-executor run option (see resolve_limits)
        self.limits = resolve_limits(self)
        #: key -> (the registry the value was derived with, or None; the value): what
        #: :meth:`cached` keeps
        self._cache: dict[Hashable, tuple[Any, Any]] = {}

    def cached(
        self,
        key: Hashable,
        compute: Callable[[CompiledGraph], T],
        *,
        registry: str | None = None,
    ) -> T:
        """A value derived from this graph, computed once per graph: the per-graph cache
        plugins keep what they derive from a compiled workflow in (its fingerprint, the
        types its checkpoints may decode, the node specs a placement ships), instead of a
        table of their own or an attribute written onto the graph.

        The value lives as long as the graph. One derived with what plugins registered is
        computed again when the registry it reads changes (a plugin registered or removed
        since): name that registry's kind as ``registry``; the cache holds the value
        together with the registry object it was computed with, and drops it when the
        graph's plugin manager gives another.

        :param key: names the value; a plugin's key starts with its own import name
            (``("plait_durable", "declared_types")``), so plugins never share one.
        :param compute: makes the value from the graph, on first use (and after the named
            registry changed). It runs without a lock: two concurrent first uses may both
            compute, and one result is kept.
        :param registry: the kind of the registry the value depends on (``"converter"``),
            if any.
        """
        current = None if registry is None else self.plugin_manager.registry(registry)
        found = self._cache.get(key)
        if found is not None and found[0] is current:
            value: T = found[1]
            return value
        value = compute(self)
        self._cache[key] = (current, value)
        return value

    @functools.cached_property
    def topology(self) -> dict[str, Any]:
        """The spec's topology (what a run's first checkpoint records), computed once."""
        return self.spec.topology()

    @functools.cached_property
    def signature(self) -> str:
        """The spec's topology signature, computed once."""
        return self.spec.signature()

    @functools.cached_property
    def reach(self) -> dict[str, int]:
        """Executor id -> every executor reachable from it (itself included), as a bit
        mask: the executor of rank ``i`` is bit ``i`` (see :func:`reach_masks`)."""
        return reach_masks(self.spec.node_ids, self.spec.successors())

    def reaching(self, sources: Iterable[str]) -> Callable[[str], bool]:
        """A test of whether an executor is reachable from one of ``sources`` (each
        reaches itself): what a fan-in's flush asks of the executors still active."""
        masks, mask = self.reach, 0
        for source in sources:
            mask |= masks[source]
        rank = self.rank
        return lambda executor_id: bool(mask >> rank[executor_id] & 1)


class Limits:
    """The limits of one run, resolved once by :func:`resolve_limits`.

    :param concurrency: executor id -> how many of its messages of one superstep may run
        at once (only executors allowing more than one).
    :param visits: executor id -> how many supersteps it may run in (only bounded ones).
    :param policies: executor id -> ``(retry policy, timeout)`` (only executors with
        either, or whose failures an error edge takes: their attempts are transactional).
    """

    __slots__ = ("concurrency", "policies", "visits")

    def __init__(
        self,
        concurrency: dict[str, int],
        visits: dict[str, int],
        policies: dict[str, Policy],
    ) -> None:
        self.concurrency = concurrency
        self.visits = visits
        self.policies = policies

    def __repr__(self) -> str:
        return (
            f"Limits(concurrency={self.concurrency!r}, visits={self.visits!r}, "
            f"policies={sorted(self.policies)!r})"
        )


def resolve_limits(graph: CompiledGraph, options: RunOptions | None = None) -> Limits:
    """Every per-executor limit of a run — concurrency, visits, timeout, retries — in one
    place, with one precedence: **run option, then node, then workflow**.

    - the run option for that executor (``executor_concurrency[id]``,
      ``executor_max_visits[id]``);
    - the node's own setting (``NodeSpec`` field, else the executor object's attribute:
      ``max_concurrency``, ``max_visits``, ``retry``, ``timeout``);
    - the workflow-wide default (the ``max_visits`` run option or workflow default,
      ``WorkflowSpec.retry``, ``WorkflowSpec.timeout``); concurrency defaults to 1.

    :raises RunOptionError: a per-executor run option names an executor the graph lacks.
    """
    spec, executors = graph.spec, graph.executors
    run_concurrency: Mapping[str, int] = {}
    run_visits: Mapping[str, int] = {}
    default_visits: int | None = None
    if options is not None:
        run_concurrency = options.executor_concurrency
        run_visits = options.executor_max_visits
        default_visits = options.max_visits
        for eid in (*run_concurrency, *run_visits):
            if eid not in executors:
                raise RunOptionError(f"run option names unknown executor {eid!r}")
    concurrency: dict[str, int] = {}
    visits: dict[str, int] = {}
    policies: dict[str, Policy] = {}
    for node in spec.nodes:
        eid = node.id
        ex = executors[eid]
        n = _first(run_concurrency.get(eid), node.max_concurrency, ex.max_concurrency)
        if n is not None and n > 1:
            concurrency[eid] = n
        limit = _first(run_visits.get(eid), node.max_visits, ex.max_visits, default_visits)
        if limit is not None:
            visits[eid] = limit
        retry: Any = _first(node.retry, getattr(ex, "retry", None), spec.retry)
        timeout = _first(node.timeout, getattr(ex, "timeout", None), spec.timeout)
        if retry is not None and not isinstance(retry, RetryPolicy):
            retry = RetryPolicy.from_dict(retry)
        if retry is not None or timeout is not None:
            policies[eid] = (retry, float(timeout) if timeout is not None else None)
        elif eid in graph.error_targets:
            # an invocation whose failure an error edge takes is transactional too: what
            # it sent or yielded before failing is dropped
            policies[eid] = (None, None)
    return Limits(concurrency, visits, policies)


def reach_masks(nodes: Sequence[str], successors: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Node -> the bit mask of every node reachable from it, itself included (bit ``i``:
    ``nodes[i]``), in one depth-first pass that looks at each node's successors twice:
    Tarjan's strongly connected components, which are found sinks first, so that a
    component's mask — shared by its members — is their bits and the masks of the
    components they lead to, all complete by then.
    """
    bit = {node: 1 << i for i, node in enumerate(nodes)}
    order: dict[str, int] = {}  # node -> when the search found it
    low: dict[str, int] = {}  # node -> the earliest node on the stack it leads back to
    stack: list[str] = []  # found nodes whose component is not complete yet
    masks: dict[str, int] = {}
    for root in nodes:
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack.append(root)
        path = [(root, iter(successors.get(root, ())))]
        while path:
            node, pending = path[-1]
            for child in pending:
                if child not in order:  # deeper first; the node's other successors wait
                    order[child] = low[child] = len(order)
                    stack.append(child)
                    path.append((child, iter(successors.get(child, ()))))
                    break
                if child not in masks:  # on the stack: the node leads back to it
                    low[node] = min(low[node], order[child])
            else:
                path.pop()
                if path:
                    parent = path[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:  # the node heads a component: complete it
                    members: list[str] = []
                    mask = 0
                    while not members or members[-1] != node:
                        members.append(stack.pop())
                        mask |= bit[members[-1]]
                    for member in members:
                        for child in successors.get(member, ()):
                            mask |= masks.get(child, 0)  # (0: a member, its bit is in)
                    for member in members:
                        masks[member] = mask
    return masks


def _first(a: Any, b: Any, c: Any = None, d: Any = None) -> Any:
    """The first of the values that is set (not ``None``). Four at most, as parameters
    rather than ``*values``: resolving limits asks it four times per executor."""
    if a is not None:
        return a
    if b is not None:
        return b
    if c is not None:
        return c
    return d
