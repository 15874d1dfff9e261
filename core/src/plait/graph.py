"""The compiled graph: routing tables derived once from a workflow, shared by its runs.

The runner and the checkpointer depend on this module, never on :mod:`plait.workflow`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .executor import Executor
from .routing import EdgeRunner
from .spec import WorkflowSpec

if TYPE_CHECKING:
    from .plugins import PluginManager

__all__ = ["CompiledGraph", "PluginEnv"]


class PluginEnv:
    """The :class:`~plait.routing.RouterEnv` routers see while a workflow compiles."""

    def __init__(self, manager: PluginManager) -> None:
        self.manager = manager

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
        return self.manager.registry(kind).get(name, what=what)


class CompiledGraph:
    """Routing tables derived once from a workflow, shared by its runs."""

    def __init__(
        self,
        spec: WorkflowSpec,
        executors: Mapping[str, Executor],
        edge_runners: Mapping[str, EdgeRunner],
        plugin_manager: PluginManager,
    ) -> None:
        self.spec = spec
        self.executors = dict(executors)
        self.edge_runners = dict(edge_runners)
        routes: dict[str, list[tuple[str, EdgeRunner]]] = {}
        for group in spec.edge_groups:
            for source in group.sources:
                routes.setdefault(source, []).append((group.id, self.edge_runners[group.id]))
        self.routes_from = {k: tuple(v) for k, v in routes.items()}
        self.flushers = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.needs_flush
        )
        self.stateful = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.stateful
        )
        # per-executor limits the executors themselves declare (run options may override)
        self.default_concurrency = {
            eid: ex.max_concurrency
            for eid, ex in self.executors.items()
            if ex.max_concurrency and ex.max_concurrency > 1
        }
        self.default_visit_limits = {
            eid: ex.max_visits for eid, ex in self.executors.items() if ex.max_visits
        }
        self.plugin_manager = plugin_manager

    @functools.cached_property
    def signature(self) -> str:
        """The spec's topology signature, computed once."""
        return self.spec.signature()

    @functools.cached_property
    def reach(self) -> dict[str, frozenset[str]]:
        """Executor id -> every executor reachable from it (itself included)."""
        return {nid: frozenset(self.spec.reachable_from(nid)) for nid in self.spec.node_ids}
