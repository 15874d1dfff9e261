"""The executors a steps workflow is made of, and the kinds that build them from data.

Every node of a loaded steps workflow has one of these kinds, so its spec is plain data
(``WorkflowSpec.to_json`` / ``Workflow.from_spec`` round-trip it); the user's agents are
bound by name when the workflow is built (``executors=``), or built by their own kind.

- ``steps.agent``: runs one agent step: builds the user message (prior step outputs, then
  the prompt), calls the agent, records its output.
- ``steps.executor``: runs any executor kind as a step, the same way.
- ``steps.condition``: evaluates the step's condition; a ``switch`` edge group after it
  routes on the result (``branch``).
- ``steps.fork`` / ``steps.join``: a parallel block's start (a ``fan_out`` follows) and end
  (after a ``fan_in`` with merge ``list``): the join builds the block's keyed map.
- ``steps.pass``: forwards the context (the single exit of a parallel child that branches).
- ``steps.foreach`` / ``steps.gather``: a foreach block's start and end (``_foreach``).
"""

from __future__ import annotations

import abc
import functools
import inspect
from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import plait
import plait.spi
from plait import (
    ConfigError,
    Executor,
    ExecutorFailedError,
    PlaitError,
    SourcePosition,
    WorkflowContext,
    WorkflowRunError,
    handler,
)
from plait.spi import BuildContext
from plait_documents import Capability, check_config, did_you_mean, kind_capabilities

from . import _context as sc

__all__ = [
    "AgentKind",
    "ConditionKind",
    "ExecutorStepKind",
    "ForkKind",
    "JoinKind",
    "LoopLimitError",
    "PassKind",
    "StepConditionError",
    "StepOutputError",
]


class LoopLimitError(WorkflowRunError):
    """A step ran more often than ``max_loop_iterations`` allows. The message is seed
    002's: ``workflow: max loop iterations exceeded (step: trans, limit: 100)``.
    """

    def __init__(self, step: str, limit: int, *, superstep: int | None = None) -> None:
        super().__init__(
            f"workflow: max loop iterations exceeded (step: {step}, limit: {limit})",
            executor_id=step,
            superstep=superstep,
        )
        self.step = step
        self.limit = limit


class StepConditionError(WorkflowRunError):
    """A condition gave something other than a boolean, or failed to evaluate."""


class StepOutputError(WorkflowRunError):
    """An agent or executor step finished without an output."""


#: calls a step's agent: (user message or ``input`` value, rendered instruction, context)
AgentCall = Callable[[Any, "str | None", "WorkflowContext[Any, Any]"], Awaitable[Any]]


def _bump(
    state: dict[str, Any], step: str, limit: int, ctx: WorkflowContext[Any, Any]
) -> dict[str, Any]:
    runs = state["runs"].get(step, 0) + 1
    if runs > limit:
        raise LoopLimitError(step, limit, superstep=ctx.superstep)
    new = dict(state)
    new["runs"] = {**state["runs"], step: runs}
    return new


async def _record(
    ctx: WorkflowContext[Any, Any],
    state: dict[str, Any],
    step: str,
    entry: dict[str, Any],
    *,
    final: bool = False,
    label: str | None = None,
    who: str | None = None,
    attempt: int | None = None,
    last: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store ``entry`` as step ``step``'s result, once, in shared state (the last step's
    goes into the step context it publishes instead); the new step context, and the
    entries written here (``{key: entry}``: readable in shared state from the next
    superstep only)."""
    key = sc.entry_key(state, step, ctx.superstep)
    if not final:
        await ctx.set_shared_state(key, entry)
    new = sc.record(state, step, key, label=label, who=who, attempt=attempt, last=last)
    return new, {key: entry}


async def _finish(
    ctx: WorkflowContext[Any, Any],
    state: dict[str, Any],
    output: Any,
    final: bool,
    fresh: dict[str, Any],
) -> None:
    """Send the step context on, or, for the last step, publish it (``fresh``: the
    entries :func:`_record` just wrote)."""
    if final:
        await ctx.yield_output(output)
        summary = sc.summary(state, sc.Entries(state["steps"], ctx.shared, fresh), output)
        await ctx.set_shared_state(sc.STEP_CONTEXT_KEY, summary)  # see sc.step_context
        await ctx.add_event({sc.STEP_CONTEXT_EVENT: summary})
        # the published context holds every entry now: drop them from shared state
        for key in [k for k in ctx.shared if k.startswith(sc.ENTRY_PREFIX)]:
            await ctx.delete_shared_state(key)
    else:
        await ctx.send_message(state)


def _entries(state: dict[str, Any], ctx: WorkflowContext[Any, Any]) -> sc.Entries:
    """The entries of the steps ``state`` has seen: inside foreach bodies, the steps of
    every enclosing context (each kept once in shared state) under the item's own."""
    frame = state.get("foreach")
    if frame is None:
        return sc.Entries(state["steps"], ctx.shared)
    layers = [state["steps"]]
    while frame is not None:
        outer = ctx.shared.get(sc.foreach_key(frame["key"]))
        layers.append(outer["steps"] if outer else {})
        frame = frame["parent"]
    return sc.Entries(ChainMap(*layers), ctx.shared)


async def _template_data(state: dict[str, Any], ctx: WorkflowContext[Any, Any]) -> dict[str, Any]:
    """What templates see (:func:`_entries`)."""
    return sc.template_data(state, _entries(state, ctx))


_COMPILED: dict[tuple[Any, ...], Any] = {}


def compiled(
    text: str, *, template: bool, line: int, column: int, source: str | None, manager: Any
) -> Any:
    """``text`` compiled as a template or an expression, cached (a 1,000-step file holds
    1,000 templates, each checked at load and built again by ``Workflow.from_spec``)."""
    key = (text, template, line, column, source, id(manager))
    found = _COMPILED.get(key)
    if found is None:
        compile_ = plait.spi.compile_template if template else plait.spi.compile_expression
        found = compile_(text, source=source, line=line, column=column, manager=manager)
        if len(_COMPILED) > 8192:
            _COMPILED.clear()
        _COMPILED[key] = found
    return found


def compiled_config(config: Mapping[str, Any], key: str, ctx: BuildContext) -> Any:
    """The expression (or, with ``template``, the template) at ``config[key]``, compiled
    at the step's position (``at``); a problem is a ConfigError at ``/config/<key>``."""
    at = config.get("at")
    line, column = at if isinstance(at, list) and len(at) == 2 else (1, 1)
    try:
        return compiled(
            str(config.get(key, "")),
            template=bool(config.get("template")),
            source=ctx.source,
            line=line,
            column=column,
            manager=ctx.manager,
        )
    except PlaitError as exc:
        raise _error(ctx, str(exc), f"/{key}", at=config.get("at")) from None


def _template(text: str | None, at: Any, source: str | None, manager: Any) -> Any:
    if not text:
        return None
    line, column = at if isinstance(at, list) and len(at) == 2 else (1, 1)
    return compiled(text, template=True, line=line, column=column, source=source, manager=manager)


class _StepNode(Executor):
    """The base of the steps executors."""


# -- steps ----------------------------------------------------------------------------------


class StepExecutor(_StepNode):
    """One agent (or executor-kind) step."""

    def __init__(
        self,
        id: str,
        *,
        config: Mapping[str, Any],
        call: AgentCall,
        who: str,
        instruction: Any = None,
        input: Any = None,
    ) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.label: str = config.get("label") or self.step
        self.agent: str | None = config.get("agent")
        self.limit: int = config["limit"]
        self.final: bool = bool(config.get("final"))
        self.who = who
        self.call = call
        self.instruction = instruction
        self.input = input

    @handler
    async def run_step(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = _bump(sc.start(message), self.step, self.limit, ctx)
        rendered = None
        data: Any = None
        if self.instruction is not None or self.input is not None:
            data = await _template_data(state, ctx)
        if self.instruction is not None:
            rendered = self.instruction.render(data)
        if self.input is not None:
            try:
                given = self.input.value(data)
            except PlaitError as exc:
                raise StepOutputError(
                    f"the input of step {self.step!r} failed: {exc}",
                    executor_id=self.step,
                    superstep=ctx.superstep,
                ) from exc
        else:
            given = sc.prior_block(state, sc.Entries(state["steps"], ctx.shared))
        output = await self.call(given, rendered, ctx)
        entry = {"output": output, "agent": self.agent}
        new, fresh = await _record(
            ctx,
            state,
            self.step,
            entry,
            final=self.final,
            label=self.label,
            who=self.who,
            attempt=ctx.attempt,
        )
        await _finish(ctx, new, output, self.final, fresh)


class ConditionExecutor(_StepNode):
    """A condition step: ``branch`` is the condition's boolean; a switch routes on it."""

    def __init__(self, id: str, *, config: Mapping[str, Any], condition: Any) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.limit: int = config["limit"]
        self.text: str = config["condition"]
        self.ends: Mapping[str, bool] = config.get("ends") or {}
        self.condition = condition
        self.is_template = bool(config.get("template"))

    @handler
    async def decide(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = _bump(sc.start(message), self.step, self.limit, ctx)
        data = await _template_data(state, ctx)
        try:
            if self.is_template:
                value = self.condition.value(data)
            else:
                value = self.condition.evaluate(data)
        except PlaitError as exc:
            raise StepConditionError(
                f"condition of step {self.step!r} failed: {exc}",
                executor_id=self.step,
                superstep=ctx.superstep,
            ) from exc
        if value is not True and value is not False:
            shown = "null" if value is None else repr(value)
            raise StepConditionError(
                f"condition of step {self.step!r} must give a boolean, got {shown} "
                f"({self.text.strip()})",
                executor_id=self.step,
                superstep=ctx.superstep,
            )
        ends = bool(self.ends.get("true" if value else "false"))
        new, fresh = await _record(ctx, state, self.step, {"output": value}, final=ends, last=False)
        if ends:
            last = new["last"]
            entries = sc.Entries(new["steps"], ctx.shared, fresh)
            output = entries[last]["output"] if last is not None else None
            await _finish(ctx, new, output, True, fresh)
            return
        new["branch"] = value
        await ctx.send_message(new)


class ForkExecutor(_StepNode):
    """A parallel block's start: counts the block's runs and sends the context on to
    every child (a ``fan_out`` edge group)."""

    def __init__(self, id: str, *, config: Mapping[str, Any]) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.limit: int = config["limit"]
        self.nested: list[str] = list(config.get("nested") or ())

    @handler
    async def fork(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = _bump(sc.start(message), self.step, self.limit, ctx)
        for step in self.nested:  # the nested blocks this fork starts too
            state = _bump(state, step, self.limit, ctx)
        await ctx.send_message(state)


class JoinExecutor(_StepNode):
    """A parallel block's end: merges its children's contexts (in declaration order) and
    records the block's output, seed 002's keyed map ``{steps: {id: {output, agent}},
    order: [...]}``."""

    def __init__(self, id: str, *, config: Mapping[str, Any]) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.children: list[str] = list(config["children"])
        self.members: Mapping[str, list[str]] = config.get("members") or {}
        self.final: bool = bool(config.get("final"))

    @handler
    async def join(self, message: list[Any], ctx: WorkflowContext[Any, Any]) -> None:
        states = [sc.start(m) for m in message]
        merged = dict(states[0])
        steps: dict[str, Any] = {}
        prior: dict[str, Any] = {}
        runs: dict[str, int] = {}
        attempts: dict[str, int] = {}
        for state in states:
            steps.update(state["steps"])
            prior.update(state["prior"])
            attempts.update(state["attempts"])
            for key, count in state["runs"].items():
                runs[key] = max(count, runs.get(key, 0))
        # each child's last entry, by reference (the block's keyed output copies only
        # the children's outputs, which are the block's own result)
        outputs: dict[str, str | None] = {}
        for child, state in zip(self.children, states):
            last = state.get("last")
            inside = self.members.get(child, [child])
            outputs[child] = state["steps"].get(last) if last in inside else None
        entries = sc.Entries(steps, ctx.shared)
        keyed = {
            "steps": {
                c: {k: e[k] for k in ("output", "agent") if k in e}
                for c, e in ((c, entries.ref(r)) for c, r in outputs.items())
            },
            "order": list(self.children),
        }
        merged.update(steps=steps, prior=prior, runs=runs, attempts=attempts)
        entry = {"output": keyed, "agent": None, "outputs": outputs, "order": list(self.children)}
        new, fresh = await _record(ctx, merged, self.step, entry, final=self.final)
        await _finish(ctx, new, keyed, self.final, fresh)


class PassExecutor(_StepNode):
    """Forwards the step context unchanged."""

    @handler
    async def forward(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        await ctx.send_message(message)


class _Collect(Executor):
    """The second node of an agent's inner workflow: what the agent sent is the output."""

    @handler
    async def collect(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        await ctx.yield_output(message)


# -- calling agents ---------------------------------------------------------------------------


def _is_async_function(obj: Any) -> bool:
    if isinstance(obj, (Executor, type)):
        return False
    call = type(obj).__dict__.get("__call__")
    return inspect.iscoroutinefunction(obj) or (
        call is not None and inspect.iscoroutinefunction(call)
    )


def _function_call(fn: Callable[..., Awaitable[Any]]) -> AgentCall:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        params = ()  # type: ignore[assignment]
    takes_instruction = any(
        p.name == "instruction" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params
    )

    async def call(
        user_message: Any, instruction: str | None, ctx: WorkflowContext[Any, Any]
    ) -> Any:
        if takes_instruction:
            return await fn(user_message, instruction=instruction)
        if instruction and isinstance(user_message, str):
            user_message = f"{instruction}\n\n{user_message}"
        return await fn(user_message)

    return call


def _inner_call(node: plait.NodeSpec, executors: Mapping[str, Any], ctx: BuildContext) -> AgentCall:
    """An agent that is an executor (or an executor kind): a two-node workflow, the agent
    then a collector; the agent's message is the step's output."""
    spec = plait.WorkflowSpec(
        name=f"{ctx.node_id} (agent)",
        start=node.id,
        nodes=(node, plait.NodeSpec("steps.collect")),
        edge_groups=(
            plait.EdgeGroupSpec(
                f"direct:{node.id}->steps.collect", "direct", (node.id,), ("steps.collect",)
            ),
        ),
    )
    workflow = plait.Workflow.from_spec(
        spec,
        {**executors, "steps.collect": _Collect("steps.collect")},
        allow_imports=ctx.allow_imports,
        plugin_manager=ctx.manager,
        source=ctx.source,
    )

    async def call(
        user_message: Any, instruction: str | None, step_ctx: WorkflowContext[Any, Any]
    ) -> Any:
        if instruction and isinstance(user_message, str):
            user_message = f"{instruction}\n\n{user_message}"
        from plait import CustomEvent

        custom: list[Any] = []

        def keep(event: Any) -> None:
            if isinstance(event, CustomEvent):
                custom.append(event.data)

        try:
            result = await workflow.run(user_message, on_event=keep)
        except ExecutorFailedError as exc:
            if exc.__cause__ is not None:
                raise exc.__cause__ from None
            raise
        for data in custom:  # the agent's own events (a model's tokens) are the step's
            await step_ctx.add_event(data)
        if not result.outputs:
            raise StepOutputError(
                f"step {ctx.node_id!r}: its agent finished without sending an output",
                executor_id=ctx.node_id,
            )
        return result.outputs[-1]

    return call


def _kind_names(ctx: BuildContext) -> list[str]:
    manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
    return [n for n in manager.registry("executor_kind").names() if not n.startswith("steps.")]


def _inner_path(problem: Any) -> str:
    path = str(getattr(getattr(problem, "position", None), "path", None) or "")
    return path.removeprefix("/nodes/0")


def _error(ctx: BuildContext, message: str, path: str = "", at: Any = None) -> ConfigError:
    """A problem at ``/config<path>`` of the step's node and, when the step's YAML position
    (``at``) is known, at its line and column too."""
    line, column = at if isinstance(at, list) and len(at) == 2 else (None, None)
    return ConfigError(
        message,
        SourcePosition(source=ctx.source, line=line, column=column, path=f"/config{path}"),
    )


def unknown_agent(name: str, ctx: BuildContext) -> str:
    """The message for an agent name nothing resolves, as a load gives it."""
    from plait_documents import AgentNames

    manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
    names = AgentNames(executors=ctx.executors, published=manager.registry("agent"))
    return names.unknown(name)


def _resolve_agent(config: Mapping[str, Any], ctx: BuildContext) -> AgentCall:
    """The step's agent: given as data (``use``: the document's ``agents:`` entry or a
    plugin's agent, as the loader resolved it), else a Python object by name."""
    name = config["agent"]
    use = config.get("use")
    if isinstance(use, Mapping):
        node = plait.NodeSpec("agent", kind=use["kind"], config=dict(use.get("config") or {}))
        return _inner_call(node, {}, ctx)
    if name in ctx.executors:
        obj = ctx.executors[name]
        if _is_async_function(obj):
            return _function_call(obj)
        if not (isinstance(obj, Executor) or (isinstance(obj, type) and issubclass(obj, Executor))):
            raise _error(
                ctx,
                f"agent {name!r} is {obj!r}: give an async function "
                "(async def agent(prompt: str) -> str | dict) or a plait Executor",
                "/agent",
            )
        node = plait.NodeSpec("agent", uses=name)
        return _inner_call(node, {name: obj}, ctx)
    raise _error(ctx, unknown_agent(name, ctx), "/agent", at=config.get("at"))


# -- kinds ---------------------------------------------------------------------------------------


class _Kind(abc.ABC):
    """Shared checking for the steps kinds: required keys and their JSON types."""

    required: Mapping[str, type | tuple[type, ...]] = {"step": str}
    optional: Mapping[str, type | tuple[type, ...]] = {}

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """What the step may make Plait do: nothing of its own (conditions and templates
        are expressions); the agent or executor kind it wraps may need more."""
        return set()

    @functools.cached_property
    def config_schema(self) -> Mapping[str, Any]:
        """The JSON Schema of the kind's config: the required keys and the optional ones
        (which may be null), with their JSON types, and no other key."""
        names = {str: "string", int: "integer", bool: "boolean", dict: "object", list: "array"}

        def schema(tp: Any, *, optional: bool) -> dict[str, Any]:
            tps = tp if isinstance(tp, tuple) else (tp,)
            types = [names[t] for t in tps] + (["null"] if optional else [])
            return {"type": types}

        props = {k: schema(t, optional=False) for k, t in self.required.items()}
        props.update({k: schema(t, optional=True) for k, t in self.optional.items()})
        return {
            "type": "object",
            "properties": props,
            "required": sorted(self.required),
            "additionalProperties": False,
        }

    def conforms(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` fits :attr:`config_schema`: a plain-Python check as strict as
        the schema (a 1,000-step file builds 1,000 configs), so jsonschema runs only to
        explain one that does not."""

        def fits(value: Any, tp: Any) -> bool:
            return isinstance(value, tp) and not (isinstance(value, bool) and tp is int)

        return (
            all(k in config and fits(config[k], t) for k, t in self.required.items())
            and all(config.get(k) is None or fits(config[k], t) for k, t in self.optional.items())
            and set(config) <= {*self.required, *self.optional}
        )

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        prefix = f"executor {ctx.node_id!r}: "
        found = (
            []
            if self.conforms(config)
            else check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
        )
        problems = [
            _error(
                ctx,
                error.reason.removeprefix(prefix),
                (error.path or "").removeprefix("/config"),
                at=config.get("at"),
            )
            for error in found
        ]
        if problems:
            return problems
        try:
            self.validate(config, ctx)
        except ConfigError as exc:
            return [exc]
        except PlaitError as exc:
            inner = getattr(exc, "problems", None)
            if not inner:
                return [_error(ctx, str(exc), at=config.get("at"))]
            # the step's own one-node workflow did not build: its problems, at this
            # step's config (``/nodes/0/config/ref`` there is ``/config/config/ref`` here)
            return [
                _error(ctx, getattr(p, "reason", str(p)), _inner_path(p), at=config.get("at"))
                for p in inner
            ]
        return []

    def validate(self, config: Mapping[str, Any], ctx: BuildContext) -> None:
        """Raise :class:`ConfigError` for a config that cannot build (default: build it)."""
        self.create(config, ctx)

    @abc.abstractmethod
    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """Build the step's executor from a config :meth:`check` accepted."""


_STEP = {"step": str, "limit": int}
_OUT = {"label": str, "final": bool}


class AgentKind(_Kind):
    """``steps.agent``: ``{step, agent, limit, label?, final?, instruction?, at?, config?}``."""

    required = {**_STEP, "agent": str}
    optional = {**_OUT, "instruction": str, "at": list, "input": str, "input_at": list}
    optional = {**optional, "config": dict, "use": dict}

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """Nothing for an agent the caller passed; else what the kind of its definition
        (``use``) needs, as :func:`_resolve_agent` picks it."""
        use = config.get("use")
        if not isinstance(use, Mapping) or not isinstance(use.get("kind"), str):
            return set()
        inner = use.get("config")
        return set(kind_capabilities(use["kind"], inner if isinstance(inner, Mapping) else {}, ctx))

    def validate(self, config: Mapping[str, Any], ctx: BuildContext) -> None:
        name = config["agent"]
        passed = "use" not in config and name in ctx.executors
        if passed and _is_async_function(ctx.executors[name]):
            _template(config.get("instruction"), config.get("at"), ctx.source, ctx.manager)
            _template(config.get("input"), config.get("input_at"), ctx.source, ctx.manager)
            return
        self.create(config, ctx)

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        call = _resolve_agent(config, ctx)
        try:
            instruction = _template(
                config.get("instruction"), config.get("at"), ctx.source, ctx.manager
            )
        except PlaitError as exc:
            raise _error(ctx, str(exc), "/instruction", at=config.get("at")) from None
        who = f"agent: {config['agent']}"
        given = _input(config, ctx)
        return StepExecutor(
            ctx.node_id, config=config, call=call, who=who, instruction=instruction, input=given
        )


class ExecutorStepKind(_Kind):
    """``steps.executor``: ``{step, kind, config, limit, label?, final?, at?}``."""

    required = {**_STEP, "kind": str}
    optional = {**_OUT, "config": dict, "input": str, "input_at": list, "at": list}

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """What the executor kind it wraps needs for its config."""
        kind, inner = config.get("kind"), config.get("config")
        if not isinstance(kind, str) or kind.startswith("steps."):
            return set()
        return set(kind_capabilities(kind, inner if isinstance(inner, Mapping) else {}, ctx))

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        kinds = _kind_names(ctx)
        if config["kind"] not in kinds:
            did = did_you_mean(config["kind"], kinds)
            raise _error(
                ctx,
                f"no executor kind {config['kind']!r}; installed: {', '.join(kinds)}{did}",
                "/kind",
            )
        # named as the step, so what the kind reports names the step
        node = plait.NodeSpec(
            ctx.node_id, kind=config["kind"], config=dict(config.get("config") or {})
        )
        call = _inner_call(node, {}, ctx)
        who = f"executor: {config['kind']}"
        given = _input(config, ctx)
        return StepExecutor(ctx.node_id, config=config, call=call, who=who, input=given)


class ConditionKind(_Kind):
    """``steps.condition``: ``{step, condition, limit, template?, at?, ends?}``."""

    required = {**_STEP, "condition": str}
    optional = {"template": bool, "at": list, "ends": dict}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        condition = compiled_config(config, "condition", ctx)
        return ConditionExecutor(ctx.node_id, config=config, condition=condition)


def _input(config: Mapping[str, Any], ctx: BuildContext) -> Any:
    try:
        return _template(config.get("input"), config.get("input_at"), ctx.source, ctx.manager)
    except PlaitError as exc:
        raise _error(ctx, str(exc), "/input", at=config.get("at")) from None


class _NoConfigCheck(_Kind):
    def validate(self, config: Mapping[str, Any], ctx: BuildContext) -> None:
        return None


class ForkKind(_NoConfigCheck):
    """``steps.fork``: ``{step, limit, nested?}``."""

    required = _STEP
    optional = {"nested": list}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return ForkExecutor(ctx.node_id, config=config)


class JoinKind(_NoConfigCheck):
    """``steps.join``: ``{step, children, members?, final?}``."""

    required = {"step": str, "children": list}
    optional = {"members": dict, "final": bool}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return JoinExecutor(ctx.node_id, config=config)


class PassKind(_NoConfigCheck):
    """``steps.pass``: no config."""

    required = {}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return PassExecutor(ctx.node_id)
