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

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import plait
import plait.spi
from plait import (
    Executor,
    ExecutorFailedError,
    PlaitError,
    RequestResponse,
    RunStatus,
    WorkflowContext,
    WorkflowRunError,
    handler,
)
from plait.spi import BuildContext, type_name
from plait_documents import Capability, did_you_mean, kind_capabilities
from plait_expr import expression_failed

from . import _context as sc
from ._base import (
    OUTPUT_CONFIG,
    STEP_CONFIG,
    TARGET_CONFIG,
    NoConfigCheck,
    StepKind,
    StepNode,
    Templates,
    config_error,
    enter,
    finish,
    record,
    template_data,
)

__all__ = [
    "AgentKind",
    "ConditionKind",
    "ExecutorStepKind",
    "ForkKind",
    "JoinKind",
    "PassKind",
    "StepConditionError",
    "StepOutputError",
]


class StepConditionError(WorkflowRunError):
    """A condition gave something other than a boolean, or failed to evaluate."""


class StepOutputError(WorkflowRunError):
    """An agent or executor step finished without an output."""


#: calls a step's agent: (user message or ``input`` value, rendered instruction, context)
AgentCall = Callable[[Any, "str | None", "WorkflowContext[Any, Any]"], Awaitable[Any]]


# -- steps ----------------------------------------------------------------------------------


class StepExecutor(StepNode):
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
        self.loops: Mapping[str, list[str]] = config.get("loops") or {}
        self.via: str | None = config.get("via")
        self.who = who
        self.call = call
        self.instruction = instruction
        self.input = input

    @handler
    async def run_step(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = enter(message, self.step, ctx, limit=self.limit, loops=self.loops)
        rendered = None
        data: Any = None
        if self.instruction is not None or self.input is not None:
            data = await template_data(state, ctx)
        if self.instruction is not None:
            rendered = self.instruction.render(data)
        if self.input is not None:
            try:
                given = self.input.value(data)
            except PlaitError as exc:
                raise expression_failed(
                    StepOutputError,
                    f"the input of step {self.step!r}",
                    exc,
                    executor_id=self.step,
                    superstep=ctx.superstep,
                ) from exc
        else:
            given = sc.prior_block(state, sc.Entries(state["steps"], ctx.shared))
        output = await self.call(given, rendered, ctx)
        if isinstance(output, _Waiting):  # on_answer goes on, from what the step entered with
            ctx.state.setdefault("entered", {})[output.run_id] = state
            return
        await self._record(state, output, ctx)

    @handler
    async def on_answer(self, response: RequestResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """An answer to a request the step's inner run asked (a team's human, a handoff
        that needs the user, a plan review): the inner run goes on with it, and the step
        ends as it would have, once the inner run has its output."""
        answer = getattr(self.call, "answer", None)
        if answer is None:
            raise StepOutputError(
                f"step {self.step!r}: an answer came to request {response.request_id!r}, "
                "which the step did not ask",
                executor_id=self.step,
                superstep=ctx.superstep,
            )
        run_id, output = await answer(response, ctx)
        if isinstance(output, _Waiting):  # it asks again: the step keeps waiting
            return
        state = ctx.state.setdefault("entered", {}).pop(run_id)
        await self._record(state, output, ctx)

    async def _record(
        self, state: dict[str, Any], output: Any, ctx: WorkflowContext[Any, Any]
    ) -> None:
        """Record the step's output and send the step context on."""
        entry = {"output": output, "agent": self.agent}
        new, fresh = await record(
            ctx,
            state,
            self.step,
            entry,
            final=self.final,
            label=self.label,
            who=self.who,
            attempt=ctx.attempt,
        )
        await finish(ctx, new, output, self.final, fresh, self.via)


class ConditionExecutor(StepNode):
    """A condition step: ``branch`` is the condition's boolean; a switch routes on it."""

    def __init__(self, id: str, *, config: Mapping[str, Any], condition: Any) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.limit: int = config["limit"]
        self.text: str = config["condition"]
        self.ends: Mapping[str, bool] = config.get("ends") or {}
        self.loops: Mapping[str, list[str]] = config.get("loops") or {}
        #: the loop's back-edge each branch goes along, if it goes back at once
        self.via: Mapping[str, str] = config.get("via") or {}
        self.condition = condition
        self.is_template = bool(config.get("template"))

    @handler
    async def decide(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = enter(message, self.step, ctx, limit=self.limit, loops=self.loops)
        data = await template_data(state, ctx)
        try:
            if self.is_template:
                value = self.condition.value(data)
            else:
                value = self.condition.evaluate(data)
        except PlaitError as exc:
            raise expression_failed(
                StepConditionError,
                f"condition of step {self.step!r}",
                exc,
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
        new, fresh = await record(ctx, state, self.step, {"output": value}, final=ends, last=False)
        if ends:
            last = new["last"]
            entries = sc.Entries(new["steps"], ctx.shared, fresh)
            output = entries[last]["output"] if last is not None else None
            await finish(ctx, new, output, True, fresh)
            return
        new["branch"] = value
        via = self.via.get("true" if value else "false")
        if via:
            new["via"] = via
        await ctx.send_message(new)


class ForkExecutor(StepNode):
    """A parallel block's start: counts the block's runs and sends the context on to
    every child (a ``fan_out`` edge group)."""

    def __init__(self, id: str, *, config: Mapping[str, Any]) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.limit: int = config["limit"]
        self.nested: list[str] = list(config.get("nested") or ())
        self.loops: Mapping[str, list[str]] = config.get("loops") or {}

    @handler
    async def fork(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = enter(message, self.step, ctx, limit=self.limit, loops=self.loops)
        for step in self.nested:  # the nested blocks this fork starts too
            state = enter(state, step, ctx)
        await ctx.send_message(state)


class JoinExecutor(StepNode):
    """A parallel block's end: merges its children's contexts (in declaration order) and
    records the block's output, seed 002's keyed map ``{steps: {id: {output, agent}},
    order: [...]}``."""

    def __init__(self, id: str, *, config: Mapping[str, Any]) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.children: list[str] = list(config["children"])
        self.members: Mapping[str, list[str]] = config.get("members") or {}
        self.aliases: Mapping[str, str] = config.get("aliases") or {}
        self.final: bool = bool(config.get("final"))
        self.via: str | None = config.get("via")

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
        entry: dict[str, Any] = {"output": keyed, "agent": None, "outputs": outputs}
        entry["order"] = list(self.children)
        if self.aliases:
            entry["aliases"] = dict(self.aliases)
        new, fresh = await record(ctx, merged, self.step, entry, final=self.final)
        await finish(ctx, new, keyed, self.final, fresh, self.via)


class PassExecutor(StepNode):
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


def _inner_workflow(
    node: plait.NodeSpec, executors: Mapping[str, Any], ctx: BuildContext
) -> plait.Workflow:
    """The workflow an executor agent runs in: a two-node workflow, the agent then a
    collector; the agent's message is its output."""
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
    return plait.Workflow.from_spec(
        spec,
        {**executors, "steps.collect": _Collect("steps.collect")},
        allow_imports=ctx.allow_imports,
        plugin_manager=ctx.manager,
        source=ctx.source,
    )


def _inner_call(node: plait.NodeSpec, executors: Mapping[str, Any], ctx: BuildContext) -> AgentCall:
    """An agent that is an executor (or an executor kind), run in its own workflow
    (:func:`_inner_workflow`); the agent's message is the step's output. An agent that
    takes answers to its requests (a ``RequestResponse`` handler: a team, a nested
    workflow) runs as a nested run (:class:`_NestedCall`), so what it asks goes out and
    its answers come back; any other runs on its own, its custom events (a model's
    tokens) the step's."""
    workflow = _inner_workflow(node, executors, ctx)
    agent = workflow.executors[node.id]
    if any(h.input_type is RequestResponse for h in agent.handlers):
        return _NestedCall(workflow, ctx.node_id)

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
        if result.pending_requests:
            asked = ", ".join(type_name(type(p.request)) for p in result.pending_requests)
            raise StepOutputError(
                f"step {ctx.node_id!r}: its agent asked for outside input ({asked}), which a "
                "step cannot pass on: run it from Python (Workflow.run, then resume with the "
                "answer), or give it what it asks in the document",
                executor_id=ctx.node_id,
            )
        if not result.outputs:
            raise StepOutputError(
                f"step {ctx.node_id!r}: its agent finished without sending an output",
                executor_id=ctx.node_id,
            )
        return result.outputs[-1]

    return call


class _Waiting:
    """What a :class:`_NestedCall` gives when its inner run waits for outside input."""

    __slots__ = ("run_id",)

    def __init__(self, run_id: str) -> None:
        #: the inner run's id: the step keeps what it entered with under it
        self.run_id = run_id


class _NestedCall:
    """The call of a step whose agent takes answers to its requests: its inner workflow
    (:func:`_inner_workflow`) run as a nested run (``Workflow.run_nested``, as a nested
    workflow executor runs one), so an inner run that waits for outside input (a team's
    human, a handoff that needs the user, a plan review) does not fail the step: its
    state is kept in the step's ``ctx.state`` (checkpointed with the outer run), its
    requests are asked of the outer caller, and :meth:`answer` resumes it with each
    answer. The inner run's events reach the outer run as :class:`plait.NestedEvent`
    events of the step.

    :param workflow: the inner workflow.
    :param step: the step's id, for errors.
    """

    def __init__(self, workflow: plait.Workflow, step: str) -> None:
        self.workflow = workflow
        self.step = step

    async def __call__(
        self, user_message: Any, instruction: str | None, ctx: WorkflowContext[Any, Any]
    ) -> Any:
        """Start the inner run: its output, or :class:`_Waiting`."""
        if instruction and isinstance(user_message, str):
            user_message = f"{instruction}\n\n{user_message}"
        result, saved = await self.workflow.run_nested(user_message, ctx=ctx)
        return await self._settle(result, saved, ctx)

    async def answer(
        self, response: RequestResponse, ctx: WorkflowContext[Any, Any]
    ) -> tuple[str, Any]:
        """Resume the inner run that asked: ``(its run id, its output or
        :class:`_Waiting`)``.

        :raises StepOutputError: no inner run of this step asked the request.
        """
        waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
        runs: dict[str, Any] = ctx.state.setdefault("runs", {})
        if response.request_id not in waiting:
            raise StepOutputError(
                f"step {self.step!r}: an answer came to request {response.request_id!r}, "
                "which the step did not ask",
                executor_id=self.step,
                superstep=ctx.superstep,
            )
        inner_run, inner_request = waiting.pop(response.request_id)
        saved = runs.pop(inner_run)
        result, saved = await self.workflow.run_nested(
            saved=saved, responses={inner_request: response.value}, ctx=ctx
        )
        return inner_run, await self._settle(result, saved, ctx)

    async def _settle(self, result: Any, saved: Any, ctx: WorkflowContext[Any, Any]) -> Any:
        if result.status is RunStatus.FAILED:
            error = result.error
            if isinstance(error, ExecutorFailedError) and error.__cause__ is not None:
                raise error.__cause__ from None
            raise error
        if saved is not None:  # keep the inner run, ask its requests of the outer caller
            waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
            runs: dict[str, Any] = ctx.state.setdefault("runs", {})
            runs[result.run_id] = saved
            asked = {inner for _, inner in waiting.values()}
            for pending in result.pending_requests:
                if pending.request_id not in asked:
                    outer = await ctx.request_info(pending.request, pending.response_type)
                    waiting[outer] = [result.run_id, pending.request_id]
            return _Waiting(result.run_id)
        if not result.outputs:
            raise StepOutputError(
                f"step {self.step!r}: its agent finished without sending an output",
                executor_id=self.step,
            )
        return result.outputs[-1]


def _kind_names(ctx: BuildContext) -> list[str]:
    manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
    return [n for n in manager.registry("executor_kind").names() if not n.startswith("steps.")]


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
            raise config_error(
                ctx,
                f"agent {name!r} is {obj!r}: give an async function "
                "(async def agent(prompt: str) -> str | dict) or a plait Executor",
                "/agent",
            )
        node = plait.NodeSpec("agent", uses=name)
        return _inner_call(node, {name: obj}, ctx)
    raise config_error(ctx, unknown_agent(name, ctx), "/agent", at=config.get("at"))


# -- kinds ---------------------------------------------------------------------------------------


class AgentKind(StepKind):
    """``steps.agent``: ``{step, agent, limit, label?, final?, via?, loops?, instruction?,
    at?, input?, input_at?, config?, use?}``."""

    required = {**STEP_CONFIG, "agent": str}
    optional = {**OUTPUT_CONFIG, **TARGET_CONFIG, "instruction": str, "at": list, "input": str}
    optional = {**optional, "input_at": list}
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
            templates = self.templates(ctx)
            templates.template(config.get("instruction"), config.get("at"), ctx.source)
            templates.template(config.get("input"), config.get("input_at"), ctx.source)
            return
        self.create(config, ctx)

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        call = _resolve_agent(config, ctx)
        try:
            instruction = self.templates(ctx).template(
                config.get("instruction"), config.get("at"), ctx.source
            )
        except PlaitError as exc:
            raise config_error(ctx, str(exc), "/instruction", at=config.get("at")) from None
        who = f"agent: {config['agent']}"
        given = _input(config, ctx, self.templates(ctx))
        return StepExecutor(
            ctx.node_id, config=config, call=call, who=who, instruction=instruction, input=given
        )


class ExecutorStepKind(StepKind):
    """``steps.executor``: ``{step, kind, config, limit, label?, final?, via?, loops?, at?,
    input?, input_at?}``."""

    required = {**STEP_CONFIG, "kind": str}
    optional = {**OUTPUT_CONFIG, **TARGET_CONFIG, "config": dict, "input": str}
    optional = {**optional, "input_at": list, "at": list}

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
            raise config_error(
                ctx,
                f"no executor kind {config['kind']!r}; installed: {', '.join(kinds)}{did}",
                "/kind",
            )
        # named as the step, so what the kind reports names the step
        node = plait.NodeSpec(
            ctx.node_id, kind=config["kind"], config=dict(config.get("config") or {})
        )
        # the caller's Python objects go along: a kind may name them (a team's participants)
        call = _inner_call(node, ctx.executors, ctx)
        who = f"executor: {config['kind']}"
        given = _input(config, ctx, self.templates(ctx))
        return StepExecutor(ctx.node_id, config=config, call=call, who=who, input=given)


class ConditionKind(StepKind):
    """``steps.condition``: ``{step, condition, limit, template?, at?, ends?, via?,
    loops?}``."""

    required = {**STEP_CONFIG, "condition": str}
    optional = {**TARGET_CONFIG, "template": bool, "at": list, "ends": dict, "via": dict}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        condition = self.templates(ctx).config(config, "condition", ctx)
        return ConditionExecutor(ctx.node_id, config=config, condition=condition)


def _input(config: Mapping[str, Any], ctx: BuildContext, templates: Templates) -> Any:
    try:
        return templates.template(config.get("input"), config.get("input_at"), ctx.source)
    except PlaitError as exc:
        raise config_error(ctx, str(exc), "/input", at=config.get("at")) from None


class ForkKind(NoConfigCheck):
    """``steps.fork``: ``{step, limit, nested?, loops?}``."""

    required = STEP_CONFIG
    optional = {**TARGET_CONFIG, "nested": list}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return ForkExecutor(ctx.node_id, config=config)


class JoinKind(NoConfigCheck):
    """``steps.join``: ``{step, children, members?, aliases?, final?, via?}``."""

    required = {"step": str, "children": list}
    optional = {"members": dict, "aliases": dict, "final": bool, "via": str}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return JoinExecutor(ctx.node_id, config=config)


class PassKind(NoConfigCheck):
    """``steps.pass``: no config."""

    required = {}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return PassExecutor(ctx.node_id)
