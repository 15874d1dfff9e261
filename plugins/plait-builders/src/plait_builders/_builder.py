"""``WorkflowBuilder``: the mutable authoring surface that produces a :class:`plait.Workflow`,
and how builders compose.

Composition is the engine behind :meth:`WorkflowBuilder.add_workflow`,
:meth:`WorkflowBuilder.connect` and every ``as_connection``. Merging clones each executor
of the fragment under ``prefix/original_id``, re-creates its edge groups between the new
ids (so group ids follow: ``direct:prep/normalize->prep/enrich``), and rewrites the router
options that name executors. Nothing of the fragment is changed. It lives beside the
builder because each needs the other: a builder composes fragments, and a fragment is a
builder (:class:`WorkflowConnection`, :class:`ConnectionMixin`).
"""

from __future__ import annotations

import abc
import copy
import functools
import inspect
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from plait import (
    EdgeGroupSpec,
    Executor,
    FunctionExecutor,
    NodeSpec,
    PortSpec,
    RetryPolicy,
    TypeCheckError,
    Workflow,
    WorkflowSpec,
    WorkflowValidationError,
    get_plugin_manager,
)
from plait.spi import (
    PluginManager,
    RunOptions,
    code_ref,
    nonportable_reason,
    type_name,
)
from plait_documents import edge_group_id, wire_types
from plait_routing import fan_in_options, switch_options, switch_targets
from typing_extensions import Self

from ._common import SEPARATOR, CompositionError, _tags
from ._nodes import adapter_node, clone_executor

# the composition records are imported where a fragment is composed or connected, a
# switch's cases where one is added: a builder that only wires executors and builds never
# makes their classes
if TYPE_CHECKING:
    from ._connection import Case, ConnectionHandle, ConnectionPoint, Contract, ExecutorRef

__all__ = [
    "ConnectionMixin",
    "WorkflowBuilder",
    "WorkflowConnection",
    "add_workflow",
    "connect",
    "connection_from_builder",
    "connection_from_workflow",
]


@functools.cache
def _records() -> tuple[type[ConnectionPoint], type[ConnectionHandle]]:
    """The point and handle classes of :mod:`plait_builders._connection`, imported when a
    fragment is first composed or connected (wiring and building never need them), then
    kept: composing calls for them at every point and connection."""
    from ._connection import ConnectionHandle, ConnectionPoint

    return ConnectionPoint, ConnectionHandle


def _empty_contract() -> Contract:
    """A fragment's contract when none is given: it accepts and produces nothing known."""
    from ._connection import Contract

    return Contract()


@attrs.frozen(repr=False)
class WorkflowConnection:
    """A fragment ready to be composed: a private builder plus its entry/exit metadata.

    Produced by ``.as_connection()`` on any builder or built workflow. The builder is a
    snapshot: later changes to the builder it came from do not reach it, and composing it
    clones its executors, so one connection can be composed any number of times.

    :param builder: the fragment's wiring (never mutated by composition).
    :param start: the id of its entry executor.
    :param outputs: the ids of its exits.
    :param name: its name (the default prefix).
    :param prefix: the prefix asked for in ``as_connection(prefix)``, if any.
    :param contract: the types it accepts and produces.
    """

    builder: WorkflowBuilder
    start: str
    outputs: tuple[str, ...]
    name: str | None = None
    prefix: str | None = None
    contract: Contract = attrs.field(factory=_empty_contract)

    @property
    def entry(self) -> str:
        """Alias of :attr:`start` (the design's term)."""
        return self.start

    @property
    def exits(self) -> tuple[str, ...]:
        """Alias of :attr:`outputs` (the design's term)."""
        return self.outputs

    def as_connection(self, prefix: str | None = None) -> WorkflowConnection:
        """This connection, with ``prefix`` as its default prefix when one is given."""
        return self if prefix is None else attrs.evolve(self, prefix=prefix)

    def __repr__(self) -> str:
        return (
            f"<WorkflowConnection {self.prefix or self.name or '(unnamed)'}: "
            f"{len(self.builder._executors)} executors, start={self.start!r}, "
            f"outputs={list(self.outputs)!r}>"
        )


class ConnectionMixin(abc.ABC):
    """What every builder shares so that it composes as a fragment.

    Subclasses implement :meth:`to_builder` (a fresh :class:`WorkflowBuilder` holding
    their wiring) and get :meth:`as_connection`.
    """

    name: str | None

    @abc.abstractmethod
    def to_builder(self) -> WorkflowBuilder:
        """A new :class:`WorkflowBuilder` with this builder's wiring (fragment form)."""

    def as_connection(
        self, prefix: str | None = None, *, outputs: Sequence[ExecutorRef] | None = None
    ) -> WorkflowConnection:
        """This builder as a fragment another builder composes with ``add_workflow``.

        :param prefix: the prefix its executors get when composed (default: its name).
        :param outputs: the exits to expose (default: executors without outgoing edges,
            else those that yield workflow outputs).
        """
        return connection_from_builder(self.to_builder(), prefix=prefix, outputs=outputs)

    @property
    def contract(self) -> Contract:
        """What this builder accepts and produces, its output semantics and its ports."""
        return self.as_connection().contract


class WorkflowBuilder(ConnectionMixin):
    """Wire executors into a workflow, then :meth:`build` it.

    Every ``add_*`` method returns the builder, so calls chain. Problems are collected and
    reported together by :meth:`build`. Other workflows compose into it as fragments
    (:meth:`add_workflow`, :meth:`connect`), and it composes into others
    (:meth:`as_connection`).

    :param name: the workflow's name (and its default prefix when composed).
    :param plugin_manager: where routers and merge strategies come from.
    :param type_check: check at build time that every edge's target can handle what its
        source sends.
    :param auto_convert: insert converter chains where types differ (lossless only).
    :param allow_lossy: let inserted chains use lossy converters on every edge (an edge
        group can allow it alone with the option ``allow_lossy=True``).
    :param retry: the default :class:`plait.RetryPolicy` of every executor without one.
    :param timeout: the default per-invocation timeout (seconds) of every executor.
    :param placement: where invocations run by default (``"ray"`` with ``plait-ray``;
        ``None``: on this machine). See :class:`plait.spi.Placement`.
    :param acyclic: the graph must have no cycle: :meth:`build` reports every cycle with
        its path (recorded in the spec: :attr:`plait.WorkflowSpec.acyclic`).
    :param version: the workflow's version (:attr:`plait.WorkflowSpec.workflow_version`):
        what its checkpoints record and migrations (``plait-versions``) go from and to.
    :param output_semantics: free tags saying what the workflow's output is
        (``"conversation"``, ``"summary"`` …); its :class:`Contract` carries them.
    :param run_defaults: default run options (``max_supersteps=…``, ``checkpoint=…``),
        checked at once. Composed into another builder, they become that builder's
        defaults unless it sets them itself; two fragments that set one differently are an
        error naming both. Arguments to ``run()`` win over all of them.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        type_check: bool = True,
        auto_convert: bool = True,
        allow_lossy: bool = False,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        placement: str | None = None,
        acyclic: bool = False,
        version: int | None = None,
        output_semantics: Sequence[str] | str = (),
        **run_defaults: Any,
    ) -> None:
        # unknown or bad options fail here (the plugins' own are known to the manager)
        declared = (plugin_manager or get_plugin_manager()) if run_defaults else None
        RunOptions.from_kwargs({}, run_defaults, declared)
        self.acyclic = acyclic
        self.version = version
        self.retry = retry
        self.timeout = _timeout(timeout, "the builder")
        self.placement = placement
        self.name = name
        self.type_check = type_check
        self.auto_convert = auto_convert
        self.allow_lossy = allow_lossy
        self.run_defaults = dict(run_defaults)
        self.output_semantics = _tags(output_semantics)
        self._manager = plugin_manager
        self._executors: dict[str, Executor] = {}
        self._groups: list[EdgeGroupSpec] = []
        self._group_ids: set[str] = set()
        self._params: dict[str, dict[str, Any]] = {}
        self._start: str | None = None
        self._problems: list[str] = []
        self._prefixes: set[str] = set()
        #: per executor id: {"retry": RetryPolicy.to_dict(), "timeout": seconds}
        self._policies: dict[str, dict[str, Any]] = {}
        #: the ports, by name (``prefix/name`` for a composed fragment's)
        self._ports: dict[str, PortSpec] = {}
        #: run default -> the prefix of the fragment that gave it (absent: set here)
        self._default_origins: dict[str, str] = {}

    # -- executors ---------------------------------------------------------------------

    def add_executor(
        self,
        executor: Executor,
        *,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        placement: str | None = None,
        order: str | None = None,
    ) -> Self:
        """Add ``executor`` (adding the same object twice is harmless).

        :param retry: a :class:`plait.RetryPolicy` for this executor in this workflow.
        :param timeout: seconds per invocation in this workflow.
        :param placement: where its invocations run in this workflow (``"ray"``,
            ``"local"``), overriding the builder's.
        :param order: ``"arrival"``: it takes its messages as they arrive in the pipelined
            schedule; ``"canonical"``: one superstep's together; overrides the executor's.
        """
        if not isinstance(executor, Executor):
            raise TypeError(
                f"add_executor needs an Executor (use @executor on an async function), "
                f"got {executor!r}"
            )
        if retry is not None or timeout is not None:
            policy = self._policies.setdefault(executor.id, {})
            if retry is not None:
                policy["retry"] = retry.to_dict()
            if timeout is not None:
                policy["timeout"] = _timeout(timeout, f"executor {executor.id!r}")
        if placement is not None:
            self._policies.setdefault(executor.id, {})["placement"] = placement
        if order is not None:
            if order not in ("canonical", "arrival"):
                raise ValueError(
                    f"executor {executor.id!r}: order must be 'canonical' or 'arrival', "
                    f"got {order!r}"
                )
            self._policies.setdefault(executor.id, {})["order"] = order
        known = self._executors.get(executor.id)
        if known is None:
            self._executors[executor.id] = executor
        elif known is not executor:
            self._problems.append(f"two different executors share the id {executor.id!r}")
        return self

    def _ref(self, ref: ExecutorRef) -> str:
        if isinstance(ref, Executor):
            if self._executors.get(ref.id) is not ref:  # (adding it again changes nothing)
                self.add_executor(ref)
            return ref.id
        if isinstance(ref, str):
            return ref
        point, handle = _records()
        if isinstance(ref, point):
            return ref.executor_id
        if isinstance(ref, tuple):
            return self._port_point(ref).executor_id
        if isinstance(ref, handle):
            raise TypeError(
                f"got the handle of fragment {ref.prefix!r}; pass handle.start or one of "
                "handle.outputs (or use connect, which picks them)"
            )
        raise TypeError(f"expected an Executor or an executor id, got {ref!r}")

    # -- ports -----------------------------------------------------------------------------

    def add_port(
        self,
        name: str,
        executor: ExecutorRef,
        direction: str,
        *,
        semantics: str | None = None,
    ) -> Self:
        """Declare a named extension point: where others connect to (``"in"``) or from
        (``"out"``) ``executor`` once this builder is composed as a fragment.

        Ports are metadata: they travel with the fragment (``handle.port(name)``, prefixed
        ``prefix/name`` in the composing builder), into the built workflow's
        :attr:`plait.WorkflowSpec.ports`, its drawings and ``plait fragments``; they change
        nothing in how the graph runs.

        :param name: the port's name (``"aggregator_out"``), unique in this builder.
        :param executor: the executor it stands for (added if it is an object).
        :param direction: ``"in"`` or ``"out"``.
        :param semantics: a free tag saying what passes (``"conversation"``,
            ``"aggregate"``, ``"request"``, ``"control"`` …); connecting two ports whose
            tags differ is an error.
        :raises CompositionError: the name is taken or malformed.
        :raises ValueError: ``direction`` is neither ``"in"`` nor ``"out"``.
        """
        if not isinstance(name, str) or not name or SEPARATOR in name:
            raise CompositionError(
                f"a port name must be a non-empty string without {SEPARATOR!r}, got {name!r}"
            )
        if name in self._ports:
            raise CompositionError(
                f"port {name!r} is already declared (on {self._ports[name].executor!r})"
            )
        if direction not in ("in", "out"):
            raise ValueError(f"port {name!r}: direction must be 'in' or 'out', got {direction!r}")
        executor_id = self._ref(executor)
        found = self._executors.get(executor_id)
        types: tuple[Any, ...] = ()
        if found is not None:
            types = found.input_types if direction == "in" else found.output_types
            if direction == "out" and not types:
                types = found.workflow_output_types  # standalone form: it yields instead
        self._ports[name] = PortSpec(
            name,
            executor_id,
            direction,
            tuple(type_name(t) for t in types),
            semantics,
        )
        return self

    @property
    def ports(self) -> Mapping[str, PortSpec]:
        """Every port of this builder by name: its own and those of composed fragments
        (``prefix/name``)."""
        return dict(self._ports)

    def port(self, name: str) -> ConnectionPoint:
        """The port ``name`` (``"aggregator_out"``, or ``"analysis/aggregator_out"`` for a
        composed fragment's) as a point to connect to or from.

        :raises CompositionError: naming the ports that exist.
        """
        found = self._ports.get(name)
        if found is None:
            raise CompositionError(
                f"builder {self.name or '(unnamed)'} has no port {name!r}; its ports: "
                f"{', '.join(self._ports) or 'none'}"
            )
        return _point(self, found.executor, found.executor.rsplit(SEPARATOR, 1)[-1], found)

    def _port_point(self, ref: tuple[Any, ...]) -> ConnectionPoint:
        """``(prefix, port)`` (the seed's port-qualified form) as a point."""
        if len(ref) != 2 or not all(isinstance(part, str) for part in ref):
            raise TypeError(f"a port is addressed as (fragment prefix, port name), got {ref!r}")
        prefix, name = ref
        return self.port(f"{prefix}{SEPARATOR}{name}" if prefix else name)

    def set_start(self, executor: ExecutorRef) -> Self:
        """Make ``executor`` the one that receives the run's input."""
        self._start = self._ref(executor)
        return self

    # -- edges ---------------------------------------------------------------------------

    def _add_group(
        self,
        router: str,
        sources: Sequence[str],
        targets: Sequence[str],
        options: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> str:
        taken = self._group_ids
        if len(taken) != len(self._groups):  # someone appended to _groups directly
            taken.update(g.id for g in self._groups)
        gid = edge_group_id(router, sources, targets, taken)
        self._groups.append(EdgeGroupSpec(gid, router, tuple(sources), tuple(targets), options))
        taken.add(gid)
        if params:
            self._params[gid] = params
        return gid

    def add_edge(
        self,
        source: ExecutorRef,
        target: ExecutorRef,
        condition: Callable[[Any], bool] | str | None = None,
    ) -> Self:
        """Connect ``source`` to ``target``; with ``condition``, only messages it accepts.

        ``condition`` is a function of the message, or an expression in the default
        expression language (``"score > 0.5"``, see docs/expressions.md), which the spec
        keeps as data.
        """
        src, tgt = self._ref(source), self._ref(target)
        if condition is None:
            self._add_group("direct", (src,), (tgt,))
        else:
            recorded, fn = _code(condition)
            params = {"condition": fn} if fn is not None else None
            self._add_group("conditional", (src,), (tgt,), {"condition": recorded}, params)
        return self

    def add_fan_out(
        self,
        source: ExecutorRef,
        targets: Sequence[ExecutorRef],
        selection: Callable[[Any, list[str]], Iterable[str]] | str | None = None,
    ) -> Self:
        """Send every message of ``source`` to all ``targets`` (same superstep), or to those
        ``selection(message, target_ids)`` returns."""
        src = self._ref(source)
        tgts = [self._ref(t) for t in targets]
        options: dict[str, Any] = {}
        params: dict[str, Any] = {}
        if selection is not None:
            options["selection"], fn = _code(selection)
            if fn is not None:
                params["selection"] = fn
        self._add_group("fan_out", [src], tgts, options, params)
        return self

    def add_fan_in(
        self,
        sources: Sequence[ExecutorRef],
        target: ExecutorRef,
        merge: str = "list",
        *,
        when: str = "all",
        **merge_options: Any,
    ) -> Self:
        """Wait for a message from every source, then deliver one merged message.

        :param merge: a merge strategy name (``list``, ``concat``, ``keyed`` …).
        :param when: ``"all"`` waits for every source; ``"available"`` fires with what
            arrived once no pending message can still reach the silent sources.
        :param merge_options: options for the strategy, kept in the group's options as
            ``merge_options`` (``separator=" | "`` for ``concat``).
        """
        srcs = [self._ref(s) for s in sources]
        options = fan_in_options(merge, when=when, merge_options=merge_options)
        self._add_group("fan_in", srcs, [self._ref(target)], options)
        return self

    def add_error_edge(self, source: ExecutorRef, target: ExecutorRef) -> Self:
        """When ``source`` fails (after its retries), deliver a
        :class:`plait.InvocationFailure` to ``target`` and go on, instead of failing the
        run. ``target`` needs a handler for ``InvocationFailure``."""
        self._add_group("error", [self._ref(source)], [self._ref(target)])
        return self

    def add_switch(
        self,
        source: ExecutorRef,
        cases: Sequence[Case | tuple[Callable[[Any], bool], ExecutorRef]],
        default: ExecutorRef | None = None,
    ) -> Self:
        """Route each message of ``source`` to the first case whose predicate holds, else to
        ``default``; with no match and no default the run fails naming the switch."""
        from ._connection import Case

        src = self._ref(source)
        resolved = [c if isinstance(c, Case) else Case(c[0], c[1]) for c in cases]
        case_targets = [self._ref(c.target) for c in resolved]
        default_id = self._ref(default) if default is not None else None
        targets = switch_targets(case_targets, default_id)
        recorded = [_code(c.predicate) for c in resolved]
        options = switch_options(case_targets, [data for data, _ in recorded], default_id)
        params = None
        if any(fn is not None for _, fn in recorded):
            # predicates given as expressions are compiled by the router from the options
            params = {"cases": [fn for _, fn in recorded]}
        self._add_group("switch", [src], targets, options, params)
        return self

    # -- composition ---------------------------------------------------------------------

    def add_workflow(self, fragment: Any, prefix: str | None = None) -> ConnectionHandle:
        """Merge ``fragment`` into this builder under ``prefix`` and return its handle.

        :param fragment: a :class:`WorkflowBuilder` or high-level builder, a built
            :class:`plait.Workflow`, a :class:`WorkflowConnection`, a :class:`Fragment`, or
            the name of a published fragment (``"textkit.summarize"``).
        :param prefix: its executors become ``prefix/original_id`` (default: the fragment's
            name, else ``fragment-{n}``). Nested compositions give ``outer/inner/id``.
        :return: a :class:`ConnectionHandle` with ``.start`` and ``.outputs``.
        :raises CompositionError: when the prefix is taken or overlaps another one.

        The fragment is cloned, never changed: adding it twice gives two independent
        copies. Connect it with :meth:`connect`.
        """
        return add_workflow(self, fragment, prefix)

    def connect(
        self,
        source: ExecutorRef | ConnectionHandle,
        target: ExecutorRef | ConnectionHandle,
        *,
        adapter: Any = None,
        allow_lossy: bool = False,
    ) -> Self:
        """Wire ``source`` to ``target`` with a type-checked edge.

        :param source: an executor, an id, a :class:`ConnectionPoint` (a port's:
            ``handle.port("aggregator_out")``), a port as ``(prefix, port name)``, or a
            handle with exactly one output (a handle with several is an error listing them).
        :param target: an executor, an id, a point, a port, or a handle (its ``start``).
        :raises CompositionError: from an ``in`` port, into an ``out`` port, or between
            ports whose semantics tags differ.
        :param adapter: a converter record or a function reshaping the messages; it
            becomes a visible node ``adapt:<source>-><target>``.
        :param allow_lossy: let converter insertion use lossy converters on this edge.
        """
        connect(self, source, target, adapter=adapter, allow_lossy=allow_lossy)
        return self

    def to_builder(self) -> WorkflowBuilder:
        """A snapshot of this builder: later changes to either do not reach the other.

        Executor objects are shared (composition clones them when it merges).
        """
        snapshot = copy.copy(self)
        snapshot._executors = dict(self._executors)
        snapshot._groups = list(self._groups)
        snapshot._group_ids = set(self._group_ids)
        snapshot._params = {k: dict(v) for k, v in self._params.items()}
        snapshot._problems = list(self._problems)
        snapshot._prefixes = set(self._prefixes)
        snapshot._policies = {k: dict(v) for k, v in self._policies.items()}
        snapshot._ports = dict(self._ports)
        snapshot._default_origins = dict(self._default_origins)
        snapshot.run_defaults = {
            k: dict(v) if isinstance(v, dict) else v for k, v in self.run_defaults.items()
        }
        return snapshot

    # -- building ------------------------------------------------------------------------

    def to_spec(self) -> WorkflowSpec:
        """The graph as data, without validating it."""
        nodes = tuple(_node_spec(ex, self._policies.get(i)) for i, ex in self._executors.items())
        return WorkflowSpec(
            name=self.name,
            start=self._start or "",
            nodes=nodes,
            edge_groups=tuple(self._groups),
            options=self.run_defaults,
            retry=self.retry.to_dict() if self.retry is not None else None,
            timeout=self.timeout,
            acyclic=self.acyclic,
            ports=tuple(self._ports.values()),
            workflow_version=self.version,
        )

    def build(self) -> Workflow:
        """Validate everything at once and return an immutable :class:`plait.Workflow`.

        :raises WorkflowValidationError: listing every structural and type problem; a
            :class:`~plait.TypeCheckError` (a subclass) when an edge's target
            cannot handle what its source sends.
        """
        manager = self._manager or get_plugin_manager()
        problems = list(self._problems)
        executors, groups, params = dict(self._executors), list(self._groups), dict(self._params)
        type_problems: list[str] = []
        if self.type_check:
            type_problems = [
                str(problem)
                for problem in wire_types(
                    executors,
                    groups,
                    manager,
                    auto_convert=self.auto_convert,
                    allow_lossy=self.allow_lossy,
                )
            ]
            problems.extend(type_problems)
        # every problem in one report; TypeCheckError when an edge does not type-check
        error = TypeCheckError if type_problems else WorkflowValidationError
        spec = WorkflowSpec(
            name=self.name,
            start=self._start or "",
            nodes=tuple(_node_spec(ex, self._policies.get(i)) for i, ex in executors.items()),
            edge_groups=tuple(groups),
            options=self.run_defaults,
            retry=self.retry.to_dict() if self.retry is not None else None,
            timeout=self.timeout,
            placement=self.placement,
            acyclic=self.acyclic,
            ports=tuple(self._ports.values()),
            workflow_version=self.version,
        )
        try:
            workflow = Workflow(spec, executors, edge_params=params, plugin_manager=manager)
        except WorkflowValidationError as exc:
            raise error([*problems, *exc.problems], workflow=self.name) from None
        if problems:
            raise error(problems, workflow=self.name)
        return workflow


def _node_spec(ex: Executor, policy: dict[str, Any] | None = None) -> NodeSpec:
    """The node for ``ex``: its executor kind and config when it was built from one
    (``plait_kind``/``config`` attributes), else the ``python`` kind with an import path
    that says whether it can be found again from another process."""
    policy = policy or {}
    kind = getattr(ex, "plait_kind", None)
    nonportable: str | None = None
    if isinstance(kind, str):
        config = dict(getattr(ex, "config", None) or {})
        ref = None
    else:
        kind = "python"
        ref = getattr(ex, "ref", None)
        if isinstance(ex, FunctionExecutor):
            # its ``ref`` names the function already: the import path is computed once
            why = nonportable_reason(ex.fn)
            ref = ref or code_ref(ex.fn)
        else:
            found, why = _class_code(type(ex))
            ref = ref or found
        nonportable = getattr(ex, "nonportable", None) or why
        config = {"ref": ref}
    retry = policy.get("retry") or (ex.retry.to_dict() if ex.retry is not None else None)
    # every field by position, in NodeSpec's order: calling a class packs its keywords
    # into a dict, which cost a quarter of making a node's spec (test_node_spec_fields)
    return NodeSpec(
        ex.id,
        kind,
        ref,
        _type_names(ex.input_types),
        _type_names(ex.output_types),
        _type_names(ex.workflow_output_types),
        config,
        None,  # uses: only a document names the executor a node uses
        retry,
        policy.get("timeout", ex.timeout),
        ex.max_visits,
        ex.max_concurrency,
        policy.get("order", getattr(ex, "order", None)),
        nonportable,
        policy.get("placement"),
    )


def _type_names(types: tuple[Any, ...]) -> tuple[str, ...]:
    """The readable names of ``types`` (:func:`plait.spi.type_name`, which names a plain
    class once): most nodes declare one type or none of each kind."""
    if len(types) == 1:
        return (type_name(types[0]),)
    return tuple(map(type_name, types))


#: Executor class -> (its import path, why the ``python`` kind cannot re-create one of its
#: executors from data, or None): the builders' one cache. A composition that uses one
#: fragment many times builds many executors of one class, and reading a constructor's
#: signature was most of what a node cost to build (bench_compose.py, ``class``: 100 uses
#: of one 10-executor fragment build in 0.075 s instead of 0.23 s, medians of 5 runs). Weak
#: keys: a class made at run time (a test's) goes when nothing else holds it.
_CLASS_CODE: weakref.WeakKeyDictionary[type, tuple[str, str | None]] = weakref.WeakKeyDictionary()


def _class_code(cls: type) -> tuple[str, str | None]:
    """``(code_ref(cls), why it is not portable)``, computed once per class."""
    found = _CLASS_CODE.get(cls)
    if found is None:
        found = _CLASS_CODE[cls] = (
            code_ref(cls),
            nonportable_reason(cls) or _needs_arguments(cls),
        )
    return found


def _needs_arguments(cls: type) -> str | None:
    """Why the ``python`` kind cannot re-create an executor from its class alone, or None."""
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return "its class's constructor cannot be inspected"
    required = [
        p.name
        for p in params[1:]
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if required:
        return (
            f"its class {cls.__qualname__} needs constructor arguments "
            f"({', '.join(required)}) that the spec cannot hold"
        )
    return None


def _code(value: Any) -> tuple[dict[str, Any], Any]:
    """``(what the spec records, the in-process callable or None)`` for a condition,
    selection or switch predicate: a string is an expression in the default language
    (``{"expr": text}``), anything else a callable, recorded by its import path
    (``{"ref": "module:qualname"}``, and why it is ``nonportable`` when another process
    cannot import it)."""
    if isinstance(value, str):
        return {"expr": value}, None
    if not callable(value):
        raise TypeError(f"expected a function or an expression string, got {value!r}")
    recorded: dict[str, Any] = {"ref": code_ref(value)}
    reason = nonportable_reason(value)
    if reason is not None:
        recorded["nonportable"] = reason
    return recorded, value


def _timeout(value: float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{what}: timeout must be a positive number of seconds, got {value!r}")
    return float(value)


# -- composition: merging fragments under a prefix, connecting points ---------------------

#: Router options whose values are executor ids (one id, or a list of ids).
ID_OPTIONS = ("case_targets", "default")
#: Run options keyed by executor id, carried over from a fragment with prefixed keys.
PER_EXECUTOR_OPTIONS = ("executor_concurrency", "executor_max_visits")


# -- connections -------------------------------------------------------------------------


def _union(groups: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    out: list[Any] = []
    for group in groups:
        out.extend(t for t in group if t not in out)
    return tuple(out)


def connection_from_builder(
    builder: WorkflowBuilder,
    *,
    prefix: str | None = None,
    outputs: Sequence[ExecutorRef] | None = None,
) -> WorkflowConnection:
    """A connection over ``builder`` (taken as is: pass a snapshot you own).

    :raises CompositionError: when the fragment has no start executor.
    """
    from ._connection import Contract

    if builder._start is None:
        raise CompositionError(
            f"fragment {builder.name or '(unnamed)'} has no start executor; call set_start "
            "on it before composing it"
        )
    if outputs is not None:
        exits = tuple(builder._ref(o) for o in outputs)
    else:
        exits = _default_exits(builder)
    executors = builder._executors
    start = executors.get(builder._start)
    contract = Contract(
        input_types=start.input_types if start is not None else (),
        output_types=_union([executors[e].output_types for e in exits if e in executors]),
        workflow_output_types=_union([ex.workflow_output_types for ex in executors.values()]),
        output_semantics=builder.output_semantics,
        ports=tuple(builder._ports.values()),
    )
    return WorkflowConnection(
        builder=builder,
        start=builder._start,
        outputs=exits,
        name=builder.name,
        prefix=prefix,
        contract=contract,
    )


def _default_exits(builder: WorkflowBuilder) -> tuple[str, ...]:
    """Executors without outgoing edges; in a graph of cycles, those that yield outputs."""
    sources = {s for group in builder._groups for s in group.sources}
    terminal = tuple(i for i in builder._executors if i not in sources)
    if terminal:
        return terminal
    return tuple(i for i, ex in builder._executors.items() if ex.workflow_output_types)


def connection_from_workflow(workflow: Workflow, prefix: str | None = None) -> WorkflowConnection:
    """Clone a built workflow's topology into a new builder and wrap it as a connection.

    The workflow is not changed. Converter nodes it contains are kept as they are.
    """
    spec = workflow.spec
    builder = WorkflowBuilder(spec.name)
    builder._executors = {node.id: workflow.executors[node.id] for node in spec.nodes}
    for group in spec.edge_groups:
        builder._groups.append(group)
        builder._group_ids.add(group.id)
        if params := workflow.edge_params.get(group.id):
            builder._params[group.id] = dict(params)
    builder._start = spec.start
    for node in spec.nodes:
        policy = {k: v for k, v in (("retry", node.retry), ("timeout", node.timeout)) if v}
        if policy:
            builder._policies[node.id] = policy
    builder.run_defaults = {
        k: dict(v) if isinstance(v, Mapping) else v for k, v in spec.options.items()
    }
    builder._ports = {port.name: port for port in spec.ports}
    return connection_from_builder(builder, prefix=prefix)


def _as_connection(fragment: Any, prefix: str | None, builder: WorkflowBuilder) -> Any:
    """Turn whatever ``add_workflow`` got into a :class:`WorkflowConnection`."""
    if isinstance(fragment, WorkflowConnection):
        return fragment
    if isinstance(fragment, ConnectionMixin):
        return fragment.as_connection(prefix)
    if isinstance(fragment, Workflow):
        return connection_from_workflow(fragment, prefix)
    if isinstance(fragment, str):
        manager = builder._manager or get_plugin_manager()
        published = manager.registry("fragment").get(fragment, what="add_workflow")
        return _published(published, fragment, prefix, builder)
    if hasattr(fragment, "build") and hasattr(fragment, "name"):
        return _published(fragment, fragment.name, prefix, builder)
    raise TypeError(
        "add_workflow needs a WorkflowBuilder, a high-level builder, a Workflow, a "
        f"WorkflowConnection, a Fragment or a published fragment's name, got {fragment!r}"
    )


def _published(fragment: Any, name: str, prefix: str | None, builder: WorkflowBuilder) -> Any:
    made = fragment.build()
    if not isinstance(made, (ConnectionMixin, Workflow, WorkflowConnection)):
        raise CompositionError(
            f"fragment {name!r}: build() must return a builder, got {type(made).__name__}"
        )
    connection = _as_connection(made, prefix, builder)
    return connection if connection.prefix else connection.as_connection(name)


# -- merging -----------------------------------------------------------------------------


def _check_prefix(builder: WorkflowBuilder, prefix: str) -> None:
    if (
        not isinstance(prefix, str)
        or not prefix
        or prefix.startswith(SEPARATOR)
        or prefix.endswith(SEPARATOR)
        or SEPARATOR * 2 in prefix
    ):
        raise CompositionError(
            f"a fragment prefix must be a non-empty string without a leading, trailing or "
            f"doubled {SEPARATOR!r}, got {prefix!r}"
        )
    for used in builder._prefixes:
        if used == prefix:
            raise CompositionError(
                f"prefix {prefix!r} is already used by another fragment of this builder; "
                "pass a different prefix= to add_workflow"
            )
        if used.startswith(prefix + SEPARATOR) or prefix.startswith(used + SEPARATOR):
            raise CompositionError(
                f"prefix {prefix!r} overlaps the prefix {used!r} of another fragment; "
                "pass a prefix outside it"
            )


def _default_prefix(builder: WorkflowBuilder, connection: WorkflowConnection) -> str:
    if connection.prefix:
        return connection.prefix
    if connection.name:
        return connection.name
    n = len(builder._prefixes) + 1
    while f"fragment-{n}" in builder._prefixes:
        n += 1
    return f"fragment-{n}"


def _rewrite_options(options: Mapping[str, Any], rename: Any) -> dict[str, Any]:
    out = dict(options)
    for key in ID_OPTIONS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = rename(value)
        elif isinstance(value, (list, tuple)):
            out[key] = [rename(v) if isinstance(v, str) else v for v in value]
    return out


def add_workflow(builder: WorkflowBuilder, fragment: Any, prefix: str | None) -> ConnectionHandle:
    """Merge ``fragment`` into ``builder`` under ``prefix``; see ``WorkflowBuilder``."""
    connection = _as_connection(fragment, prefix, builder)
    chosen = prefix if prefix is not None else _default_prefix(builder, connection)
    _check_prefix(builder, chosen)
    source = connection.builder
    head = chosen + SEPARATOR

    def rename(old: str) -> str:
        return head + old

    clones: dict[str, Executor] = {}
    for old, executor in source._executors.items():
        new = head + old
        if new in builder._executors:
            raise CompositionError(
                f"prefix {chosen!r}: executor id {new!r} already exists in this builder"
            )
        clones[new] = clone_executor(executor, new)
    builder._executors.update(clones)
    lossy = source.allow_lossy
    for group in source._groups:
        options = _rewrite_options(group.options, rename)
        if lossy:
            options["allow_lossy"] = True
        params = source._params.get(group.id)
        builder._add_group(
            group.router,
            [head + s for s in group.sources],
            [head + t for t in group.targets],
            options,
            dict(params) if params else None,
        )
    builder._problems.extend(f"fragment {chosen!r}: {p}" for p in source._problems)
    for old, policy in source._policies.items():
        builder._policies[head + old] = dict(policy)
    _merge_run_defaults(builder, source, chosen)
    ports: dict[str, ConnectionPoint] = {}
    for name, port in source._ports.items():
        merged_port = attrs.evolve(port, name=head + name, executor=head + port.executor)
        builder._ports[merged_port.name] = merged_port
        ports[name] = _point(builder, merged_port.executor, port.executor, merged_port)
    builder._prefixes.add(chosen)
    _, handle = _records()
    return handle(
        prefix=chosen,
        start=_point(builder, head + connection.start, connection.start),
        outputs=tuple(_point(builder, head + o, o) for o in connection.outputs),
        executor_ids=tuple(clones),
        ports=ports,
    )


def _merge_run_defaults(builder: WorkflowBuilder, source: WorkflowBuilder, prefix: str) -> None:
    """Carry the fragment's run defaults into ``builder`` (the design: "merged graphs carry
    over the fragment's checkpoint storage configuration").

    Per-executor limits travel with prefixed keys. Any other default the composing builder
    sets itself stays its own; one it does not set is taken from the fragment, and two
    fragments that set it differently are a :class:`CompositionError` naming both.
    """
    head = prefix + SEPARATOR
    for key, value in source.run_defaults.items():
        if key in PER_EXECUTOR_OPTIONS:
            if value:
                merged = {head + k: v for k, v in value.items()}
                merged.update(builder.run_defaults.get(key, {}))
                builder.run_defaults[key] = merged
            continue
        inner = source._default_origins.get(key)
        origin = prefix if inner is None else head + inner
        if key not in builder.run_defaults:
            builder.run_defaults[key] = value
            builder._default_origins[key] = origin
            continue
        other = builder._default_origins.get(key)
        if other is None or builder.run_defaults[key] == value:
            continue  # the composing builder's own default wins; agreeing fragments are fine
        raise CompositionError(
            f"fragments {other!r} and {origin!r} disagree on the run default {key!r} "
            f"({builder.run_defaults[key]!r} vs {value!r}); set {key}= on the composing "
            "builder (its own default wins) or pass it to run()"
        )


def _point(
    builder: WorkflowBuilder, executor_id: str, name: str, port: PortSpec | None = None
) -> ConnectionPoint:
    point, _ = _records()
    ex = builder._executors.get(executor_id)
    if ex is None:
        return point(executor_id, name, port=port)
    return point(executor_id, name, ex.input_types, ex.output_types, ex.workflow_output_types, port)


# -- connecting --------------------------------------------------------------------------


def _as_point(builder: WorkflowBuilder, ref: Any) -> Any:
    """A ``(prefix, port)`` pair as its point; anything else as it is."""
    return builder._port_point(ref) if isinstance(ref, tuple) else ref


def _check_ports(source: Any, target: Any) -> None:
    """A connection goes out of an ``out`` port into an ``in`` port, between ports whose
    semantics tags (when both have one) agree."""
    point, _ = _records()
    out_port = source.port if isinstance(source, point) else None
    in_port = target.port if isinstance(target, point) else None
    if out_port is not None and out_port.direction != "out":
        raise CompositionError(
            f"cannot connect from port {out_port.name!r}: it is an 'in' port (messages go "
            f"into {out_port.executor!r}); connect to it instead"
        )
    if in_port is not None and in_port.direction != "in":
        raise CompositionError(
            f"cannot connect to port {in_port.name!r}: it is an 'out' port (what "
            f"{in_port.executor!r} sends comes out of it); connect from it instead"
        )
    if (
        out_port is not None
        and in_port is not None
        and out_port.semantics
        and in_port.semantics
        and out_port.semantics != in_port.semantics
    ):
        raise CompositionError(
            f"port {out_port.name!r} carries {out_port.semantics!r} but port "
            f"{in_port.name!r} takes {in_port.semantics!r}; connect through an adapter "
            "(adapter=...) between executors instead"
        )


def _source_id(builder: WorkflowBuilder, source: Any) -> str:
    _, handle = _records()
    if isinstance(source, handle):
        source = source.output()
    executor_id = builder._ref(source)
    ex = builder._executors.get(executor_id)
    if ex is not None and ex.handlers and not ex.output_types:
        yields = ", ".join(map(type_name, ex.workflow_output_types)) or "nothing"
        raise CompositionError(
            f"cannot connect from {executor_id!r}: it sends no messages (it yields workflow "
            f"outputs: {yields}); connect from an executor that sends, or wrap the workflow "
            "with workflow.as_executor(...)"
        )
    return executor_id


def connect(
    builder: WorkflowBuilder,
    source: Any,
    target: Any,
    *,
    adapter: Any = None,
    allow_lossy: bool = False,
) -> None:
    """Wire ``source`` to ``target``; see :meth:`WorkflowBuilder.connect`."""
    _, handle = _records()
    source, target = _as_point(builder, source), _as_point(builder, target)
    if isinstance(target, handle):
        target = target.start
    _check_ports(source, target)
    src = _source_id(builder, source)
    tgt = builder._ref(target)
    options = {"allow_lossy": True} if allow_lossy else None
    if adapter is None:
        builder._add_group("direct", [src], [tgt], options)
        return
    base = f"adapt:{src}->{tgt}"
    node_id, n = base, 2
    while node_id in builder._executors:
        node_id, n = f"{base}#{n}", n + 1
    node = adapter_node(adapter, node_id)
    builder.add_executor(node)
    builder._add_group("direct", [src], [node_id], options)
    builder._add_group("direct", [node_id], [tgt], dict(options) if options else None)
