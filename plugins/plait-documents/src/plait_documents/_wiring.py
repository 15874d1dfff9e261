"""Build-time wiring checks: can every edge's target handle what its source sends?

One check for every way a workflow is built: ``WorkflowBuilder.build()`` runs it over the
builder's executors, and :func:`plait_documents.load` over the executors a document's
nodes were built into, so a plain async function used as an agent in a flow is checked by
its annotations as it is in a builder. (A JSON DAG's and YAML steps' nodes pass a context
between them, not their agents' values: those loaders compare each agent with what its
node gives and takes, with the same :func:`plait_converters.is_assignable`.)

A problem names the edge group, the executor that sends the type (the *producer*: behind
a fan-in, the source whose value the merge passes on, not the group as a whole), the
type, the target and what it accepts.

Whether a type fits is :func:`plait_converters.is_assignable`'s answer. Where it does not
and ``auto_convert`` is on, the cheapest chain of the registered converters (found by
:func:`plait_converters.find_chain`) is inserted as real executor nodes, one per step, with
ids ``convert:<from>-><to>:<name>``. The edge group keeps its id, router, options and
callables — its conditions, switch predicates and fan-in barrier still see what the
sources send — and now delivers to the first converter node; new ``direct`` groups carry
the value from node to node and on to the original target. The search is imported when an
edge first needs a conversion: most builds never do.

A source that sends ``Any`` is left alone: its values are checked when the target's
handler is chosen at run time. Edges proven at build time get no run-time check at all.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import attrs
from plait import (
    DocumentError,
    EdgeGroupSpec,
    Executor,
    InvocationFailure,
    LoadError,
    SourcePosition,
    Workflow,
)
from plait.spi import PluginManager, Registry, type_name

from .build import edge_group_id

# the converter search and the converter nodes are imported only when an edge needs a
# conversion, the problem record when one does not fit: most builds never do, and every
# process pays their imports
if TYPE_CHECKING:
    from plait_converters import Chain, Step

    from ._mismatch import EdgeTypeProblem

__all__ = [
    "wire_document",
    "wire_types",
]

_MAX_ROUNDS = 8  # chains planned for one edge (one per source type still unhandled)
_Plan = list[tuple["Step", tuple[Any, ...]]]  # (step, passthrough types) per node


class _Wiring:
    """One pass over the caller's copies of executors and edge groups."""

    def __init__(
        self,
        executors: dict[str, Executor],
        groups: list[EdgeGroupSpec],
        manager: PluginManager,
        *,
        auto_convert: bool,
        allow_lossy: bool,
    ) -> None:
        self.executors = executors
        self.groups = groups
        self.manager = manager
        self.auto_convert = auto_convert
        self.allow_lossy = allow_lossy

    @functools.cached_property
    def group_ids(self) -> set[str]:
        """The groups' ids, which the ``direct`` groups of inserted converter nodes must
        not take: collected when an edge first needs a converter (most builds never do),
        while the groups are still the caller's."""
        return {g.id for g in self.groups}

    def check(self, index: int, merges: Registry[Any]) -> list[EdgeTypeProblem]:
        group = self.groups[index]
        incoming = _incoming(group, self.executors, merges)
        if incoming is None:
            return []
        problems: list[EdgeTypeProblem] = []
        retarget: dict[str, str] = {}
        for target_id in group.targets:
            target = self.executors.get(target_id)
            if target is None:
                continue  # reported by the structural checks
            accepted = target.input_types
            # most edges send exactly what their target accepts: only the other types
            # are asked of the type check
            unmatched = [tp for tp in incoming if tp not in accepted]
            if not unmatched or all(_accepts(accepted, tp) for tp in unmatched):
                continue
            lossy = self.allow_lossy or bool(group.options.get("allow_lossy"))
            plan, problem = self._plan(incoming, accepted, lossy)
            if plan is None or not self.auto_convert:
                missing = next(tp for tp in incoming if not _accepts(accepted, tp))
                producers = _producers(group, self.executors, merges, missing, accepted)
                message = self._explain(
                    group, target_id, accepted, missing, producers, problem, plan
                )
                from ._mismatch import EdgeTypeProblem

                problems.append(EdgeTypeProblem(group.id, tuple(producers), target_id, message))
                continue
            retarget[target_id] = self._insert(plan, target_id)
        if retarget:
            self.groups[index] = _retarget(group, retarget)
        return problems

    def _plan(
        self, incoming: Sequence[Any], accepted: tuple[Any, ...], allow_lossy: bool
    ) -> tuple[_Plan | None, str | None]:
        """Chain converters until every incoming type is accepted (usually one round)."""
        flowing: list[Any] = list(incoming)
        plan: _Plan = []
        for _ in range(_MAX_ROUNDS):
            missing = [tp for tp in flowing if not _accepts(accepted, tp)]
            if not missing:
                return plan, None
            chain = self._find_chain(missing[0], accepted, allow_lossy)
            if chain is None:
                return None, self._no_chain(missing[0], accepted, allow_lossy)
            from plait_converters import is_assignable

            for step in chain.steps:
                # accepted types, and those this step does not take, go through unchanged
                passthrough = tuple(
                    tp
                    for tp in flowing
                    if _accepts(accepted, tp) or not is_assignable(tp, step.source)
                )
                plan.append((step, passthrough))
                flowing = list(dict.fromkeys([*passthrough, step.target]))
        return None, "the source's types need more converter chains than Plait will insert"

    def _find_chain(
        self, source: Any, accepted: tuple[Any, ...], allow_lossy: bool
    ) -> Chain | None:
        from plait_converters import find_chain  # only edges that need a converter pay for it

        return find_chain(source, accepted, allow_lossy=allow_lossy, manager=self.manager)

    def _no_chain(self, source: Any, accepted: tuple[Any, ...], allow_lossy: bool) -> str:
        wanted = " | ".join(type_name(t) for t in accepted) or "nothing"
        if not allow_lossy:
            lossy = self._find_chain(source, accepted, True)
            if lossy is not None:
                names = ", ".join(str(s) for s in lossy.lossy_steps)
                return (
                    f"the only converter chain from {type_name(source)} to {wanted} "
                    f"({lossy}) needs the lossy converter(s) {names}; allow it with "
                    f"WorkflowBuilder(allow_lossy=True), or on this edge with "
                    f"connect(..., allow_lossy=True)"
                )
        from plait_converters import nearest_converters

        near = nearest_converters(source, accepted, manager=self.manager)
        listed = (
            "; ".join(map(str, near)) if near else "none installed (pip install plait-converters)"
        )
        return (
            f"no converter chain from {type_name(source)} to {wanted}; nearest converters: {listed}"
        )

    def _explain(
        self,
        group: EdgeGroupSpec,
        target_id: str,
        accepted: tuple[Any, ...],
        missing: Any,
        producers: Sequence[str],
        problem: str | None,
        plan: _Plan | None,
    ) -> str:
        accepts = ", ".join(type_name(t) for t in accepted) or "nothing"
        head = f"edge group {group.id!r}: {target_id!r} cannot handle {type_name(missing)}"
        if producers:
            head += " from " + ", ".join(repr(p) for p in producers)
        if group.router == "fan_in":
            own = _sent(producers, self.executors)
            if own and [type_name(missing)] != [type_name(t) for t in own]:
                head += f" (which sends {' | '.join(type_name(t) for t in own)})"
            head += f" through the {group.options.get('merge', 'list')!r} merge"
        head += f" (it accepts: {accepts})"
        if plan is not None:  # auto_convert is off
            chain = " -> ".join(step.name for step, _ in plan)
            return f"{head}; converters could bridge it ({chain}) with auto_convert=True"
        return f"{head}; {problem}"

    def _insert(self, plan: _Plan, target_id: str) -> str:
        from ._converter_nodes import ConverterExecutor

        ids: list[str] = []
        for step, passthrough in plan:
            node_id = self._unique_node_id(step.node_id, target_id)
            self.executors[node_id] = ConverterExecutor(node_id, step, passthrough=passthrough)
            ids.append(node_id)
        for source, target in zip(ids, [*ids[1:], target_id]):
            gid = edge_group_id("direct", (source,), (target,), self.group_ids)
            self.group_ids.add(gid)
            self.groups.append(EdgeGroupSpec(gid, "direct", (source,), (target,)))
        return ids[0]

    def _unique_node_id(self, base: str, target_id: str) -> str:
        if base not in self.executors:
            return base
        node_id, n = f"{base}@{target_id}", 2
        while node_id in self.executors:
            node_id, n = f"{base}@{target_id}#{n}", n + 1
        return node_id


def wire_types(
    executors: dict[str, Executor],
    groups: list[EdgeGroupSpec],
    manager: PluginManager,
    *,
    auto_convert: bool = True,
    allow_lossy: bool = False,
) -> list[EdgeTypeProblem]:
    """Check every edge group; insert converter chains; return the problems found.

    Every problem is returned, not raised, so a caller reports them together with its
    others: the builder raises :class:`~plait.TypeCheckError`, :func:`plait_documents.load`
    a :class:`~plait.LoadError` positioned where the document writes each edge.

    ``executors`` and ``groups`` are the caller's copies, edited in place: converter nodes
    are added to ``executors``, their ``direct`` groups appended to ``groups``, and a
    rewired group replaced at its index (same id, so callables kept by group id still
    belong to it).

    :param auto_convert: insert chains; when off, a mismatch is a problem that names the
        chain that would have bridged it.
    :param allow_lossy: lossy converters may join chains on every edge; a group allows
        them alone with ``options["allow_lossy"] = True``.
    """
    wiring = _Wiring(executors, groups, manager, auto_convert=auto_convert, allow_lossy=allow_lossy)
    merges = manager.registry("merge_strategy")
    problems: list[EdgeTypeProblem] = []
    for index in range(len(groups)):  # the groups appended on the way need no check
        problems.extend(wiring.check(index, merges))
    return problems


def _sent(source_ids: Sequence[str], executors: dict[str, Executor]) -> list[Any]:
    """Every type the executors ``source_ids`` send, each once, in order."""
    sent: list[Any] = []
    for source_id in source_ids:
        source = executors.get(source_id)
        if source is not None:
            sent.extend(t for t in source.output_types if t not in sent)
    return sent


def _producers(
    group: EdgeGroupSpec,
    executors: dict[str, Executor],
    merges: Registry[Any],
    missing: Any,
    accepted: tuple[Any, ...],
) -> list[str]:
    """The sources of ``group`` to blame for ``missing``: those that send it or, behind a
    fan-in, those whose own value the merge turns into a type the target cannot handle
    (every source when none can be singled out)."""
    if group.router == "error":
        return list(group.sources)
    if group.router != "fan_in":
        found = [s for s in group.sources if missing in _sent([s], executors)]
        return found or list(group.sources)
    merge_name = group.options.get("merge", "list")
    strategy = merges.get(merge_name) if merge_name in merges else None
    found = []
    for source_id in group.sources:
        own = _sent([source_id], executors)
        if Any in own or not own:
            continue
        union = own[0] if len(own) == 1 else Union[tuple(own)]  # noqa: UP007
        merged = strategy.output_type(union) if strategy is not None else union
        if not _accepts(accepted, merged):
            found.append(source_id)
    return found or list(group.sources)


def _accepts(accepted: tuple[Any, ...], tp: Any) -> bool:
    # a type is assignable to itself: most edges send exactly what their target accepts,
    # and a build whose edges all do never imports the type check
    if tp in accepted:
        return True
    from plait_converters import is_assignable

    return any(is_assignable(tp, a) for a in accepted)


def _incoming(
    group: EdgeGroupSpec, executors: dict[str, Executor], merges: Registry[Any]
) -> list[Any] | None:
    """What each target of ``group`` may receive; None when it cannot be known statically."""
    if group.router == "error":
        return [InvocationFailure]  # an error edge carries failures, not messages
    sent: list[Any] = []
    for source_id in group.sources:
        source = executors.get(source_id)
        if source is None:
            return None  # reported by the structural checks
        for tp in source.output_types:
            if tp not in sent:
                sent.append(tp)
    if not sent or Any in sent:
        return None  # unknown types are checked at run time
    if group.router != "fan_in":
        return sent
    merge_name = group.options.get("merge", "list")
    if merge_name not in merges:
        return None  # reported when the router is created
    union = sent[0] if len(sent) == 1 else Union[tuple(sent)]  # noqa: UP007
    return [merges.get(merge_name).output_type(union)]


def _retarget(group: EdgeGroupSpec, retarget: dict[str, str]) -> EdgeGroupSpec:
    """``group`` delivering to the first converter node instead of each rewired target."""
    options = dict(group.options)
    if "case_targets" in options:  # a switch names its targets in its options too
        options["case_targets"] = [retarget.get(t, t) for t in options["case_targets"]]
    if options.get("default") in retarget:
        options["default"] = retarget[options["default"]]
    targets = tuple(retarget.get(t, t) for t in group.targets)
    return attrs.evolve(group, targets=targets, options=options)


def wire_document(
    workflow: Workflow,
    positions: Mapping[str, SourcePosition],
    *,
    manager: PluginManager,
    allow_imports: bool,
    source: str | None = None,
) -> Workflow:
    """``workflow``, built from a document, with its edges type-checked as
    ``WorkflowBuilder.build()`` checks them: the same workflow when every edge fits, one
    with converter nodes where a lossless chain bridges an edge.

    :param positions: where the document writes each edge group, by group id (a group
        the loader gave none is named by its JSON path in the spec).
    :raises LoadError: every edge whose target cannot handle what its producer sends,
        each a :class:`~plait.DocumentError` at the edge's position.
    """
    spec = workflow.spec
    executors = dict(workflow.executors)
    groups = list(spec.edge_groups)
    problems = wire_types(executors, groups, manager)
    if problems:
        index = {group.id: i for i, group in enumerate(spec.edge_groups)}
        raise LoadError(
            [
                DocumentError(
                    problem.message,
                    positions.get(problem.group)
                    or SourcePosition(source=source, path=f"/edge_groups/{index[problem.group]}"),
                )
                for problem in problems
            ],
            source=source,
        )
    if len(executors) == len(spec.nodes):
        return workflow
    from ._converter_nodes import converter_node

    added = [ex for node_id, ex in executors.items() if node_id not in workflow.executors]
    nodes = (*spec.nodes, *(converter_node(ex) for ex in added))
    wired = attrs.evolve(spec, nodes=nodes, edge_groups=tuple(groups))
    return Workflow(
        wired,
        executors,
        edge_params=workflow.edge_params,
        plugin_manager=manager,
        allow_imports=allow_imports,
    )
