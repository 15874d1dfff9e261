"""What every steps executor and kind shares: entering a step (its loop counters),
recording its result, sending the step context on, the data templates see, compiling
a node's expression, and the kinds' config check.

**Loops.** Seed 002 counts per logical loop: per back-edge, restarting when the loop is
entered again. A back-edge (a ``goto``, or the seed's loop-back form) has a key, the id of
the step that wrote it. The node it leaves from marks the message it sends back
(``via``: the key); the step it goes back to (the loop's *target*) holds, in its config,
``loops``: each key of a loop that goes back to it, with the keys of the loops inside
that one. When the target runs, a loop's count goes up by one when the message came back
along that loop's edge, stays as it is when it came along the edge of a loop inside it,
and starts at 1 otherwise (the loop is entered). A count past ``max_loop_iterations``
fails the run with :class:`LoopLimitError`. The counts travel in the step context
(``loops``), so a foreach item has its own and parallel branches do not share theirs.
"""

from __future__ import annotations

import abc
import functools
from collections import ChainMap
from collections.abc import Mapping
from typing import Any

import plait
from plait import (
    ConfigError,
    Executor,
    PlaitError,
    SourcePosition,
    WorkflowContext,
    WorkflowRunError,
)
from plait.spi import BuildContext
from plait_documents import Capability, check_config

from . import _context as sc

__all__ = [
    "OUTPUT_CONFIG",
    "STEP_CONFIG",
    "TARGET_CONFIG",
    "LoopLimitError",
    "NoConfigCheck",
    "StepKind",
    "StepNode",
    "Templates",
    "config_error",
    "enter",
    "finish",
    "record",
    "template_data",
]


class LoopLimitError(WorkflowRunError):
    """A loop went round more often than ``max_loop_iterations`` allows: the step it goes
    back to would run once more. The message is seed 002's: ``workflow: max loop
    iterations exceeded (step: trans, limit: 100)``.
    """

    def __init__(self, step: str, limit: int, *, superstep: int | None = None) -> None:
        super().__init__(
            f"workflow: max loop iterations exceeded (step: {step}, limit: {limit})",
            executor_id=step,
            superstep=superstep,
        )
        self.step = step
        self.limit = limit


def enter(
    message: Any,
    step: str,
    ctx: WorkflowContext[Any, Any],
    *,
    limit: int = 0,
    loops: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """The step context ``message`` is (or starts), as step ``step`` enters it: its run
    counted (``runs``: how often each step ran, for the step context) and, for the
    target of loops (``loops``: key -> the keys of the loops inside it), each loop's
    count taken on or restarted (see the module's docstring).

    :raises LoopLimitError: a loop would go past ``limit``.
    """
    state = dict(sc.start(message))  # a fan-out delivers one dict to several branches
    via = state.pop("via", None)
    state["runs"] = {**state["runs"], step: state["runs"].get(step, 0) + 1}
    if loops:
        counts: Mapping[str, int] = state.get("loops") or {}
        new = dict(counts)
        for key, inside in loops.items():
            if key == via:
                count = counts.get(key, 1) + 1
                if count > limit:
                    raise LoopLimitError(step, limit, superstep=ctx.superstep)
                new[key] = count
            elif via not in inside or key not in counts:
                new[key] = 1  # the loop is entered (again): its count starts afresh
        state["loops"] = new
    return state


async def record(
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


async def finish(
    ctx: WorkflowContext[Any, Any],
    state: dict[str, Any],
    output: Any,
    final: bool,
    fresh: dict[str, Any],
    via: str | None = None,
) -> None:
    """Send the step context on (marked ``via`` a loop's back-edge, when the step goes
    back along one), or, for the last step, publish it (``fresh``: the entries
    :func:`record` just wrote)."""
    if final:
        await ctx.yield_output(output)
        summary = sc.summary(state, sc.Entries(state["steps"], ctx.shared, fresh), output)
        await ctx.set_shared_state(sc.STEP_CONTEXT_KEY, summary)  # see sc.step_context
        await ctx.add_event({sc.STEP_CONTEXT_EVENT: summary})
        # the published context holds every entry now: drop them from shared state
        for key in [k for k in ctx.shared if k.startswith(sc.ENTRY_PREFIX)]:
            await ctx.delete_shared_state(key)
    else:
        await ctx.send_message({**state, "via": via} if via else state)


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


async def template_data(state: dict[str, Any], ctx: WorkflowContext[Any, Any]) -> dict[str, Any]:
    """What templates see (the entries of :func:`_entries`)."""
    return sc.template_data(state, _entries(state, ctx))


class Templates:
    """Compiles a document's templates and expressions in the expression language of
    ``manager``'s plugins (``"plait"``: ``$steps`` is its syntax), looked up once; the
    language keeps what it compiled, so a template checked when the document loads is
    not compiled again when its workflow builds."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager if manager is not None else plait.get_plugin_manager()
        self._language: Any = None

    def compiled(
        self, text: str, *, template: bool, line: int, column: int, source: str | None
    ) -> Any:
        """``text`` compiled as a template or an expression at ``line``:``column`` of
        ``source``.

        :raises ExpressionError: it does not compile.
        """
        language = self._language
        if language is None:
            registry = self.manager.registry("expression_language")
            language = self._language = registry.get("plait", what="an expression")
        compile_ = language.compile_template if template else language.compile
        return compile_(text, source=source, line=line, column=column)

    def config(self, config: Mapping[str, Any], key: str, ctx: BuildContext) -> Any:
        """The expression (or, with ``template``, the template) at ``config[key]``,
        compiled at the step's position (``at``); a problem is a ConfigError at
        ``/config/<key>``."""
        at = config.get("at")
        line, column = at if isinstance(at, list) and len(at) == 2 else (1, 1)
        try:
            return self.compiled(
                str(config.get(key, "")),
                template=bool(config.get("template")),
                source=ctx.source,
                line=line,
                column=column,
            )
        except PlaitError as exc:
            raise config_error(ctx, str(exc), f"/{key}", at=config.get("at")) from None

    def template(self, text: str | None, at: Any, source: str | None) -> Any:
        """The template ``text`` at ``at`` (``[line, column]``), or ``None`` for no text."""
        if not text:
            return None
        line, column = at if isinstance(at, list) and len(at) == 2 else (1, 1)
        return self.compiled(text, template=True, line=line, column=column, source=source)


def config_error(ctx: BuildContext, message: str, path: str = "", at: Any = None) -> ConfigError:
    """A problem at ``/config<path>`` of the step's node and, when the step's YAML position
    (``at``) is known, at its line and column too."""
    line, column = at if isinstance(at, list) and len(at) == 2 else (None, None)
    return ConfigError(
        message,
        SourcePosition(source=ctx.source, line=line, column=column, path=f"/config{path}"),
    )


def _inner_path(problem: Any) -> str:
    path = str(getattr(getattr(problem, "position", None), "path", None) or "")
    return path.removeprefix("/nodes/0")


class StepNode(Executor):
    """The base of the steps executors."""


class StepKind(abc.ABC):
    """The base of the steps kinds: each declares its config's keys and their JSON types
    (``required``, ``optional``); :attr:`config_schema` is made from them, and
    :meth:`check` checks a config with it (``jsonschema``), then builds it."""

    required: Mapping[str, type | tuple[type, ...]] = {"step": str}
    optional: Mapping[str, type | tuple[type, ...]] = {}
    #: what compiles this kind's templates, for the last plugin manager it built for
    _templates: Templates | None = None

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """What the step may make Plait do: nothing of its own (conditions and templates
        are expressions); the agent or executor kind it wraps may need more."""
        return set()

    def templates(self, ctx: BuildContext) -> Templates:
        """What compiles the templates of the steps this kind builds for ``ctx``'s
        plugins (one per plugin manager: a kind belongs to one manager's registry)."""
        manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
        held = self._templates
        if held is None or held.manager is not manager:
            held = self._templates = Templates(manager)
        return held

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

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every way ``config`` breaks :attr:`config_schema` (each at its path under
        ``/config`` and at the step's line and column, an unknown key with a
        did-you-mean), else what building it reports."""
        prefix = f"executor {ctx.node_id!r}: "
        shape = _shape(config)
        found = [] if shape in self._valid_shapes else self._check_config(config, ctx, shape)
        problems = [
            config_error(
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
                return [config_error(ctx, str(exc), at=config.get("at"))]
            # the step's own one-node workflow did not build: its problems, at this
            # step's config (``/nodes/0/config/ref`` there is ``/config/config/ref`` here)
            return [
                config_error(ctx, getattr(p, "reason", str(p)), _inner_path(p), at=config.get("at"))
                for p in inner
            ]
        return []

    @functools.cached_property
    def _valid_shapes(self) -> set[tuple[Any, ...]]:
        """The shapes (:func:`_shape`) of the configs jsonschema found valid for this kind:
        a 1,000-step file builds 1,000 configs of a few shapes, and the schema reads
        nothing of a config but its shape."""
        return set()

    def _check_config(
        self, config: Mapping[str, Any], ctx: BuildContext, shape: tuple[Any, ...] | None
    ) -> list[ConfigError]:
        found = check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
        if not found and shape is not None:
            if len(self._valid_shapes) >= SHAPES:
                self._valid_shapes.clear()
            self._valid_shapes.add(shape)
        return found

    def validate(self, config: Mapping[str, Any], ctx: BuildContext) -> None:
        """Raise :class:`ConfigError` for a config that cannot build (default: build it)."""
        self.create(config, ctx)

    @abc.abstractmethod
    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """Build the step's executor from a config :meth:`check` accepted."""


#: how many config shapes a kind remembers as valid
SHAPES = 1024


def _shape(config: Any) -> tuple[Any, ...] | None:
    """What :attr:`StepKind.config_schema` reads of ``config``: its keys, in order, and the
    type of each value (a float's value too: ``1.0`` is an integer to JSON Schema);
    ``None`` for a config that is not a mapping."""
    if not isinstance(config, Mapping):
        return None
    return tuple([(k, v if type(v) is float else type(v)) for k, v in config.items()])


class NoConfigCheck(StepKind):
    """A kind whose config needs no check beyond its schema (nothing to build early)."""

    def validate(self, config: Mapping[str, Any], ctx: BuildContext) -> None:
        return None


#: the keys of every step that runs: its id and the loop limit
STEP_CONFIG: Mapping[str, type] = {"step": str, "limit": int}
#: the optional key of a step that loops go back to: each loop's key -> the keys of the
#: loops inside it (see the module's docstring)
TARGET_CONFIG: Mapping[str, type] = {"loops": dict}
#: the optional keys of a step that gives a result: its label in the prior-outputs
#: block, whether it is the last step, the loop's back-edge it sends along
OUTPUT_CONFIG: Mapping[str, type] = {"label": str, "final": bool, "via": str}
