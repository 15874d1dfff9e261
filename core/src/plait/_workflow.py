"""``Workflow``: an immutable, runnable graph.

Builders (the ``plait-builders`` plugin) and front-ends produce a :class:`~plait.WorkflowSpec`
plus the executor objects; :class:`Workflow` checks the two against each other and the
installed routers, reports every problem at once, and compiles the routing tables the
runner uses. A built workflow can be run any number of times, concurrently: each run has
its own state.

Where each executor invocation runs is the workflow's too. By default every invocation
runs on the driver, in the runner's anyio tasks; a node (or a whole workflow) may name
another placement — ``placement="ray"`` from ``plait-ray`` — registered through
``plait_register_placements``, with one method, ``async invoke(graph, executor_id,
handler, message, ctx)``: run the invocation somewhere and apply what it did to ``ctx``
exactly as a local invocation does. Placements are resolved when a workflow compiles
(:func:`place`): the compiled graph carries, per placed executor, its placement and what
runs call instead of it (a :class:`PlacedExecutor`), so the runner knows nothing of
placements, and a graph whose executors all run locally costs nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import typing_extensions

from . import _routing
from ._building import BuildContext
from ._context import WorkflowContext
from ._errors import (
    NotPortableError,
    PlaitError,
    WorkflowRunError,
    WorkflowValidationError,
)
from ._executor import Executor, Handler
from ._graph import CompiledGraph
from ._options import DEFAULT_MAX_SUPERSTEPS, RunOptions
from ._plugins import PluginManager, get_plugin_manager
from ._spec import NodeSpec, WorkflowSpec

# what running needs (asyncio, cattrs, events …) is imported by the methods that run
if TYPE_CHECKING:
    import os
    from contextlib import AbstractAsyncContextManager
    from types import ModuleType

    from anyio.abc import TaskGroup

    from ._events import RunStatus, WorkflowEvent, WorkflowRunResult
    from ._routing import EdgeRunner
    from ._state import PendingRequest, RunState
    from ._streaming import EventStream

__all__ = [
    "compiled_graph",
    "Documents",
    "Durability",
    "Workflow",
    "load",
    "with_placement",
    "LOCAL",
    "Placement",
    "PlacedExecutor",
    "place",
    "placement_of",
]


# -- placement: where each executor invocation runs ----------------------------------------

#: The built-in placement: anyio tasks on the driver.
LOCAL = "local"


@runtime_checkable
class Placement(Protocol):
    """Where executor invocations run (registered by name through
    ``plait_register_placements``).
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


def placement_of(graph: CompiledGraph, executor_id: str, node: NodeSpec | None = None) -> str:
    """The placement name of ``executor_id`` in a compiled workflow graph:
    :data:`LOCAL` for an executor marked ``local = True`` (it holds sockets, files …), else
    its node's ``placement`` (``node``, when the caller has it), else the workflow's, else
    :data:`LOCAL`."""
    executor = graph.executors[executor_id]
    if getattr(executor, "local", False) is True:
        return LOCAL
    if node is None:
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
    """
    spec = graph.spec
    if spec.placement in (None, LOCAL) and all(
        node.placement in (None, LOCAL) for node in spec.nodes
    ):
        return
    registry = graph.plugin_manager.registry("placement")
    placements: dict[str, Any] = {}
    nodes = {node.id: node for node in spec.nodes}  # (spec.node looks one up by scanning)
    for eid in graph.executors:
        node = nodes[eid]
        name = placement_of(graph, eid, node)
        if name == LOCAL:
            continue
        placement = registry.get(name, what=f"executor {eid!r}")
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


# -- the workflow --------------------------------------------------------------------------


@runtime_checkable
class Durability(Protocol):
    """What makes runs durable: writing checkpoints during a run, and rebuilding a run from
    them. The kernel runs supersteps; a durability plugin (``plait-durable``) gives one of
    these (the ``plait_durability`` hook), and :class:`Workflow`
    calls it for ``run(checkpoint=...)``, :meth:`~Workflow.resume`,
    :meth:`~Workflow.pending_requests`, :attr:`~Workflow.fingerprint` and a nested
    workflow's wait for outside input. It checkpoints through the runner's commit seam
    (:class:`~plait.spi.RunCommit`).

    What a checkpoint and a checkpoint store are is the durability's own
    (``plait_durable.Checkpoint``, ``plait_durable.CheckpointStore``): the kernel passes
    stores and checkpoints through without looking inside, and opens no store itself.
    """

    def fingerprint(self, graph: CompiledGraph) -> Mapping[str, Any]:
        """The workflow's fingerprint as its checkpoints record it (JSON-ready)."""
        ...

    async def run(
        self,
        graph: CompiledGraph,
        state: RunState,
        inbox: dict[str, list[Any]],
        opts: RunOptions,
        *,
        live: bool,
        parent_id: str | None,
    ) -> RunStatus:
        """Run to the end from ``inbox``, writing checkpoints to ``opts.checkpoint`` as
        ``opts.durability`` says; ``parent_id`` is the checkpoint a resumed run goes on
        from."""
        ...

    def opened(self, checkpoint: Any) -> AbstractAsyncContextManager[Any]:
        """The checkpoint store ``checkpoint`` is, or the one its URL names
        (``"sqlite:///runs.db"``, through ``plait_register_checkpoint_stores``), for the
        block: the durability opens a URL and closes it however the block ends, and
        neither opens nor closes a store object. The kernel never opens a store.

        :raises UnknownNameError: no installed plugin handles the URL's scheme.
        """
        ...

    async def load(
        self, store: Any, id: str, graph: CompiledGraph, accept_changes: bool
    ) -> tuple[Any, Any]:
        """The checkpoint to resume run (or checkpoint) ``id`` from in ``store``, and its
        state as :meth:`restore` takes it; checks the graph's topology and fingerprint.
        The kernel reads the checkpoint's ``run_id``, ``checkpoint_id``, ``superstep`` and
        ``metadata``."""
        ...

    def restore(
        self,
        graph: CompiledGraph,
        state: RunState,
        data: Any,
        responses: Mapping[str, Any],
    ) -> dict[str, list[Any]]:
        """Rebuild ``state`` from ``data`` and deliver ``responses`` (answers to pending
        requests, by request id); the next superstep's deliveries."""
        ...

    def snapshot(self, graph: CompiledGraph, state: RunState, status: str) -> Any:
        """The state of a run that ended ``status`` as JSON-ready data :meth:`restore`
        takes."""
        ...

    async def pending_requests(
        self,
        graph: CompiledGraph,
        id: str,
        checkpoint: Any,
        accept_changes: bool,
    ) -> list[PendingRequest]:
        """The requests stored run (or checkpoint) ``id`` waits for."""
        ...


class Workflow:
    """An immutable, runnable workflow.

    :param spec: the graph as data.
    :param executors: the executor object for every node of ``spec``, by id.
    :param edge_params: per edge group id, the callables its router needs (conditions,
        selection functions, switch predicates) — what cannot live in JSON.
    :param plugin_manager: where routers come from (default: the process-wide one).
    :param version: the workflow's version (:attr:`WorkflowSpec.workflow_version`; given
        here, it replaces the spec's): what its checkpoints record and migrations
        (``plait-versions``) go from and to.
    :raises WorkflowValidationError: listing every problem found.
    """

    def __init__(
        self,
        spec: WorkflowSpec,
        executors: Mapping[str, Executor],
        *,
        edge_params: Mapping[str, Mapping[str, Any]] | None = None,
        plugin_manager: PluginManager | None = None,
        allow_imports: bool = True,
        version: int | None = None,
    ) -> None:
        if version is not None:  # checked by the spec's validator
            spec = attrs.evolve(spec, workflow_version=version)
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
        env = BuildContext(manager=manager, allow_imports=allow_imports)
        # each router's ``create``, looked up once per router name (a lazily registered
        # router answers through a proxy; a 1,000-edge chain asks ``direct`` 1,000 times)
        creators: dict[str, Callable[..., EdgeRunner]] = {}
        checked: set[type] = set()  # the kinds of edge runner found complete
        for group in spec.edge_groups:
            create = creators.get(group.router)
            if create is None and group.router not in routers:
                continue  # reported by spec.problems
            try:
                if create is None:
                    create = creators[group.router] = routers.get(group.router).create
                runner = edge_runners[group.id] = create(group, params.get(group.id, {}), env)
            except (PlaitError, ValueError, TypeError) as exc:  # names the group's problem
                problems.append(f"edge group {group.id!r}: {exc}")
                continue
            if type(runner) not in checked:
                members = sorted(typing_extensions.get_protocol_members(_routing.EdgeRunner))
                missing = [name for name in members if not hasattr(runner, name)]
                if missing:
                    problems.append(
                        f"edge group {group.id!r}: router {group.router!r} of "
                        f"{routers.entry(group.router).distribution} made an edge runner "
                        f"without {', '.join(missing)} (see plait.spi.EdgeRunner)"
                    )
                else:
                    checked.add(type(runner))
        if problems:
            raise WorkflowValidationError(problems, workflow=spec.name)
        self._spec = spec
        self._edge_params = params
        self._manager = manager
        self._graph = CompiledGraph(spec, executors, edge_runners, manager)
        place(self._graph)  # resolved now: runs call what the graph carries

    @classmethod
    def from_spec(
        cls,
        spec: WorkflowSpec,
        executors: Mapping[str, Any] | None = None,
        *,
        allow_imports: bool = True,
        plugin_manager: PluginManager | None = None,
        source: str | None = None,
    ) -> Workflow:
        """Rebuild a runnable workflow from data — in this process or a fresh one.

        Each node gets the Python object passed in ``executors`` under its id or under the
        name its document used (``NodeSpec.uses``); any other node is built by its executor
        kind from its JSON config. Conditions and selections recorded as expressions are
        compiled, those recorded as import paths imported. The result's signature equals
        the spec's.

        :param executors: Python executors, executor classes or ``async def`` functions by
            node id or by name.
        :param allow_imports: whether code the spec names may be imported (``python`` kind
            refs, condition refs). Pass ``False`` for a spec from an untrusted source.
        :raises LoadError: every node that cannot be built, with its JSON path.
        :raises WorkflowValidationError: every structural problem.
        """
        from ._building import build_executors

        manager = plugin_manager or get_plugin_manager()
        built = build_executors(
            spec,
            executors or {},
            manager=manager,
            allow_imports=allow_imports,
            source=source,
        )
        return cls(spec, built, plugin_manager=manager, allow_imports=allow_imports)

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
    def version(self) -> int | None:
        """The workflow's version (:attr:`WorkflowSpec.workflow_version`), ``None`` when
        unversioned."""
        return self._spec.workflow_version

    @property
    def executors(self) -> Mapping[str, Executor]:
        """Executor objects by id (shared by all runs; do not mutate)."""
        return self._graph.executors

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The workflow's fingerprint as its checkpoints record it (a JSON-ready copy): per
        node its kind, config, the code it names and that code's source hash, its policies;
        the edges; the declared types. Resuming a run whose fingerprint differs is refused,
        naming what changed, unless ``accept_changes=True``.
        """
        fingerprint = self._durability("Workflow.fingerprint").fingerprint(self._graph)
        return dict(json.loads(json.dumps(fingerprint)))

    @functools.cached_property
    def _run_defaults(self) -> Mapping[str, Any]:
        """The spec's run options, and for a graph without a cycle a ``max_supersteps``
        that scales with it: its longest path plus the default 100. Such a graph cannot
        loop, so the limit (there to stop a runaway cycle) must only stay out of the way
        of a long chain; with a cycle, the default stays 100."""
        defaults = dict(self._spec.options)
        if "max_supersteps" not in defaults:
            longest = self._spec.longest_path()
            if longest is not None:
                defaults["max_supersteps"] = DEFAULT_MAX_SUPERSTEPS + longest
        return defaults

    def _durability(self, what: str) -> Durability:
        """The installed durability (``plait-durable``), for ``what``.

        :raises UnknownNameError: none is installed, naming the distribution to install.
        """
        found: Durability = self._manager.durability(what)
        return found

    def _durability_for(self, opts: RunOptions, what: str) -> Durability | None:
        """The durability a run with ``opts`` needs: none without a checkpoint store (the
        ``checkpoint`` option, which the durability declares and checks)."""
        return None if opts.value("checkpoint") is None else self._durability(what)

    def placement_of(self, executor_id: str) -> str:
        """Where ``executor_id``'s invocations run: ``local`` for an executor marked
        ``local = True``, else its node's placement, else the workflow's, else ``local``.
        """
        return placement_of(self._graph, executor_id)

    @property
    def edge_params(self) -> Mapping[str, Mapping[str, Any]]:
        """The callables each edge group's router was created with, by group id."""
        return self._edge_params

    def signature(self) -> str:
        """The topology signature (see :meth:`WorkflowSpec.signature`)."""
        return self._graph.signature

    def __repr__(self) -> str:
        return (
            f"<Workflow {self.name or '(unnamed)'}: {len(self._spec.nodes)} executors, "
            f"{len(self._spec.edge_groups)} edge groups>"
        )

    # -- composition and export ------------------------------------------------------------

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
        ``allow_direct_output`` is set. The ``workflow`` executor kind (``plait-executors``)
        wraps it, as it wraps a document's nested workflow: ``kind.wrap(workflow, ...)``.

        :raises UnknownNameError: no installed plugin registers the ``workflow`` kind.
        """
        kinds = self._manager.registry("executor_kind")
        kind = kinds.get("workflow", what="Workflow.as_executor()")
        wrapped: Executor = kind.wrap(
            self, id=id, adapter=adapter, allow_direct_output=allow_direct_output
        )
        return wrapped

    def as_connection(self, prefix: str | None = None) -> Any:
        """This workflow as a fragment a builder composes: its topology cloned into a new
        builder (this workflow is not changed), with its start, exits, contract and ports.

        ``builder.add_workflow(workflow)`` does the same. The plugin that answers the
        ``plait_workflow_as_connection`` hook makes it (``plait-builders``: a
        ``plait_builders.WorkflowConnection``).

        :param prefix: the prefix its executors get when composed (default: its name).
        :raises UnknownNameError: no installed plugin answers, naming ``plait-builders``.
        """
        return self._manager.first(
            "plait_workflow_as_connection",
            "connection",
            "Workflow.as_connection()",
            workflow=self,
            prefix=prefix,
        )

    def as_agent(self, name: str | None = None, description: str = "") -> Any:
        """This workflow as an agent of a team: a participant that takes the conversation
        in and gives a message back, each turn one nested run checkpointed inside the
        team's run.

        The plugin that answers the ``plait_workflow_as_agent`` hook makes it
        (``plait-teams``: a ``plait_teams.WorkflowParticipant``).

        :param name: its name in the team (default: this workflow's name).
        :param description: what it does, for a manager that picks speakers.
        :raises UnknownNameError: no installed plugin answers, naming ``plait-teams``.
        """
        return self._manager.first(
            "plait_workflow_as_agent",
            "agent",
            "Workflow.as_agent()",
            workflow=self,
            name=name,
            description=description,
        )

    def export(self, format: str) -> str:
        """The graph as text in ``format`` (``mermaid``, ``dot`` …), by the exporter a
        plugin registered under that name (``plait-export`` ships both).

        :raises UnknownNameError: no installed exporter has that name.
        """
        exporter = self._manager.registry("exporter").get(
            format, what=f"exporting workflow {self.name or '(unnamed)'}"
        )
        text: str = exporter.export(self._spec)
        return text

    def to_mermaid(self) -> str:
        """The graph as a Mermaid flowchart: ``export("mermaid")``."""
        return self.export("mermaid")

    def to_dot(self) -> str:
        """The graph in Graphviz DOT: ``export("dot")``."""
        return self.export("dot")

    # -- running -----------------------------------------------------------------------

    async def run(self, message: Any, **options: Any) -> WorkflowRunResult:
        """Run the workflow on ``message`` and return its result.

        Options are those of :class:`~plait.spi.RunOptions`; an unknown one is an error.
        By default a failed run raises its :class:`~plait.WorkflowRunError`, whose
        ``result`` attribute holds the failed result; ``raise_on_failure=False`` returns it.
        With ``checkpoint=`` (a store or a store URL such as ``"sqlite:///runs.db"``) a
        checkpoint is written per superstep, as ``durability`` says.
        """
        from ._state import RunState, new_run_id

        opts = RunOptions.from_kwargs(self._run_defaults, options, self._manager)
        durability = self._durability_for(opts, "Workflow.run(checkpoint=...)")
        events: list[WorkflowEvent] = []
        state = RunState(opts.run_id or new_run_id(), opts.on_event or events.append)
        inbox = {self._spec.start: [message]}
        result = await self._execute(
            state, inbox, opts, detail=opts.events == "all", durability=durability
        )
        result.events = events
        return self._finish(result, opts)

    async def resume(
        self,
        id: str,
        checkpoint: Any,
        *,
        responses: Mapping[str, Any] | None = None,
        accept_changes: bool = False,
        **options: Any,
    ) -> WorkflowRunResult:
        """Continue a run from a checkpoint — in this process or another, days later.

        :param id: a run id (resume from its latest checkpoint) or a checkpoint id.
        :param checkpoint: the checkpoint store (or its URL) the run wrote to — the same
            word as ``run(..., checkpoint=)``; the resumed run's checkpoints go there too.
            A URL is opened (and closed again) by the installed durability, after the
            options are checked: a bad one opens nothing.
        :param responses: answers to pending requests, by request id. A response of the
            wrong type raises :class:`~plait_durable.ResponseTypeError` and changes nothing.
        :param accept_changes: resume though the workflow changed since the checkpoint (else
            :class:`~plait_durable.WorkflowChangedError`; see plait-durable's fingerprint).
        :raises plait_durable.TopologyMismatchError: the checkpoint was taken on a
            different graph.
        :raises plait_durable.CheckpointNotFoundError: no such run or checkpoint.
        """
        from ._state import RunState

        durability = self._durability("Workflow.resume()")
        given = {**options, "checkpoint": checkpoint, "run_id": None}
        RunOptions.from_kwargs(self._run_defaults, given, self._manager)  # before any store
        async with durability.opened(checkpoint) as store:  # a URL: the durability's to close
            found, data = await durability.load(store, id, self._graph, accept_changes)
            given.update(checkpoint=store, run_id=found.run_id)
            opts = RunOptions.from_kwargs(self._run_defaults, given, self._manager)
            events: list[WorkflowEvent] = []
            state = RunState(found.run_id, opts.on_event or events.append)
            state.superstep = found.superstep
            state.observed = found.metadata.get("observers")
            inbox = durability.restore(self._graph, state, data, responses or {})
            result = await self._execute(
                state,
                inbox,
                opts,
                detail=opts.events == "all",
                parent_id=found.checkpoint_id,
                durability=durability,
            )
        result.events = events
        return self._finish(result, opts)

    async def pending_requests(
        self, id: str, checkpoint: Any, *, accept_changes: bool = False
    ) -> list[PendingRequest]:
        """The requests a stored run waits for (from its latest checkpoint, or checkpoint
        ``id``), without resuming it; raises as :meth:`resume` does (``accept_changes``:
        as :meth:`resume`'s)."""
        durability = self._durability("Workflow.pending_requests()")
        return await durability.pending_requests(self._graph, id, checkpoint, accept_changes)

    async def run_nested(
        self,
        message: Any = None,
        *,
        saved: Mapping[str, Any] | None = None,
        responses: Mapping[str, Any] | None = None,
        ctx: WorkflowContext[Any, Any] | None = None,
    ) -> tuple[WorkflowRunResult, dict[str, Any] | None]:
        """One run of this workflow inside an executor of another run (what
        :meth:`as_executor`'s executor and the ``workflow`` executor kind call): start on
        ``message``, or go on from ``saved`` with ``responses``. It never raises for a
        failed run (the result says ``failed``); it checkpoints as this workflow's own
        options say, and the outer run's observers see it inside the invoking executor.

        :param message: what the run starts on (ignored when ``saved`` is given).
        :param saved: what an earlier call returned for a run that waits for outside
            input: the run goes on from there.
        :param responses: answers to that run's pending requests, by request id.
        :param ctx: the context of the nesting executor's invocation: when given, the
            inner run's events reach the outer run's listeners as
            :class:`~plait.NestedEvent` events (path: the nesting executor's id, and deeper
            ones after it), in the inner run's order, as that invocation's own events
            (a retried attempt's are dropped with it). Its outputs, custom events and
            requests always; its supersteps and invocations when the outer run reports
            those (a stream, ``events="all"``, an observer).
        :return: the run's result, and — for a run that ends waiting for outside input —
            its state as JSON-ready data (a checkpoint body, made by the installed
            durability) for the outer executor to keep in its own state and pass back as
            ``saved``; else ``None``.
        :raises UnknownNameError: ``saved`` is given, or the run waits for input, and no
            durability (``plait-durable``) is installed.
        """
        from ._events import RunStatus
        from ._state import RunState, new_run_id

        opts = RunOptions.from_kwargs(
            self._run_defaults, {"raise_on_failure": False}, self._manager
        )
        forward, detail = _forwarder(ctx)
        if saved is None:
            state = RunState(new_run_id(), forward)
            inbox = {self._spec.start: [message]}
        else:
            state = RunState(saved["run_id"], forward)
            state.superstep = saved["superstep"]
            restoring = self._durability("a nested workflow answered")
            inbox = restoring.restore(self._graph, state, saved["state"], responses or {})
        checkpointing = self._durability_for(opts, "a nested workflow's checkpoint option")
        result = await self._execute(state, inbox, opts, detail=detail, durability=checkpointing)
        if result.status is not RunStatus.IDLE_WITH_PENDING_REQUESTS:
            return result, None
        keeping = self._durability("a nested workflow waiting for input")
        body = keeping.snapshot(self._graph, state, result.status.value)
        return result, {"run_id": state.run_id, "superstep": state.superstep, "state": body}

    def stream(
        self, message: Any, *, task_group: TaskGroup | None = None, **options: Any
    ) -> EventStream:
        """Run the workflow, yielding every event as it happens, in a task group: the
        stream's own (``async with workflow.stream(message) as events: async for event in
        events``; leaving the block cancels the run and waits for it) or the caller's
        (``async for event in workflow.stream(message, task_group=tg)``; leaving the loop
        or closing the iterator cancels the run). See :class:`~plait._streaming.EventStream`.

        A failed run yields its ``RunFinished(status=failed)`` event, then raises (unless
        ``raise_on_failure=False``).
        """
        from ._streaming import EventStream

        opts = RunOptions.from_kwargs(self._run_defaults, options, self._manager)
        durability = self._durability_for(opts, "Workflow.stream(checkpoint=...)")
        inbox = {self._spec.start: [message]}
        detail = opts.events != "lifecycle"

        def start(state: RunState) -> Awaitable[WorkflowRunResult]:
            return self._execute(
                state, inbox, opts, detail=detail, live=True, durability=durability
            )

        return EventStream(start, functools.partial(self._finish, opts=opts), opts, task_group)

    def run_sync(
        self, message: Any, *, backend: str = "asyncio", **options: Any
    ) -> WorkflowRunResult:
        """Run from synchronous code (a script): ``anyio.run`` around :meth:`run`."""
        import anyio

        return anyio.run(functools.partial(self.run, message, **options), backend=backend)

    async def _execute(
        self,
        state: RunState,
        inbox: dict[str, list[Any]],
        opts: RunOptions,
        *,
        detail: bool,
        live: bool = False,
        parent_id: str | None = None,
        durability: Durability | None = None,
    ) -> WorkflowRunResult:
        from ._events import RunFinished, RunStarted, RunStatus, WorkflowRunResult
        from ._runner import SUPERSTEP, Runner, schedule_named

        if opts.schedule != SUPERSTEP:  # an unknown schedule fails before the run starts
            schedule_named(self._graph, opts.schedule)
        emit = state.emit
        manager = self._manager
        if emit is not None:
            emit(RunStarted(state.run_id, self.name))
        observer = manager.observe_run(state.run_id, self, state.superstep, state.observed, opts)
        if detail and emit is not None:  # the event stream is told through the same seam
            from ._events import EventObserver
            from ._observer import combine

            observer = combine([EventObserver(emit), *([observer] if observer else [])])
        state.observer = observer
        if state.answers:  # a resume answered the run's own requests: for its observers
            take = getattr(observer, "answered", None)
            for response in state.answers:
                if take is not None and take(response):
                    state.pending_requests.pop(response.request_id, None)
            state.answers = []
        error: PlaitError | None = None
        status = RunStatus.FAILED
        try:
            if durability is None:
                status = await Runner(self._graph, opts, state, live=live).run(inbox)
            else:
                status = await durability.run(
                    self._graph, state, inbox, opts, live=live, parent_id=parent_id
                )
        except PlaitError as exc:  # the run's, a store's, a codec's, a plugin's own error
            error = exc
        except Exception as exc:
            # never a raw error out of run(): name the run and the superstep, keep the cause
            error = WorkflowRunError(
                f"run {state.run_id} failed in superstep {state.superstep}: "
                f"{type(exc).__name__}: {exc}",
                superstep=state.superstep,
            )
            error.__cause__ = exc
        except BaseException:
            # cancelled or interrupted: observers still hear that the run ended
            if observer is not None:
                observer.run_finished(RunStatus.FAILED.value, None)
            raise
        if emit is not None:
            emit(RunFinished(state.run_id, status, state.superstep, error))
        if observer is not None:
            observer.run_finished(status.value, error)
        return WorkflowRunResult(
            run_id=state.run_id,
            status=status,
            outputs=state.outputs,
            events=[],
            error=error,
            supersteps=state.superstep,
            pending_requests=list(state.pending_requests.values()),
            shared=state.shared,
            usage=observer.usage() if observer is not None else None,
        )

    @staticmethod
    def _finish(result: WorkflowRunResult, opts: RunOptions) -> WorkflowRunResult:
        if result.error is not None and opts.raise_on_failure:
            setattr(result.error, "result", result)
            raise result.error
        return result


def _forwarder(
    ctx: WorkflowContext[Any, Any] | None,
) -> tuple[Callable[[WorkflowEvent], None] | None, bool]:
    """``(emit, detail)`` for a nested run invoked with the outer context ``ctx``: each
    inner event becomes a :class:`NestedEvent` of the nesting executor, made through the
    outer invocation's record (so it goes out in order, with that invocation's events);
    ``detail`` when the outer run reports supersteps and invocations. ``(None, False)``
    when nobody listens to the outer run."""
    from ._events import NestedEvent

    if ctx is None:
        return None, False
    scope = ctx._run
    root = getattr(scope, "_root", scope)  # an invocation's record, or the run itself
    if getattr(root, "emit", None) is None:
        return None, False
    path = ctx.executor_id

    def forward(event: WorkflowEvent) -> None:
        if isinstance(event, NestedEvent):  # from deeper down: its path goes after ours
            event = NestedEvent(f"{path}/{event.path}", event.event)
        else:
            event = NestedEvent(path, event)
        scope.emit_custom(path, event)

    return forward, getattr(root, "observer", None) is not None


def compiled_graph(workflow: Workflow) -> CompiledGraph:
    """The compiled graph ``workflow`` runs (:class:`~plait.spi.CompiledGraph`): what a
    plugin that reads or rewrites its stored runs outside a run (``plait-versions``'
    migrations and ``plait compat``) checks them against, as the durability does."""
    return workflow._graph


def with_placement(workflow: Workflow, placement: str | None) -> Workflow:
    """A copy of ``workflow`` whose invocations all run with ``placement`` — the nodes'
    own placements are dropped; executors marked ``local = True`` stay local.
    ``plait run --placement ray`` is this.

    :raises UnknownNameError: no installed plugin provides ``placement``.
    """
    spec = workflow.spec
    if placement not in (None, LOCAL):
        # checked even when every executor stays local (and so none asks for it): a name
        # nothing provides is an error before the run, not a placement silently unused
        workflow._manager.registry("placement").get(placement, what="with_placement")
    nodes = tuple(attrs.evolve(node, placement=None) for node in spec.nodes)
    return Workflow(
        attrs.evolve(spec, placement=placement, nodes=nodes),
        dict(workflow.executors),
        edge_params=workflow.edge_params,
        plugin_manager=workflow._manager,
    )


# -- workflow documents ------------------------------------------------------------------


@runtime_checkable
class Documents(Protocol):
    """What loads workflow documents: the machinery behind :func:`load`. The kernel defines
    the loader, agent and fragment registries; a documents plugin (``plait-documents``)
    gives one of these (the ``plait_documents`` hook): it reads the
    text, picks the loader, resolves the document's agent names, checks the capabilities the
    document needs against the caller's grants, and builds the workflow.
    """

    def load(
        self,
        source: str | os.PathLike[str],
        *,
        format: str | None = None,
        executors: Mapping[str, Any] | None = None,
        allow_imports: bool = False,
        allow: Any = None,
        agents: ModuleType | Mapping[str, Any] | None = None,
        plugin_manager: PluginManager | None = None,
        **options: Any,
    ) -> Workflow:
        """A runnable workflow from a document (the arguments of :func:`load`)."""
        ...

    def load_spec(
        self,
        source: str | os.PathLike[str],
        *,
        format: str | None = None,
        executors: Mapping[str, Any] | None = None,
        agents: ModuleType | Mapping[str, Any] | None = None,
        plugin_manager: PluginManager | None = None,
        **options: Any,
    ) -> WorkflowSpec:
        """The spec a document describes, without building it (``plait validate``)."""
        ...

    def agent_names(self, executors: Mapping[str, Any]) -> Any:
        """The agent names of a load with these ``executors`` (what a
        :class:`~plait.spi.BuildContext` made without ``agents`` gives a loader;
        ``plait_documents.AgentNames``)."""
        ...


def load(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    executors: Mapping[str, Any] | None = None,
    allow_imports: bool = False,
    allow: Any = None,
    agents: ModuleType | Mapping[str, Any] | None = None,
    plugin_manager: PluginManager | None = None,
    **options: Any,
) -> Workflow:
    """A runnable workflow from a document in any installed format.

    The kernel defines the loaders (``plait_register_loaders``); reading a document, its
    agent names and the capabilities it needs come with ``plait-documents``
    (:class:`~plait.spi.Documents`).

    :param source: the document's text, or a path to it (a ``str`` is a path only when it
        names an existing file with a known suffix).
    :param format: the loader's name (``flow``, ``dag``, ``steps`` …); default: from the
        file's suffix, else the loaders' own detection.
    :param executors: Python executors or ``async def`` functions, by the names the text
        uses — for people who load a file but write their agents in Python.
    :param allow_imports: whether the document may name Python code to import (``python``
        executor kind, ``{"ref": ...}`` conditions): the ``imports`` capability. Off by
        default: a workflow file is untrusted input.
    :param allow: the capabilities the document may use (``plait_documents.Grants``):
        ``"subprocess,network=api.example.com"``, a list of them, or ``"all"``. Nothing by
        default, so a document may use only the ``executors`` passed and the pure kinds.
    :param agents: a module whose public async functions and executors are agents the
        document may name (what ``plait run --agents MODULE`` passes), or a mapping of
        names to agents; last in the order names resolve in: ``executors``, the
        document's ``agents:`` section, the agents installed plugins publish, then these.
        Passing a module trusts that module only (it is already imported).
    :param options: options for the loader (``merge="concat_newline"`` for a flow …).
    :raises CapabilityError: the document needs a capability not granted (checked before
        any node is built or any code imported), each with its node and position.
    :raises LoadError: every problem in the document, each with its position.
    :raises UnknownNameError: ``plait-documents`` is not installed (naming it).
    """
    manager = plugin_manager or get_plugin_manager()
    documents: Documents = manager.documents("plait.load")
    return documents.load(
        source,
        format=format,
        executors=executors,
        allow_imports=allow_imports,
        allow=allow,
        agents=agents,
        plugin_manager=manager,
        **options,
    )
