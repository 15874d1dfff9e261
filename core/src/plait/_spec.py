"""The workflow IR: frozen, serialisable records every front-end and builder produces.

A :class:`WorkflowSpec` is pure data — executor ids and kinds, edge groups with their
router names and JSON-ready options, the start executor and run defaults. It converts to
canonical JSON and back through a cattrs converter Plait owns, and has a topology
signature (a SHA-256 of its structure) that checkpoints record so a changed graph is
refused on resume.

The code a spec needs is recorded as references (import paths and expressions, below):
:func:`resolve_ref` turns one back into the object, and only imports when the caller
allows it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._errors import ConfigError, NotPortableError, SourcePosition
from ._executor import Executor, FunctionExecutor
from ._records import record_repr
from ._types import main_module_name

if TYPE_CHECKING:
    import cattrs

    #: The cattrs converter for the IR, made on first use (see ``__getattr__`` below).
    spec_converter: cattrs.Converter

__all__ = [
    "SPEC_VERSION",
    "NodeSpec",
    "EdgeGroupSpec",
    "PortSpec",
    "WorkflowSpec",
    "spec_converter",
    "NotPortableError",
    "as_executor",
    "code_ref",
    "import_ref",
    "nonportable_reason",
    "resolve_ref",
]

SPEC_VERSION = 1


def _frozen_dict(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value) if value else {}


#: what a node's ``order`` may say (``None``: the executor's own, else canonical)
ORDERS = ("canonical", "arrival")


def _check_order(_instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and value not in ORDERS:
        raise ValueError(
            f"NodeSpec.{attribute.name} must be one of {', '.join(map(repr, ORDERS))} or "
            f"None, got {value!r}"
        )


@attrs.frozen(repr=False)
class NodeSpec:
    """One executor in the graph.

    :param id: unique id within the workflow (composed fragments use ``prefix/id``).
    :param kind: executor kind name (``python`` for in-process objects).
    :param ref: an import path (``pkg.mod:attr``) when the executor can be rebuilt from data.
    :param input_types: readable names of the types its handlers accept.
    :param output_types: readable names of the message types it sends.
    :param workflow_output_types: readable names of what it yields as workflow output.
    :param config: JSON-ready configuration for its kind.
    :param uses: the name a document used for this node's executor (``researcher`` for the
        nodes ``researcher`` and ``researcher#2``); ``Workflow.from_spec(spec, executors=)``
        binds a Python executor given under that name.
    :param retry: the executor's retry policy (``RetryPolicy.to_dict()``), if any.
    :param timeout: seconds per invocation, if bounded.
    :param max_visits: how many supersteps it may run in.
    :param max_concurrency: how many of its messages of one superstep may run at once.
    :param order: ``"arrival"``: the executor takes its messages as they arrive (in the
        pipelined schedule, without waiting for the rest of its superstep's); ``None`` or
        ``"canonical"``: as one superstep's batch, in the canonical order (an executor with
        ``max_concurrency`` above 1 takes them on arrival either way).
    :param nonportable: why this node cannot be rebuilt from data (a lambda, a closure, a
        function defined in ``__main__``), or ``None`` when it can.
    :param placement: where its invocations run (a registered placement name such as
        ``ray``); ``None`` follows the workflow's :attr:`WorkflowSpec.placement`.
    """

    __repr__ = record_repr

    id: str
    kind: str = "python"
    ref: str | None = None
    input_types: tuple[str, ...] = ()
    output_types: tuple[str, ...] = ()
    workflow_output_types: tuple[str, ...] = ()
    config: dict[str, Any] = attrs.field(factory=dict, converter=_frozen_dict, hash=False)
    uses: str | None = None
    retry: dict[str, Any] | None = attrs.field(default=None, hash=False)
    timeout: float | None = None
    max_visits: int | None = None
    max_concurrency: int | None = None
    order: str | None = attrs.field(default=None, validator=_check_order)
    nonportable: str | None = None
    placement: str | None = None


@attrs.frozen(repr=False)
class EdgeGroupSpec:
    """A group of edges that one router drives.

    :param id: unique, deterministic id (``direct:a->b``, ``fan_in:a,b->c``).
    :param router: the router's registered name (``direct``, ``fan_out``, ``fan_in`` …).
    :param sources: executor ids whose messages enter the group, in declaration order.
    :param targets: executor ids the group may deliver to, in declaration order.
    :param options: JSON-ready router options (merge strategy, ``when``, callable names).
    """

    __repr__ = record_repr

    id: str
    router: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    options: dict[str, Any] = attrs.field(factory=dict, converter=_frozen_dict, hash=False)


#: the directions a port may have
PORT_DIRECTIONS = ("in", "out")


def _check_direction(_instance: Any, attribute: Any, value: Any) -> None:
    if value not in PORT_DIRECTIONS:
        raise ValueError(f"PortSpec.{attribute.name} must be 'in' or 'out', got {value!r}")


@attrs.frozen(repr=False)
class PortSpec:
    """A named extension point of a workflow: where others may connect to it or from it.

    Ports are metadata the builders declare (``ConcurrentBuilder``'s ``aggregator_out``);
    they change nothing in how the graph runs, and they are not part of its topology
    signature.

    :param name: the port's name (composed fragments use ``prefix/name``).
    :param executor: the id of the executor it stands for.
    :param direction: ``"in"`` (messages go into ``executor``) or ``"out"`` (what
        ``executor`` sends comes out).
    :param types: readable names of the types that pass through it.
    :param semantics: a free tag saying what the messages mean (``conversation``,
        ``aggregate``, ``request``, ``control`` …), or ``None``.
    """

    __repr__ = record_repr

    name: str
    executor: str
    direction: str = attrs.field(validator=_check_direction)
    types: tuple[str, ...] = ()
    semantics: str | None = None


def _port_tuple(ports: Iterable[PortSpec]) -> tuple[PortSpec, ...]:
    return tuple(ports)


def _check_workflow_version(_instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(
            f"WorkflowSpec.{attribute.name} must be a positive integer or None, got {value!r}"
        )


@attrs.frozen(repr=False)
class WorkflowSpec:
    """A whole workflow graph as data.

    :param name: the workflow's name, if any.
    :param start: id of the executor that receives the run's input.
    :param nodes: executors, in the order they were added.
    :param edge_groups: edge groups, in the order they were added.
    :param options: default run options (``max_supersteps`` …), JSON-ready.
    :param retry: the default retry policy of every executor without one of its own.
    :param timeout: the default per-invocation timeout, in seconds.
    :param placement: where invocations run unless a node says otherwise (``None`` and
        ``"local"``: anyio tasks in this process; see :class:`plait.spi.Placement`).
    :param acyclic: the graph must have no cycle (error edges included): :meth:`problems`
        reports every cycle with its path. ``False`` (the default) allows cycles, bounded
        at run time by ``max_supersteps`` and ``max_visits``. Serialised only when set.
    :param ports: the workflow's named extension points (:class:`PortSpec`), in
        declaration order; metadata, outside the topology signature.
    :param workflow_version: the version of the workflow itself (``Workflow(version=3)``,
        ``version:`` in a document), a positive integer its author raises on a deploy that
        changes what its runs hold; checkpoints record it, and migrations registered
        from version N to N+1 (``plait-versions``) carry a stored run across. ``None``
        (the default): unversioned. Not :attr:`version`, the spec's format version.
        Outside the topology signature; serialised only when set.
    """

    __repr__ = record_repr

    name: str | None
    start: str
    nodes: tuple[NodeSpec, ...]
    edge_groups: tuple[EdgeGroupSpec, ...]
    options: dict[str, Any] = attrs.field(factory=dict, converter=_frozen_dict, hash=False)
    version: int = SPEC_VERSION
    retry: dict[str, Any] | None = attrs.field(default=None, hash=False)
    timeout: float | None = None
    placement: str | None = None
    acyclic: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    ports: tuple[PortSpec, ...] = attrs.field(default=(), converter=_port_tuple, hash=False)
    workflow_version: int | None = attrs.field(default=None, validator=_check_workflow_version)

    # -- lookups ---------------------------------------------------------------

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Executor ids in declaration order."""
        return tuple(n.id for n in self.nodes)

    def node(self, node_id: str) -> NodeSpec:
        """The node with ``node_id`` (``KeyError`` naming it if absent)."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(f"no executor {node_id!r} in workflow {self.name or '(unnamed)'}")

    def successors(self) -> dict[str, set[str]]:
        """Executor id -> ids it can send to, through any edge group."""
        out: dict[str, set[str]] = {n.id: set() for n in self.nodes}
        for group in self.edge_groups:
            for source in group.sources:
                targets = out.get(source)
                if targets is None:  # not a node: reported by problems()
                    targets = out[source] = set()
                targets.update(group.targets)
        return out

    def longest_path(self) -> int | None:
        """The number of executors on the longest path through the graph (error edges
        included), or ``None`` when the graph has a cycle: without one, a run from one
        message ends within that many supersteps (plus one per answered request).
        """
        succ = self.successors()
        waiting = {node: 0 for node in succ}
        for targets in succ.values():
            for target in targets:
                waiting[target] = waiting.get(target, 0) + 1
        ready = deque(node for node, count in waiting.items() if count == 0)
        depth = dict.fromkeys(ready, 1)
        done = 0
        while ready:  # Kahn's topological order: a node left over lies on a cycle
            node = ready.popleft()
            done += 1
            for target in succ.get(node, ()):
                depth[target] = max(depth.get(target, 0), depth[node] + 1)
                waiting[target] -= 1
                if waiting[target] == 0:
                    ready.append(target)
        return max(depth.values(), default=0) if done == len(waiting) else None

    def cycles(self) -> list[list[str]]:
        """Every cycle a depth-first walk of the graph closes (error edges included),
        each as its path from the executor it returns to and back (``["a", "b", "a"]``;
        ``["a", "a"]`` for an executor sending to itself); empty for a graph without one.

        The walk starts at the start executor, then at every executor not reached yet,
        in declaration order, and follows edges in declaration order: the same graph
        gives the same cycles. Each edge that closes a cycle gives one, so every cycle of
        the graph runs through at least one reported path, in linear time (listing every
        elementary cycle instead can take exponential time).
        """
        succ: dict[str, dict[str, None]] = {n.id: {} for n in self.nodes}
        for group in self.edge_groups:
            for source in group.sources:
                succ.setdefault(source, {}).update(dict.fromkeys(group.targets))
        found: list[list[str]] = []
        done: set[str] = set()
        roots = [self.start] if self.start in succ else []
        for root in [*roots, *succ]:
            if root in done:
                continue
            path, on_path = [root], {root}
            stack = [iter(succ[root])]
            while stack:
                target = next(stack[-1], None)
                if target is None:
                    stack.pop()
                    done.add(path[-1])
                    on_path.discard(path.pop())
                elif target in on_path:
                    found.append([*path[path.index(target) :], target])
                elif target not in done and target in succ:
                    path.append(target)
                    on_path.add(target)
                    stack.append(iter(succ[target]))
        return found

    def reachable_from(self, node_id: str) -> set[str]:
        """Every executor reachable from ``node_id`` (itself included)."""
        succ = self.successors()
        seen, queue = {node_id}, deque([node_id])
        while queue:
            for nxt in succ.get(queue.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    # -- validation ------------------------------------------------------------

    def problems(self, *, routers: Iterable[str] | None = None) -> list[str]:
        """Every structural problem at once (empty when the graph is sound).

        :param routers: installed router names; unknown router names are reported with them.
        """
        problems: list[str] = []
        ids = [n.id for n in self.nodes]
        known = set(ids)
        if len(known) != len(ids):  # (counted only when some id is there twice)
            dupes = sorted(i for i, n in Counter(ids).items() if n > 1)
            problems.append(f"duplicate executor id(s): {', '.join(dupes)}")
        if not self.start:
            problems.append("no start executor (call set_start)")
        elif self.start not in known:
            problems.append(f"start executor {self.start!r} is not in the workflow")
        installed = sorted(routers) if routers is not None else None
        group_ids = [g.id for g in self.edge_groups]
        if len(set(group_ids)) != len(group_ids):
            for gid in sorted(g for g, n in Counter(group_ids).items() if n > 1):
                problems.append(f"duplicate edge group id {gid!r}")
        for group in self.edge_groups:
            sources, targets = group.sources, group.targets
            # most groups name known executors at both ends: one look each finds it
            ends_known = known.issuperset(sources) and known.issuperset(targets)
            if not (sources and targets and ends_known):
                for end, names in (("source", sources), ("target", targets)):
                    if not names:
                        problems.append(f"edge group {group.id!r} has no {end}s")
                    for name in names:
                        if name not in known:
                            problems.append(
                                f"edge group {group.id!r} has unknown {end} executor {name!r}"
                            )
            if installed is not None and group.router not in installed:
                problems.append(
                    f"edge group {group.id!r} uses unknown router {group.router!r}; "
                    f"installed: {', '.join(installed) or 'none'}"
                )
        if self.acyclic:
            for cycle in self.cycles():
                problems.append(
                    f"cycle {' -> '.join(cycle)} in a workflow declared acyclic "
                    "(acyclic=True); remove an edge of it, or allow cycles"
                )
        port_names = [p.name for p in self.ports]
        for name in sorted(n for n, count in Counter(port_names).items() if count > 1):
            problems.append(f"duplicate port name {name!r}")
        for port in self.ports:
            if port.executor not in known:
                problems.append(f"port {port.name!r} names unknown executor {port.executor!r}")
        if self.start in known:
            reached = self.reachable_from(self.start)
            unreachable = [i for i in ids if i not in reached]
            if unreachable:
                problems.append(
                    f"unreachable executor(s) from start {self.start!r}: {', '.join(unreachable)}"
                )
        return problems

    # -- serialisation -----------------------------------------------------------

    def nonportable(self) -> list[str]:
        """Every node and edge that holds code only this process has (a lambda, a
        closure …), each named with the reason; empty when the spec is fully data."""
        found = [
            f"node {node.id!r}: {node.nonportable}"
            for node in self.nodes
            if node.nonportable is not None
        ]
        for group in self.edge_groups:
            for key, value in _code_values(group.options):
                found.append(
                    f"edge group {group.id!r} {key} {value['ref']}: {value['nonportable']}"
                )
        return found

    def check_portable(self) -> None:
        """Raise :class:`~plait.NotPortableError` naming every node and edge that
        cannot leave this process."""
        found = self.nonportable()
        if found:
            from ._errors import NotPortableError

            raise NotPortableError(
                f"workflow {self.name or '(unnamed)'} cannot be serialised as data: "
                + "; ".join(found)
                + " (use module-level functions, executor kinds or expressions)"
            )

    def to_dict(self, *, portable: bool = True) -> dict[str, Any]:
        """JSON-ready dict (cattrs unstructure).

        :param portable: refuse (:class:`~plait.NotPortableError`) a spec holding code
            only this process has; ``False`` dumps it anyway (for display).
        """
        if portable:
            self.check_portable()
        data: dict[str, Any] = _spec_converter().unstructure(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowSpec:
        """Rebuild from :meth:`to_dict` output; cattrs errors carry the path of a bad field."""
        return _spec_converter().structure(dict(data), cls)

    def to_json(self, *, indent: int | None = None, portable: bool = True) -> str:
        """Canonical JSON (sorted keys); see :meth:`to_dict` for ``portable``."""
        return json.dumps(
            self.to_dict(portable=portable), sort_keys=True, indent=indent, ensure_ascii=False
        )

    @classmethod
    def from_json(cls, text: str) -> WorkflowSpec:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def topology(self) -> dict[str, Any]:
        """The parts of the spec that checkpoints depend on (no names, no run options)."""
        return {
            "start": self.start,
            "nodes": sorted([n.id, n.kind] for n in self.nodes),
            "edge_groups": sorted(
                [g.id, g.router, list(g.sources), list(g.targets), _canonical(g.options)]
                for g in self.edge_groups
            ),
        }

    def signature(self) -> str:
        """SHA-256 (hex) of :meth:`topology`: equal for equal graphs, built in any order."""
        text = json.dumps(self.topology(), sort_keys=True, separators=(",", ":"))
        import hashlib  # on first use: OpenSSL costs a cold start more than a signature

        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def diff(self, other: WorkflowSpec) -> list[str]:
        """Human-readable differences in topology between ``self`` (old) and ``other`` (new)."""
        changes: list[str] = []
        old_nodes, new_nodes = set(self.node_ids), set(other.node_ids)
        if added := sorted(new_nodes - old_nodes):
            changes.append(f"executors added: {', '.join(added)}")
        if removed := sorted(old_nodes - new_nodes):
            changes.append(f"executors removed: {', '.join(removed)}")
        old_kinds = {n.id: n.kind for n in self.nodes}
        for n in other.nodes:
            if n.id in old_kinds and old_kinds[n.id] != n.kind:
                changes.append(f"executor {n.id!r} kind changed: {old_kinds[n.id]} -> {n.kind}")
        old_groups = {g.id: g for g in self.edge_groups}
        new_groups = {g.id: g for g in other.edge_groups}
        if added := sorted(set(new_groups) - set(old_groups)):
            changes.append(f"edges added: {', '.join(added)}")
        if removed := sorted(set(old_groups) - set(new_groups)):
            changes.append(f"edges removed: {', '.join(removed)}")
        for gid in sorted(set(old_groups) & set(new_groups)):
            a, b = old_groups[gid], new_groups[gid]
            if (a.router, a.sources, a.targets, _canonical(a.options)) != (
                b.router,
                b.sources,
                b.targets,
                _canonical(b.options),
            ):
                changes.append(f"edge group {gid!r} changed")
        if self.start != other.start:
            changes.append(f"start changed: {self.start} -> {other.start}")
        return changes


def _code_values(options: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(option path, value)`` of every recorded non-portable callable in ``options``."""
    found: list[tuple[str, Any]] = []
    for key, value in options.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if "ref" in value and value.get("nonportable"):
                found.append((name, value))
            else:
                found.extend(_code_values(value, f"{name}."))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    found.extend(_code_values({f"{key}[{i}]": item}, prefix))
    return found


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@functools.cache
def _spec_converter() -> cattrs.Converter:
    # Made on first use: importing cattrs costs a cold start more than the kernel does.
    import cattrs
    from cattrs.gen import make_dict_unstructure_fn, override

    converter = cattrs.Converter(forbid_extra_keys=True)
    # tuples travel as JSON lists and come back as tuples
    converter.register_unstructure_hook(tuple, list)
    # ``acyclic``, ``ports`` and ``workflow_version`` only when set: the JSON of every spec
    # that declares none of them stays as it was
    converter.register_unstructure_hook(
        WorkflowSpec,
        make_dict_unstructure_fn(
            WorkflowSpec,
            converter,
            acyclic=override(omit_if_default=True),
            ports=override(omit_if_default=True),
            workflow_version=override(omit_if_default=True),
        ),
    )
    return converter


def __getattr__(name: str) -> Any:
    # ``spec_converter``: the cattrs converter for the IR (Plait owns it; never
    # ``cattrs.global_converter``), built when first asked for.
    if name == "spec_converter":
        return _spec_converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- references to code -----------------------------------------------------------------
#
# A spec is data, so every piece of code it needs is one of:
#
# - an import path ``package.module:qualname`` (a function, an executor, a class), recorded
#   for whatever the builder API got as a plain Python callable. A lambda, a closure or a
#   function defined in a function still runs in-process, but is recorded as
#   ``{"ref": ..., "nonportable": "<why>"}``: serialising the spec or rebuilding it in
#   another process names the node or edge and says why;
# - an expression in a registered expression language: ``{"expr": "...", "language": ...}``.
#
# Importing runs code, so :func:`resolve_ref` only imports when the caller allows it; a
# document from an untrusted source never imports what it names.

# a pattern, compiled (and cached by re) on first use: a cold start never pays
_REF = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"


def code_ref(obj: Any) -> str:
    """``module:qualname`` of a function or class; a script's ``__main__`` is named by the
    module it would be when imported, so the name is the same however it was started."""
    module = getattr(obj, "__module__", None) or "?"
    if module == "__main__":
        module = main_module_name()
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{qualname}"


def nonportable_reason(obj: Any) -> str | None:
    """Why ``obj`` cannot be found again by its import path, or ``None`` when it can."""
    qualname = getattr(obj, "__qualname__", None)
    if qualname is None:
        return f"it is a {type(obj).__name__} instance, not a module-level function or class"
    if getattr(obj, "__name__", "") == "<lambda>":
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside a function (a closure or local)"
    if code_ref(obj).startswith("__main__:"):
        return "it is defined in __main__ without a file to import it from"
    return None


def import_ref(ref: str) -> Any:
    """Import ``package.module:qualname`` and return the object, with no checks: callers
    decide whether importing is allowed (:func:`resolve_ref` does).

    :raises ImportError: the module does not import.
    :raises AttributeError: it has no such attribute.
    """
    module_name, _, qualname = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_ref(ref: str, *, allow_imports: bool, what: str) -> Any:
    """Import ``package.module:qualname`` and return the object.

    :param what: what needs it (``"edge group 'x' condition"``), named in errors.
    :raises ConfigError: imports are not allowed, the ref is malformed, or it does not
        import (the cause chained).
    """
    if not isinstance(ref, str) or not re.match(_REF, ref):
        raise ConfigError(f"{what}: {ref!r} is not an import path 'package.module:qualname'")
    if not allow_imports:
        words = "pass allow_imports=True, or executors=/callables in Python instead"
        raise ConfigError(
            f"{what}: {ref!r} names code to import, and this document's source is not "
            f"trusted to import code ({words})",
            fix=("allow_imports", "", words),
        )
    try:
        return import_ref(ref)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: cannot import {ref!r}: {type(exc).__name__}: {exc}") from exc


def as_executor(obj: Any, node_id: str, *, what: str | None = None) -> Executor:
    """An executor with id ``node_id`` made from ``obj``: an executor (copied under the
    new id when its id differs, so one object can serve several nodes), an executor class
    (instantiated with the id) or an ``async def`` function.

    :raises ConfigError: ``obj`` is none of these.
    """
    if isinstance(obj, Executor):
        return obj if obj.id == node_id else obj.with_id(node_id)
    if isinstance(obj, type) and issubclass(obj, Executor):
        return obj(node_id)
    if inspect.iscoroutinefunction(obj):
        return FunctionExecutor(obj, id=node_id)
    raise ConfigError(
        f"{what or f'executor {node_id!r}'}: {obj!r} is not an Executor, an Executor "
        "subclass or an async function",
        SourcePosition(path=f"/nodes/{node_id}"),
    )
