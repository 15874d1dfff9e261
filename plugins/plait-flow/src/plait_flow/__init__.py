"""The flow DSL front-end: ``"researcher -> [analyzer, summarizer] -> writer"``.

Registers the loader ``flow`` (suffix ``.flow``) and the executor kinds ``flow.output``
and ``flow.join`` it compiles to. The grammar (``flow.lark``) and its transformer build the
:class:`plait.WorkflowSpec` directly; lark is imported on the first load, and the kinds
when a flow first builds their nodes, never when the plugin registers. The reference is
``docs/flow.md``.

.. code-block:: python

    workflow = Flow(
        executors=[researcher, analyzer, summarizer, writer],
        flow="researcher -> [analyzer, summarizer] -> writer",
        merge="concat_newline",
    )
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import plait
from plait import ConfigError, LoadError
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from plait import Workflow, WorkflowSpec
    from plait.spi import BuildContext, PluginManager

    from ._kinds import FlowJoin as FlowJoin, FlowOutput as FlowOutput
    from .errors import (
        AgentNotFoundInFlowError as AgentNotFoundInFlowError,
        InvalidFlowError as InvalidFlowError,
    )


class FlowLoader:
    """The ``flow`` loader: flow text to a :class:`~plait.WorkflowSpec`.

    A flow is bare flow text (``.flow``) or a YAML document with ``flow:`` and ``agents:``
    (``.flow.yaml``, or a ``.flow`` file holding one).

    Options (``plait.load(text, format="flow", **options)``): ``merge`` (the merge strategy
    of parallel blocks that name none; default ``concat_newline``), ``merge_options`` (its
    options, e.g. ``{"separator": " | "}``) and ``name`` (the workflow's name).
    """

    suffixes: tuple[str, ...] = (".flow", ".flow.yaml", ".flow.yml")
    #: the loader options ``plait.load`` accepts for this format (it refuses others)
    options: tuple[str, ...] = ("merge", "merge_options", "name")

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec of ``text``.

        :raises InvalidFlowError: every problem (a :class:`plait.LoadError`), each with its
            line, column and the line with a caret under it;
            :class:`AgentNotFoundInFlowError` when a name resolves to nothing.
        """
        from ._compile import compile_flow
        from ._document import is_document, read_document
        from .errors import flow_load_error

        if not is_document(text):
            return compile_flow(text, ctx)
        import attrs

        manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
        try:
            document = read_document(text, ctx.source, manager, allow_imports=ctx.allow_imports)
        except LoadError as exc:
            if type(exc) is not LoadError:  # a subclass (a capability refused) says more
                raise
            raise flow_load_error(exc.problems, ctx.source) from None
        ctx.agents.set_document(document.agents, document.declared)
        options = {**document.options, **ctx.options}  # the caller's options win
        ctx = attrs.evolve(ctx, options=options, manager=manager)
        if not document.text:
            raise flow_load_error(document.problems, ctx.source)
        try:
            spec = compile_flow(document.text, ctx)
        except LoadError as exc:  # every problem at once, in document order
            problems = [*document.problems, *exc.problems]
            problems.sort(key=lambda p: (getattr(p, "line", 0) or 0, getattr(p, "column", 0) or 0))
            raise flow_load_error(problems, ctx.source) from None
        if document.problems:
            raise flow_load_error(document.problems, ctx.source)
        if document.run_defaults:
            spec = attrs.evolve(spec, options={**spec.options, **document.run_defaults})
        return spec

    def detect(self, text: str) -> bool:
        """Whether ``text`` looks like a flow: it has a ``->`` and is neither JSON nor a
        YAML mapping; or it is a YAML flow document (a top-level ``flow:``)."""
        from ._document import is_document

        if is_document(text):
            return True
        stripped = text.lstrip()
        if "->" not in text or stripped.startswith("{"):
            return False
        for line in text.split("\n"):
            head = line.split("#", 1)[0].strip()
            if head.endswith(":") or (": " in head and head.split(":", 1)[0].isidentifier()):
                return False
        return True


def Flow(
    executors: Iterable[Any] | Mapping[str, Any] = (),
    flow: str = "",
    *,
    merge: str = "concat_newline",
    merge_options: Mapping[str, Any] | None = None,
    name: str | None = None,
    plugin_manager: PluginManager | None = None,
) -> Workflow:
    """A runnable workflow from a flow text and the agents it names.

    :param executors: the agents: :class:`plait.Executor` objects (named by their id) or
        ``async def`` functions (named by their ``__name__``, their returned value sent on);
        or a mapping from the names the flow uses to them.
    :param flow: the flow (``"researcher -> [analyzer, summarizer] -> writer"``).
    :param merge: the merge strategy of parallel blocks that name none.
    :param merge_options: options for that strategy (``{"separator": " | "}``).
    :param name: the workflow's name.
    :raises InvalidFlowError: every problem of the flow, with positions (a
        :class:`plait.LoadError`; :class:`AgentNotFoundInFlowError` for an unknown agent).
    :raises plait.ConfigError: two agents with the same name, or an agent that is
        neither an executor nor an async function.
    """
    by_name = _by_name(executors)
    options: dict[str, Any] = {"merge": merge}
    if merge_options:
        options["merge_options"] = dict(merge_options)
    if name is not None:
        options["name"] = name
    return plait.load(
        flow,
        format="flow",
        executors=by_name,
        plugin_manager=plugin_manager,
        **options,
    )


def _by_name(executors: Iterable[Any] | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(executors, Mapping):
        return dict(executors)
    found: dict[str, Any] = {}
    for obj in executors:
        if isinstance(obj, plait.Executor):
            key = obj.id
        elif inspect.iscoroutinefunction(obj):
            key = obj.__name__
        else:
            raise ConfigError(
                f"Flow(executors=...): {obj!r} is neither a plait.Executor nor an async "
                "function; pass a mapping to name other objects"
            )
        if key in found and found[key] is not obj:
            raise ConfigError(f"Flow(executors=...): two agents are named {key!r}")
        found[key] = obj
    return found


@plait.hookimpl
def plait_register_loaders(register: Register) -> None:
    """Register the ``flow`` loader."""
    register("flow", FlowLoader())


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register ``flow.output`` and ``flow.join``, imported when a flow first builds one."""
    provides = ("check", "create", "config_schema")
    register("flow.output", lazy("plait_flow._kinds:FlowOutputKind", provides=provides))
    register("flow.join", lazy("plait_flow._kinds:FlowJoinKind", provides=provides))


# the executors the kinds build live with them, imported on first use (loading plugins
# imports this module only)
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
