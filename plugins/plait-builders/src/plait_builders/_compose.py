"""Composition: merge fragments into a builder under a prefix, and connect points.

This is the engine behind :meth:`WorkflowBuilder.add_workflow`,
:meth:`WorkflowBuilder.connect` and every ``as_connection``. Merging clones each executor
of the fragment under ``prefix/original_id``, re-creates its edge groups between the new
ids (so group ids follow: ``direct:prep/normalize->prep/enrich``), and rewrites the router
options that name executors. Nothing of the fragment is changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait import Executor, Workflow, get_plugin_manager
from plait.spi import type_name

from ._connection import (
    SEPARATOR,
    CompositionError,
    ConnectionHandle,
    ConnectionMixin,
    ConnectionPoint,
    Contract,
    WorkflowConnection,
)
from ._nodes import adapter_node, clone_executor

if TYPE_CHECKING:
    from ._builder import ExecutorRef, WorkflowBuilder

__all__ = ["add_workflow", "connect", "connection_from_builder", "connection_from_workflow"]

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
    from ._builder import WorkflowBuilder

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
        k: dict(v) for k, v in spec.options.items() if k in PER_EXECUTOR_OPTIONS
    }
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
    for key in PER_EXECUTOR_OPTIONS:
        if limits := source.run_defaults.get(key):
            merged = {head + k: v for k, v in limits.items()}
            merged.update(builder.run_defaults.get(key, {}))
            builder.run_defaults[key] = merged
    builder._prefixes.add(chosen)
    return ConnectionHandle(
        prefix=chosen,
        start=_point(builder, head + connection.start, connection.start),
        outputs=tuple(_point(builder, head + o, o) for o in connection.outputs),
        executor_ids=tuple(clones),
    )


def _point(builder: WorkflowBuilder, executor_id: str, name: str) -> ConnectionPoint:
    ex = builder._executors.get(executor_id)
    if ex is None:
        return ConnectionPoint(executor_id, name)
    return ConnectionPoint(
        executor_id, name, ex.input_types, ex.output_types, ex.workflow_output_types
    )


# -- connecting --------------------------------------------------------------------------


def _source_id(builder: WorkflowBuilder, source: Any) -> str:
    if isinstance(source, ConnectionHandle):
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
    src = _source_id(builder, source)
    tgt = builder._ref(target.start if isinstance(target, ConnectionHandle) else target)
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
