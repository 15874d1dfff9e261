"""``WorkflowBuilder``: the mutable authoring surface that produces a :class:`plait.Workflow`."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
from plait import (
    EdgeGroupSpec,
    Executor,
    FunctionExecutor,
    NodeSpec,
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
    callable_spec,
    code_ref,
    expression_spec,
    nonportable_reason,
    type_name,
)
from plait_documents import edge_group_id
from plait_routing import fan_in_options, switch_options, switch_targets
from typing_extensions import Self

from . import _compose
from ._connection import ConnectionHandle, ConnectionMixin, ConnectionPoint
from ._typecheck import wire_types

__all__ = ["Case", "WorkflowBuilder", "ExecutorRef"]

#: An executor object, the id of one added to the builder, or a composed fragment's point.
ExecutorRef = Executor | str | ConnectionPoint


@attrs.frozen
class Case:
    """One case of a switch: when ``predicate(message)`` is true, route to ``target``."""

    predicate: Callable[[Any], bool]
    target: ExecutorRef


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
    :param run_defaults: default run options (``max_supersteps=…``), checked at once.
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
        **run_defaults: Any,
    ) -> None:
        RunOptions.from_kwargs({}, run_defaults)  # unknown or bad options fail here
        self.retry = retry
        self.timeout = _timeout(timeout, "the builder")
        self.placement = placement
        self.name = name
        self.type_check = type_check
        self.auto_convert = auto_convert
        self.allow_lossy = allow_lossy
        self.run_defaults = dict(run_defaults)
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
            self.add_executor(ref)
            return ref.id
        if isinstance(ref, str):
            return ref
        if isinstance(ref, ConnectionPoint):
            return ref.executor_id
        if isinstance(ref, ConnectionHandle):
            raise TypeError(
                f"got the handle of fragment {ref.prefix!r}; pass handle.start or one of "
                "handle.outputs (or use connect, which picks them)"
            )
        raise TypeError(f"expected an Executor or an executor id, got {ref!r}")

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
            self._add_group("direct", [src], [tgt])
        else:
            recorded, fn = _code(condition)
            params = {"condition": fn} if fn is not None else None
            self._add_group("conditional", [src], [tgt], {"condition": recorded}, params)
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
        return _compose.add_workflow(self, fragment, prefix)

    def connect(
        self,
        source: ExecutorRef | ConnectionHandle,
        target: ExecutorRef | ConnectionHandle,
        *,
        adapter: Any = None,
        allow_lossy: bool = False,
    ) -> Self:
        """Wire ``source`` to ``target`` with a type-checked edge.

        :param source: an executor, an id, a :class:`ConnectionPoint`, or a handle with
            exactly one output (a handle with several is an error listing them).
        :param target: an executor, an id, a point, or a handle (its ``start``).
        :param adapter: a converter record or a function reshaping the messages; it
            becomes a visible node ``adapt:<source>-><target>``.
        :param allow_lossy: let converter insertion use lossy converters on this edge.
        """
        _compose.connect(self, source, target, adapter=adapter, allow_lossy=allow_lossy)
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
            type_problems = wire_types(
                executors,
                groups,
                params,
                manager,
                auto_convert=self.auto_convert,
                allow_lossy=self.allow_lossy,
            )
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
        target: Any = ex.fn if isinstance(ex, FunctionExecutor) else type(ex)
        ref = getattr(ex, "ref", None) or code_ref(target)
        nonportable = getattr(ex, "nonportable", None) or nonportable_reason(target)
        nonportable = nonportable or _needs_arguments(ex)
        config = {"ref": ref}
    retry = policy.get("retry") or (ex.retry.to_dict() if ex.retry is not None else None)
    return NodeSpec(
        id=ex.id,
        kind=kind,
        ref=ref,
        input_types=tuple(type_name(t) for t in ex.input_types),
        output_types=tuple(type_name(t) for t in ex.output_types),
        workflow_output_types=tuple(type_name(t) for t in ex.workflow_output_types),
        config=config,
        retry=retry,
        timeout=policy.get("timeout", ex.timeout),
        max_visits=ex.max_visits,
        max_concurrency=ex.max_concurrency,
        order=policy.get("order", getattr(ex, "order", None)),
        nonportable=nonportable,
        placement=policy.get("placement"),
    )


def _needs_arguments(ex: Executor) -> str | None:
    """Why the ``python`` kind cannot re-create ``ex`` from its class alone, or None."""
    if isinstance(ex, FunctionExecutor):
        return None
    try:
        params = list(inspect.signature(type(ex)).parameters.values())
    except (TypeError, ValueError):
        return "its class's constructor cannot be inspected"
    required = [
        p.name
        for p in params[1:]
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if required:
        return (
            f"its class {type(ex).__qualname__} needs constructor arguments "
            f"({', '.join(required)}) that the spec cannot hold"
        )
    return None


def _code(value: Any) -> tuple[dict[str, Any], Any]:
    """``(what the spec records, the in-process callable or None)`` for a condition,
    selection or switch predicate: a string is an expression, anything else a callable."""
    if isinstance(value, str):
        return expression_spec(value), None
    if not callable(value):
        raise TypeError(f"expected a function or an expression string, got {value!r}")
    return callable_spec(value), value


def _timeout(value: float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{what}: timeout must be a positive number of seconds, got {value!r}")
    return float(value)
