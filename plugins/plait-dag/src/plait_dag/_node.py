"""The ``dag.node`` executor kind: one node of a JSON DAG, with its agent, its skip
condition and its outgoing connections.

The run context travels in the messages: a node receives a :class:`DagMessage` (the whole
run context, the keys its agent may see, the open parallel forks and the loop counters),
runs its agent on the context — or only on the ``context_passed`` keys — merges the dict
of updates the agent returns into the context, and sends the result to the target of the
first of its connections whose condition holds (every parallel one that holds). Messages
are plain data, so a checkpoint holds everything a resumed run needs, and two runs of one
workflow never share anything.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, cast

import attrs
from plait import (
    ConfigError,
    Executor,
    ExpressionError,
    FunctionExecutor,
    PlaitError,
    RequestResponse,
    SourcePosition,
    WorkflowContext,
    handler,
)
from plait.spi import BuildContext, CompiledExpression, as_executor, compile_expression
from plait_documents import Capability, check_config, kind_capabilities
from plait_expr import expression_failed

from .errors import DagLoopError, DagRunError

__all__ = ["DagMessage", "DagNode", "DagNodeKind"]


@attrs.frozen(eq=True, hash=False)
class DagMessage:
    """What one DAG node sends the next: JSON-like data only.

    :param context: the whole run context (never mutated: every change makes a new dict).
    :param passed: the keys of ``context`` the receiving node's agent sees (the
        connection's ``context_passed``), or ``None`` for all of them.
    :param forks: the open parallel forks, innermost last: each ``{"base": context at the
        fork, "updates": what this branch changed since}``.
    :param loops: how often each declared loop was taken, by its connection index.
    """

    context: dict[str, Any]
    passed: list[str] | None = None
    forks: list[dict[str, Any]] = attrs.field(factory=list)
    loops: dict[str, int] = attrs.field(factory=dict)


# -- expressions ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def compiled(text: str, manager: Any) -> CompiledExpression:
    """``text`` compiled once per plugin manager (the loader and every build share it)."""
    return compile_expression(text, manager=manager)


def truthy(value: Any) -> bool:
    """The expression language's truthiness (docs/expressions.md): ``false``, ``null``,
    ``0``, ``""``, ``[]`` and ``{}`` are false, everything else is true."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, dict, tuple)):
        return len(value) > 0
    return True


def _copy(value: Any) -> Any:
    """A copy of JSON-like ``value`` deep enough that an agent mutating what it got cannot
    change the run context other nodes (or a checkpoint) see."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# -- the executor --------------------------------------------------------------------------


class _Route:
    """One outgoing connection, ready to evaluate."""

    __slots__ = (
        "condition",
        "loop_key",
        "max_iterations",
        "parallel",
        "passed",
        "resets",
        "target",
        "where",
    )

    def __init__(self, data: Mapping[str, Any], manager: Any) -> None:
        self.target: str = data["target"]
        text = data.get("condition")
        self.condition = compiled(text, manager) if text is not None else None
        passed = data.get("context_passed")
        self.passed: list[str] | None = list(passed) if passed is not None else None
        self.parallel = bool(data.get("parallel", False))
        self.where = f"/connections/{data['connection']}"
        self.max_iterations: int | None = data.get("max_iterations")
        self.loop_key = str(data["connection"]) if self.max_iterations is not None else None
        self.resets = tuple(str(i) for i in data.get("resets", ()))


class _AgentContext:
    """The context an agent's handler gets: what it sends is captured as its updates, and
    the ids of the requests it asks (an agent that runs a nested workflow, such as a team,
    passes its inner run's requests out); everything else (state, shared state, outputs,
    events) is the node's own context."""

    __slots__ = ("_outer", "asked", "sent")

    def __init__(self, outer: WorkflowContext[Any, Any]) -> None:
        self._outer = outer
        self.sent: list[Any] = []
        self.asked: list[str] = []

    async def send_message(self, message: Any, target: str | None = None) -> None:
        self.sent.append(message)

    async def request_info(self, request: Any, response_type: Any) -> str:
        request_id: str = await self._outer.request_info(request, response_type)
        self.asked.append(request_id)
        return request_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._outer, name)


class DagNode(Executor):
    """One node of a JSON DAG (what the ``dag.node`` kind builds).

    :param id: the node's id.
    :param agent: the executor that does the node's work (a user's agent, a sub-workflow
        as an executor), or ``None`` for a node that only routes (a join without agent).
    :param agent_name: how the document names the agent, for errors.
    :param skip_condition: the compiled skip condition, if any.
    :param routes: the outgoing connections, in declaration order.
    :param join: the merge strategy of a join node, else ``None``.
    """

    def __init__(
        self,
        id: str,
        *,
        agent: Executor | None,
        agent_name: str | None,
        skip_condition: CompiledExpression | None,
        routes: Sequence[_Route],
        join: Any = None,
        join_name: str | None = None,
    ) -> None:
        self.agent = agent
        self.agent_name = agent_name
        self.skip_condition = skip_condition
        self.routes = tuple(routes)
        self.forks = any(r.parallel for r in self.routes)
        self.join = join
        self.join_name = join_name
        super().__init__(
            id,
            retry=getattr(agent, "retry", None),
            timeout=getattr(agent, "timeout", None),
        )

    # -- handlers ------------------------------------------------------------------------

    @handler
    async def on_input(
        self, message: dict[str, Any], ctx: WorkflowContext[DagMessage, dict[str, Any]]
    ) -> None:
        """The run's input (the entry node), or a join's merged branches."""
        if self.join is not None:
            await self._joined(message, ctx)
        else:
            await self._visit(message, None, [], {}, ctx)

    @handler
    async def on_message(
        self, message: DagMessage, ctx: WorkflowContext[DagMessage, dict[str, Any]]
    ) -> None:
        """The context, sent on by the node before."""
        await self._visit(message.context, message.passed, message.forks, message.loops, ctx)

    @handler
    async def on_answer(
        self, response: RequestResponse, ctx: WorkflowContext[DagMessage, dict[str, Any]]
    ) -> None:
        """An answer to a request the node's agent asked (a team's human, a nested
        workflow's request): the agent takes it (its own ``RequestResponse`` handler, such
        as a nested workflow's, which resumes the inner run), and the visit that waited goes
        on with the agent's updates."""
        waiting: dict[str, dict[str, Any]] = ctx.state.setdefault("waiting", {})
        visit = waiting.pop(response.request_id, None)
        agent = self.agent
        found = agent.find_handler(response) if agent is not None else None
        if visit is None or found is None:
            raise DagRunError(
                f"node {self.id!r}: an answer came to request {response.request_id!r}, "
                "which its agent did not ask",
                executor_id=self.id,
                superstep=ctx.superstep,
            )
        context, forks, loops = visit["context"], visit["forks"], visit["loops"]
        updates = await self._agent_turn(found, response, visit, ctx)
        if updates is None:
            return
        await self._go_on(context, updates, forks, loops, ctx)

    # -- one visit -----------------------------------------------------------------------

    async def _visit(
        self,
        context: dict[str, Any],
        passed: list[str] | None,
        forks: list[dict[str, Any]],
        loops: dict[str, int],
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        skip = self.skip_condition
        if self.agent is not None and (
            skip is None or not self._holds(skip, context, "skip_condition", ctx)
        ):
            updates = await self._call_agent(context, passed, forks, loops, ctx)
            if updates is None:  # the agent waits for outside input: on_answer goes on
                return
            await self._go_on(context, updates, forks, loops, ctx)
            return
        await self._route(context, forks, loops, ctx)

    async def _go_on(
        self,
        context: dict[str, Any],
        updates: dict[str, Any],
        forks: list[dict[str, Any]],
        loops: dict[str, int],
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        """Merge the agent's updates into the context (and the open fork's), then route."""
        if updates:
            context = {**context, **updates}
            if forks:
                top = forks[-1]
                fresh = {"base": top["base"], "updates": {**top["updates"], **updates}}
                forks = [*forks[:-1], fresh]
        await self._route(context, forks, loops, ctx)

    async def _call_agent(
        self,
        context: dict[str, Any],
        passed: list[str] | None,
        forks: list[dict[str, Any]],
        loops: dict[str, int],
        ctx: WorkflowContext[Any, Any],
    ) -> dict[str, Any] | None:
        """The agent's updates, or ``None`` when it asked for outside input and sent
        nothing: the visit is kept in the node's state under each request it asked, for
        :meth:`on_answer`."""
        agent = cast(Executor, self.agent)
        if passed is None:
            view = _copy(context)
        else:
            view = {key: _copy(context[key]) for key in passed if key in context}
        found = agent.find_handler(view)
        if found is None:
            raise DagRunError(
                f"node {self.id!r}: agent {self.agent_name!r} takes no dict (it accepts "
                f"{', '.join(map(repr, agent.input_types)) or 'nothing'}); a DAG agent takes "
                "the context as a dict and returns a dict of updates",
                executor_id=self.id,
                superstep=ctx.superstep,
            )
        visit = {"context": context, "forks": forks, "loops": loops}
        return await self._agent_turn(found, view, visit, ctx)

    async def _agent_turn(
        self, found: Any, message: Any, visit: dict[str, Any], ctx: WorkflowContext[Any, Any]
    ) -> dict[str, Any] | None:
        """Call the agent's handler ``found`` on ``message``: its updates, or ``None``
        when it asked for outside input instead (``visit`` then waits for the answers)."""
        capture = _AgentContext(ctx)
        await found.call(message, cast(WorkflowContext[Any, Any], capture))
        if capture.asked and not capture.sent:
            waiting: dict[str, dict[str, Any]] = ctx.state.setdefault("waiting", {})
            for request_id in capture.asked:
                waiting[request_id] = visit
            return None
        updates: dict[str, Any] = {}
        for sent in capture.sent:
            if sent is None:
                continue
            if not isinstance(sent, Mapping) or not all(isinstance(k, str) for k in sent):
                raise DagRunError(
                    f"node {self.id!r}: agent {self.agent_name!r} returned a "
                    f"{type(sent).__name__}; a DAG agent returns a dict of updates with "
                    "string keys (or None for no updates)",
                    executor_id=self.id,
                    superstep=ctx.superstep,
                )
            updates.update(sent)
        return updates

    def _holds(
        self,
        condition: CompiledExpression,
        context: dict[str, Any],
        what: str,
        ctx: WorkflowContext[Any, Any],
    ) -> bool:
        try:
            return truthy(condition.evaluate(context))
        except ExpressionError as exc:
            raise expression_failed(
                DagRunError,
                f"node {self.id!r}: {what} {condition.text!r}",
                exc,
                executor_id=self.id,
                superstep=ctx.superstep,
            ) from exc

    async def _route(
        self,
        context: dict[str, Any],
        forks: list[dict[str, Any]],
        loops: dict[str, int],
        ctx: WorkflowContext[Any, Any],
    ) -> None:
        taken = False
        for route in self.routes:
            if route.condition is not None and not self._holds(
                route.condition, context, f"condition of {route.where}", ctx
            ):
                continue
            counts = loops
            if route.loop_key is not None:
                count = loops.get(route.loop_key, 0) + 1
                if count > cast(int, route.max_iterations):
                    raise DagLoopError(
                        f"loop {self.id!r} -> {route.target!r} ({route.where}) went past "
                        f"max_iterations={route.max_iterations}: its condition still holds "
                        f"after {route.max_iterations} iteration(s)",
                        executor_id=self.id,
                        superstep=ctx.superstep,
                    )
                counts = {**loops, route.loop_key: count}
            elif route.resets and any(key in loops for key in route.resets):
                # entering a loop from outside starts its count afresh
                counts = {k: v for k, v in loops.items() if k not in route.resets}
            branch = forks
            if route.parallel:
                branch = [*forks, {"base": context, "updates": {}}]
            message = DagMessage(context, route.passed, branch, counts)
            await ctx.send_message(message, target=route.target)
            taken = True
            if not self.forks:
                break
        if not taken and not forks:
            # the end of the route (seed 001's get_next_node giving None): the output
            await ctx.yield_output(context)

    async def _joined(self, merged: Mapping[str, Any], ctx: WorkflowContext[Any, Any]) -> None:
        order = merged.get("order")
        outputs = merged.get("outputs")
        if not isinstance(order, list) or not isinstance(outputs, Mapping) or not order:
            raise DagRunError(
                f"join {self.id!r} got {type(merged).__name__} {merged!r}, not the branches "
                "of a parallel fork",
                executor_id=self.id,
                superstep=ctx.superstep,
            )
        branches = [outputs[source] for source in order]
        first = branches[0]
        if not all(isinstance(b, DagMessage) for b in branches):
            raise DagRunError(
                f"join {self.id!r} got a branch that is not a DAG message",
                executor_id=self.id,
                superstep=ctx.superstep,
            )
        base = first.forks[-1]["base"] if first.forks else first.context
        updates = [b.forks[-1]["updates"] if b.forks else {} for b in branches]
        try:
            value = self.join.merge(updates, list(order))
        except (TypeError, ValueError, PlaitError) as exc:
            raise DagRunError(
                f"join {self.id!r}: merge strategy {self.join_name!r} failed on the branches "
                f"{', '.join(map(repr, order))}: {exc}",
                executor_id=self.id,
                superstep=ctx.superstep,
            ) from exc
        joined = {"branches": value}
        forks = first.forks[:-1]
        if forks:
            top = forks[-1]
            forks = [*forks[:-1], {"base": top["base"], "updates": {**top["updates"], **joined}}]
        await self._visit({**base, **joined}, None, forks, first.loops, ctx)

    def __repr__(self) -> str:
        return f"<DagNode {self.id!r} agent={self.agent_name!r}>"


# -- the kind ------------------------------------------------------------------------------

_ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["target", "connection"],
    "additionalProperties": False,
    "properties": {
        "target": {"type": "string", "minLength": 1},
        "connection": {"type": "integer", "minimum": 0},
        "condition": {"type": "string"},
        "context_passed": {"type": "array", "items": {"type": "string"}},
        "parallel": {"type": "boolean"},
        "max_iterations": {"type": "integer", "minimum": 1},
        "resets": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    },
}


class DagNodeKind:
    """``dag.node``: a node of a JSON DAG. Config: ``agent`` (a name: an executor passed
    in ``executors=``, a published fragment or an executor kind) or ``workflow`` (the
    ``workflow`` kind's config: ``{"fragment": ...}`` or ``{"spec": ...}``),
    ``skip_condition``, ``join`` (a merge strategy) and ``routes`` (the outgoing
    connections, in order). The DAG loader writes it; it is data, so a spec rebuilds in
    another process.
    """

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "a JSON DAG node",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "agent": {"type": "string", "minLength": 1},
            "use": {
                "type": "object",
                "required": ["kind"],
                "properties": {"kind": {"type": "string"}, "config": {"type": "object"}},
                "additionalProperties": False,
            },
            "workflow": {"type": "object"},
            "skip_condition": {"type": "string"},
            "join": {"type": "string", "minLength": 1},
            "routes": {"type": "array", "items": _ROUTE_SCHEMA},
            "at": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "where the node is in its document: [line, column]",
            },
        },
    }

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """What the node's agent needs, as :func:`_build_agent` picks it: nothing for an
        executor the caller passed or a published fragment; else what its executor kind (or
        the ``workflow`` kind, for a sub-workflow) needs."""
        workflow, name = config.get("workflow"), config.get("agent")
        if isinstance(workflow, Mapping):
            return set(kind_capabilities("workflow", workflow, ctx))
        use = config.get("use")
        if isinstance(use, Mapping) and isinstance(use.get("kind"), str):
            inner = use.get("config")
            return set(
                kind_capabilities(use["kind"], inner if isinstance(inner, Mapping) else {}, ctx)
            )
        if not isinstance(name, str) or name in ctx.executors:
            return set()
        manager = _manager(ctx)
        if name in manager.registry("fragment") or name == "dag.node":
            return set()
        return set(kind_capabilities(name, {}, ctx))

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Schema problems, conditions that do not compile, an agent, a sub-workflow or a
        merge strategy that does not exist — every one, at its path under ``/config``."""
        if not _config_conforms(config):  # jsonschema explains what the fast check refused
            errors = check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
            if errors:
                return errors
        errors = []
        manager = _manager(ctx)
        for path, text in _expressions(config):
            try:
                compiled(text, manager)
            except ExpressionError as exc:
                errors.append(_error(ctx, f"{text!r} does not parse: {exc.reason}", path))
        if "agent" in config and "workflow" in config:
            errors.append(_error(ctx, "give 'agent' or 'workflow', not both", "/config"))
        try:
            _build_agent(config, ctx, check=True)
        except _Problems as exc:
            errors.extend(exc.errors)
        join = config.get("join")
        if join is not None and join not in manager.registry("merge_strategy"):
            names = ", ".join(manager.registry("merge_strategy").names())
            errors.append(
                _error(ctx, f"no merge strategy {join!r} (installed: {names})", "/config/join")
            )
        return errors

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> DagNode:
        """The node's executor, from a config :meth:`check` accepted."""
        manager = _manager(ctx)
        skip = config.get("skip_condition")
        join = config.get("join")
        try:
            agent = _build_agent(config, ctx, check=False)
        except _Problems as exc:
            raise exc.errors[0] from None
        return DagNode(
            ctx.node_id,
            agent=agent,
            agent_name=config.get("agent") or _workflow_name(config),
            skip_condition=compiled(skip, manager) if skip is not None else None,
            routes=[_Route(r, manager) for r in config.get("routes", ())],
            join=manager.registry("merge_strategy").get(join) if join is not None else None,
            join_name=join,
        )


_ROUTE_TYPES: dict[str, Any] = {
    "target": str,
    "connection": int,
    "condition": str,
    "context_passed": list,
    "parallel": bool,
    "max_iterations": int,
    "resets": list,
}


def _config_conforms(config: Any) -> bool:
    """Whether ``config`` certainly fits :attr:`DagNodeKind.config_schema` (checked in
    plain Python: a build of 1,000 nodes must not pay jsonschema 1,000 times)."""
    if type(config) is not dict:
        return False
    for key, value in config.items():
        if key in ("agent", "join"):
            if type(value) is not str or not value:
                return False
        elif key == "skip_condition":
            if type(value) is not str:
                return False
        elif key == "workflow":
            if type(value) is not dict:
                return False
        elif key == "at":
            if type(value) is not list or not all(type(v) is int for v in value):
                return False
        elif key == "use":
            if type(value) is not dict or type(value.get("kind")) is not str:
                return False
            if not set(value) <= {"kind", "config"} or type(value.get("config", {})) is not dict:
                return False
        elif key != "routes" or not _routes_conform(value):
            return False
    return True


def _routes_conform(routes: Any) -> bool:
    return type(routes) is list and all(_route_conforms(r) for r in routes)


def _route_conforms(route: Any) -> bool:
    if type(route) is not dict or "target" not in route or "connection" not in route:
        return False
    for key, value in route.items():
        if type(value) is not _ROUTE_TYPES.get(key):
            return False
    if not route["target"] or route["connection"] < 0:
        return False
    if "max_iterations" in route and route["max_iterations"] < 1:
        return False
    lists = (route.get("context_passed", ()), route.get("resets", ()))
    return all(type(k) is str for k in lists[0]) and all(
        type(i) is int and i >= 0 for i in lists[1]
    )


class _Problems(Exception):
    def __init__(self, errors: list[ConfigError]) -> None:
        super().__init__(errors)
        self.errors = errors


def _manager(ctx: BuildContext) -> Any:
    if ctx.manager is not None:
        return ctx.manager
    import plait

    return plait.get_plugin_manager()


def _error(ctx: BuildContext, message: str, path: str) -> ConfigError:
    return ConfigError(
        f"node {ctx.node_id!r}: {message}", SourcePosition(source=ctx.source, path=path)
    )


def _expressions(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = []
    if "skip_condition" in config:
        found.append(("/config/skip_condition", config["skip_condition"]))
    for i, route in enumerate(config.get("routes", ())):
        if "condition" in route:
            found.append((f"/config/routes/{i}/condition", route["condition"]))
    return found


def _workflow_name(config: Mapping[str, Any]) -> str | None:
    workflow = config.get("workflow")
    if not isinstance(workflow, Mapping):
        return None
    if "fragment" in workflow:
        return str(workflow["fragment"])
    return "(a sub-workflow)"


def _build_agent(config: Mapping[str, Any], ctx: BuildContext, *, check: bool) -> Executor | None:
    """The agent's executor: by name from ``executors=``, else a published fragment, else
    an executor kind (with an empty config); or the ``workflow`` kind's sub-workflow.
    With ``check``, only report what is wrong (raising :class:`_Problems`)."""
    manager = _manager(ctx)
    kinds = manager.registry("executor_kind")
    if "workflow" in config:
        return _from_kind(kinds, "workflow", config["workflow"], ctx, "/config/workflow", check)
    use = config.get("use")
    if isinstance(use, Mapping):  # the document's agents: entry, or a plugin's, as data
        return _from_kind(
            kinds, use["kind"], dict(use.get("config") or {}), ctx, "/config/use", check
        )
    name = config.get("agent")
    if name is None:
        return None
    if name in ctx.executors:
        if check:
            return None
        try:
            return _shared_agent(ctx.executors[name], ctx.node_id, name)
        except ConfigError as exc:
            raise _Problems([_error(ctx, exc.reason, "/config/agent")]) from exc
    if name in manager.registry("fragment"):
        return _from_kind(kinds, "workflow", {"fragment": name}, ctx, "/config/agent", check)
    if name in kinds and name != "dag.node":
        return _from_kind(kinds, name, {}, ctx, "/config/agent", check)

    from plait_documents import AgentNames

    known = sorted({*manager.registry("fragment").names(), *kinds.names()} - {"dag.node"})
    names = AgentNames(executors=ctx.executors, published=manager.registry("agent"))
    raise _Problems([_error(ctx, names.unknown(name, extra=known), "/config/agent")])


_AGENTS: weakref.WeakKeyDictionary[Any, Executor] = weakref.WeakKeyDictionary()


def _shared_agent(obj: Any, node_id: str, name: str) -> Executor:
    """The executor for a user's agent. The node calls its handler with a context of its
    own, so the agent's id does not matter: an executor is used as it is, and a function
    becomes one executor shared by every node naming it (resolving a handler's annotations
    is most of what building a node costs)."""
    if isinstance(obj, Executor):
        return obj
    if inspect.iscoroutinefunction(obj):
        try:
            found = _AGENTS.get(obj)
        except TypeError:  # not weak-referenceable
            found = None
        if found is None:
            found = FunctionExecutor(obj, id=name)
            with contextlib.suppress(TypeError):
                _AGENTS[obj] = found
        return found
    return as_executor(obj, node_id, what=f"agent {name!r}")


def _from_kind(
    kinds: Any, name: str, config: Any, ctx: BuildContext, path: str, check: bool
) -> Executor | None:
    if name not in kinds:
        raise _Problems([_error(ctx, f"needs the executor kind {name!r} (plait-executors)", path)])
    kind = kinds.get(name)
    problems = kind.check(config, ctx)
    if problems:
        raise _Problems([_rerooted(p, path, ctx) for p in problems])
    if check:
        return None
    executor: Executor = kind.create(config, ctx)
    return executor


def _rerooted(error: ConfigError, path: str, ctx: BuildContext) -> ConfigError:
    inner = error.path or "/config"
    where = path + inner.removeprefix("/config") if path == "/config/workflow" else path
    return ConfigError(error.reason, SourcePosition(source=ctx.source, path=where))
