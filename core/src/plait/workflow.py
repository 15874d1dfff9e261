"""``Workflow``: an immutable, runnable graph.

Builders (the ``plait-builders`` plugin) and front-ends produce a :class:`~plait.spec.WorkflowSpec`
plus the executor objects; :class:`Workflow` checks the two against each other and the
installed routers, reports every problem at once, and compiles the routing tables the
runner uses. A built workflow can be run any number of times, concurrently: each run has
its own state.

.. versionadded:: 0.1
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import attrs

from .errors import PlaitError, WorkflowRunError, WorkflowValidationError
from .events import RunFinished, RunStarted, RunStatus, WorkflowEvent
from .executor import Executor
from .plugins import PluginManager, get_plugin_manager
from .routing import EdgeRunner
from .runner import Runner, RunOptions, RunState
from .spec import WorkflowSpec

__all__ = ["Workflow", "WorkflowRunResult", "CompiledGraph"]


@attrs.define
class WorkflowRunResult:
    """What a run produced.

    :param run_id: the run's id.
    :param status: ``idle``, ``idle_with_pending_requests`` or ``failed``.
    :param outputs: workflow outputs in the order they were yielded.
    :param events: the events collected (lifecycle events unless ``events="all"``).
    :param error: the error that failed the run, else ``None``.
    :param supersteps: how many supersteps ran.
    :param pending_requests: requests for outside input the run is waiting on.
    """

    run_id: str
    status: RunStatus
    outputs: list[Any]
    events: list[WorkflowEvent]
    error: BaseException | None = None
    supersteps: int = 0
    pending_requests: list[Any] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        """True unless the run failed."""
        return self.status is not RunStatus.FAILED


class _Env:
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
        self.plugin_manager = plugin_manager
        self.observe_supersteps = plugin_manager.observers()[1]

    @functools.cached_property
    def reach(self) -> dict[str, frozenset[str]]:
        """Executor id -> every executor reachable from it (itself included)."""
        return {nid: frozenset(self.spec.reachable_from(nid)) for nid in self.spec.node_ids}


class Workflow:
    """An immutable, runnable workflow.

    :param spec: the graph as data.
    :param executors: the executor object for every node of ``spec``, by id.
    :param edge_params: per edge group id, the callables its router needs (conditions,
        selection functions, switch predicates) — what cannot live in JSON.
    :param plugin_manager: where routers come from (default: the process-wide one).
    :raises WorkflowValidationError: listing every problem found.
    """

    def __init__(
        self,
        spec: WorkflowSpec,
        executors: Mapping[str, Executor],
        *,
        edge_params: Mapping[str, Mapping[str, Any]] | None = None,
        plugin_manager: PluginManager | None = None,
    ) -> None:
        manager = plugin_manager or get_plugin_manager()
        routers = manager.registry("router")
        problems = spec.problems(routers=routers.names())
        for node in spec.nodes:
            ex = executors.get(node.id)
            if ex is None:
                problems.append(f"no executor object for node {node.id!r}")
            elif ex.id != node.id:
                problems.append(f"executor object {ex.id!r} is registered as node {node.id!r}")
        for extra in sorted(set(executors) - set(spec.node_ids)):
            problems.append(f"executor {extra!r} is not a node of the spec")
        params = dict(edge_params or {})
        edge_runners: dict[str, EdgeRunner] = {}
        env = _Env(manager)
        for group in spec.edge_groups:
            if group.router not in routers:
                continue  # reported by spec.problems
            try:
                router = routers.get(group.router)
                edge_runners[group.id] = router.create(group, params.get(group.id, {}), env)
            except (PlaitError, ValueError, TypeError) as exc:
                problems.append(f"edge group {group.id!r}: {exc}")
        if problems:
            raise WorkflowValidationError(problems, workflow=spec.name)
        self._spec = spec
        self._edge_params = params
        self._graph = CompiledGraph(spec, executors, edge_runners, manager)

    # -- inspection --------------------------------------------------------------------

    @property
    def spec(self) -> WorkflowSpec:
        """The graph as data (JSON-serialisable)."""
        return self._spec

    @property
    def name(self) -> str | None:
        """The workflow's name."""
        return self._spec.name

    @property
    def executors(self) -> Mapping[str, Executor]:
        """Executor objects by id (shared by all runs; do not mutate)."""
        return self._graph.executors

    @property
    def edge_params(self) -> Mapping[str, Mapping[str, Any]]:
        """The callables each edge group's router was created with, by group id."""
        return self._edge_params

    def signature(self) -> str:
        """The topology signature (see :meth:`WorkflowSpec.signature`)."""
        return self._spec.signature()

    def __repr__(self) -> str:
        return (
            f"<Workflow {self.name or '(unnamed)'}: {len(self._spec.nodes)} executors, "
            f"{len(self._spec.edge_groups)} edge groups>"
        )

    # -- composition and export ------------------------------------------------------------

    def as_connection(self, prefix: str | None = None) -> Any:
        """This workflow as a fragment another builder can compose (``add_workflow``).

        The topology is cloned; this workflow is never changed.

        :raises PlaitError: when no installed plugin (``plait-builders``) provides it.
        """
        manager = self._graph.plugin_manager
        manager.load_entrypoints()
        connection = manager.pm.hook.plait_workflow_as_connection(workflow=self, prefix=prefix)
        if connection is None:
            raise PlaitError(
                "no installed plugin turns workflows into connections; "
                "install it with: pip install plait-builders"
            )
        return connection

    def as_executor(
        self,
        id: str | None = None,
        *,
        adapter: Callable[[Any], Any] | None = None,
        allow_direct_output: bool = False,
    ) -> Executor:
        """Wrap this whole workflow as one executor of another workflow.

        The inner workflow keeps its own supersteps (it runs at its own pace inside one
        superstep of the outer one); its outputs become messages of the wrapping executor
        (passed through ``adapter`` first), or outer workflow outputs when
        ``allow_direct_output`` is set.
        """
        from .nested import WorkflowExecutor

        return WorkflowExecutor(
            self, id=id, adapter=adapter, allow_direct_output=allow_direct_output
        )

    def to_mermaid(self) -> str:
        """The graph as a Mermaid flowchart (prefixes become subgraphs)."""
        from .export import to_mermaid

        return to_mermaid(self._spec)

    def to_dot(self) -> str:
        """The graph in Graphviz DOT (prefixes become clusters)."""
        from .export import to_dot

        return to_dot(self._spec)

    # -- running -----------------------------------------------------------------------

    async def run(self, message: Any, **options: Any) -> WorkflowRunResult:
        """Run the workflow on ``message`` and return its result.

        Options are those of :class:`~plait.runner.RunOptions`; an unknown one is an error.
        By default a failed run raises its :class:`~plait.errors.WorkflowRunError`, whose
        ``result`` attribute holds the failed result; ``raise_on_failure=False`` returns it.
        """
        opts = RunOptions.from_kwargs(self._spec.options, options)
        events: list[WorkflowEvent] = []
        result = await self._execute(message, opts, events.append, detail=opts.events == "all")
        result.events = events
        return self._finish(result, opts)

    async def stream(self, message: Any, **options: Any) -> AsyncIterator[WorkflowEvent]:
        """Run the workflow, yielding every event as it happens.

        Iterate to the end, or wrap in ``contextlib.aclosing`` when you may stop early.
        A failed run yields its ``RunFinished(status=failed)`` event, then raises.
        """
        opts = RunOptions.from_kwargs(self._spec.options, options)
        send, receive = anyio.create_memory_object_stream[WorkflowEvent](math.inf)
        results: list[WorkflowRunResult] = []

        async def produce() -> None:
            async with send:
                detail = opts.events != "lifecycle"
                results.append(
                    await self._execute(message, opts, send.send_nowait, detail=detail, live=True)
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            async with receive:
                async for event in receive:
                    yield event
        self._finish(results[0], opts)

    def run_sync(
        self, message: Any, *, backend: str = "asyncio", **options: Any
    ) -> WorkflowRunResult:
        """Run from synchronous code (a script): ``anyio.run`` around :meth:`run`."""
        return anyio.run(functools.partial(self.run, message, **options), backend=backend)

    async def _execute(
        self,
        message: Any,
        opts: RunOptions,
        emit: Callable[[WorkflowEvent], None] | None,
        *,
        detail: bool,
        live: bool = False,
    ) -> WorkflowRunResult:
        run_id = opts.run_id or uuid.uuid4().hex
        state = RunState(run_id, emit)
        manager = self._graph.plugin_manager
        started, _, finished = manager.observers()
        if emit is not None:
            emit(RunStarted(run_id, self.name))
        if started:
            manager.notify_run_started(run_id, self)
        runner = Runner(self._graph, opts, state, detail=detail, live=live)
        error: WorkflowRunError | None = None
        try:
            status = await runner.run({self._spec.start: [message]})
        except WorkflowRunError as exc:
            status, error = RunStatus.FAILED, exc
        if emit is not None:
            emit(RunFinished(run_id, status, state.superstep, error))
        if finished:
            manager.notify_run_finished(run_id, status.value, error)
        return WorkflowRunResult(
            run_id=run_id,
            status=status,
            outputs=state.outputs,
            events=[],
            error=error,
            supersteps=state.superstep,
            pending_requests=list(state.pending_requests.values()),
        )

    @staticmethod
    def _finish(result: WorkflowRunResult, opts: RunOptions) -> WorkflowRunResult:
        if result.error is not None and opts.raise_on_failure:
            setattr(result.error, "result", result)
            raise result.error
        return result
