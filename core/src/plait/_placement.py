"""Placement: where each executor invocation runs.

By default every invocation runs on the driver, in the runner's anyio tasks. A node (or a
whole workflow) may name another placement — ``placement="ray"`` from ``plait-ray`` — and
its invocations then run wherever that placement sends them. The runner stays on the
driver: it routes, checkpoints and applies retry policies; only invocations move.

A placement is registered through ``plait_register_placements`` and has one method,
``async invoke(graph, executor_id, handler, message, ctx)``: run the invocation somewhere
and apply what it did to ``ctx`` — the messages it sent, its outputs, custom events,
requests, its state and shared-state changes — exactly as a local invocation does. How an
invocation travels is the placement's own business (``plait_ray.remote`` encodes it with
the checkpoint codec).

Placements are resolved when a workflow compiles (:func:`place`): the compiled graph
carries, per placed executor, its placement (:attr:`CompiledGraph.placements
<plait.spi.CompiledGraph.placements>`) and what runs call instead of it (a
:class:`PlacedExecutor`); the runner knows nothing of placements. A graph whose executors
all run locally costs nothing: its runs call its executors as they are.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._context import WorkflowContext
from ._errors import NotPortableError
from ._executor import Executor, Handler

if TYPE_CHECKING:
    from ._graph import CompiledGraph

__all__ = [
    "LOCAL",
    "Placement",
    "PlacedExecutor",
    "place",
    "placement_of",
]

#: The built-in placement: anyio tasks on the driver.
LOCAL = "local"


@runtime_checkable
class Placement(Protocol):
    """Where executor invocations run (registered by name through
    ``plait_register_placements``).

    .. versionadded:: 0.1
    """

    async def invoke(
        self,
        graph: CompiledGraph,
        executor_id: str,
        handler: Handler,
        message: Any,
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        """Run ``handler`` of ``executor_id`` on ``message`` somewhere, then apply its
        effects to ``ctx``. Raise what the handler raised (or a
        :class:`~plait.PlaitError` saying where the invocation was lost); the runner
        retries it under the executor's policy like a local failure."""
        ...


# -- choosing placements ------------------------------------------------------------


def placement_of(graph: CompiledGraph, executor_id: str) -> str:
    """The placement name of ``executor_id`` in a compiled workflow graph:
    :data:`LOCAL` for an executor marked ``local = True`` (it holds sockets, files …), else
    its node's ``placement``, else the workflow's, else :data:`LOCAL`."""
    executor = graph.executors[executor_id]
    if getattr(executor, "local", False) is True:
        return LOCAL
    node = graph.spec.node(executor_id)
    return node.placement or graph.spec.placement or LOCAL


def place(graph: CompiledGraph) -> None:
    """Resolve the placements of ``graph`` (what compiling a workflow does): every executor
    placed elsewhere than :data:`LOCAL` gets its placement in ``graph.placements`` and a
    :class:`PlacedExecutor` in ``graph.run_executors``; a graph that places nothing is
    left as it is (its runs call its executors directly).

    :raises UnknownNameError: a node names a placement no installed plugin registers
        (naming the distribution that provides it, when a first-party one does).
    :raises NotPortableError: a placed node cannot be rebuilt from data elsewhere.

    .. versionadded:: 0.1
    """
    spec = graph.spec
    if spec.placement in (None, LOCAL) and all(
        node.placement in (None, LOCAL) for node in spec.nodes
    ):
        return
    registry = graph.plugin_manager.registry("placement")
    placements: dict[str, Any] = {}
    for eid in graph.executors:
        name = placement_of(graph, eid)
        if name == LOCAL:
            continue
        placement = registry.get(name, what=f"executor {eid!r}")
        node = spec.node(eid)
        if node.nonportable is not None:
            raise NotPortableError(
                f"executor {eid!r} cannot run with placement {name!r}: {node.nonportable}; "
                "a placed executor is rebuilt from its spec elsewhere (use a module-level "
                "class or function, or mark it local = True)"
            )
        placements[eid] = placement
    if placements:
        graph.placements = placements
        graph.run_executors = {
            eid: PlacedExecutor(graph, ex, placements[eid]) if eid in placements else ex
            for eid, ex in graph.executors.items()
        }


class PlacedExecutor:
    """Stands in for a placed executor during runs: handler lookup (and so an unhandled
    message) stays on the driver; each handler's call goes to the placement.

    .. versionadded:: 0.1
    """

    def __init__(self, graph: CompiledGraph, executor: Executor, placement: Any) -> None:
        self.graph = graph
        self.executor = executor
        self.placement = placement
        self._handlers: dict[int, Handler] = {}

    @property
    def id(self) -> str:
        return self.executor.id

    @property
    def input_types(self) -> Any:
        return self.executor.input_types

    def find_handler(self, message: Any) -> Handler | None:
        """The executor's handler for ``message``, with a call that goes to the placement."""
        found = self.executor.find_handler(message)
        if found is None:
            return None
        placed = self._handlers.get(id(found))
        if placed is None:
            placed = self._handlers[id(found)] = self._placed(found)
        return placed

    def _placed(self, found: Handler) -> Handler:
        graph, eid, invoke = self.graph, self.executor.id, self.placement.invoke

        async def call(message: Any, ctx: WorkflowContext[Any, Any]) -> None:
            await invoke(graph, eid, found, message, ctx)

        return Handler(
            found.name, found.input_type, found.output_types, found.workflow_output_types, call
        )

    def __repr__(self) -> str:
        return f"<PlacedExecutor {self.executor.id!r} on {self.placement!r}>"
