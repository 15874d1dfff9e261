"""The flow DSL front-end: ``"researcher -> [analyzer, summarizer] -> writer"``.

Registers the loader ``flow`` (suffix ``.flow``) and the executor kinds ``flow.output``
and ``flow.join`` it compiles to. The grammar (``flow.lark``) and its transformer build the
:class:`plait.WorkflowSpec` directly; lark is imported on the first load, never when
the plugin registers. The reference is ``docs/flow.md``.

.. code-block:: python

    workflow = Flow(
        executors=[researcher, analyzer, summarizer, writer],
        flow="researcher -> [analyzer, summarizer] -> writer",
        merge="concat_newline",
    )

.. versionadded:: 0.1
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import plait
from plait import ConfigError
from plait.spi import Register

from ._kinds import FlowJoin, FlowJoinKind, FlowOutput, FlowOutputKind

if TYPE_CHECKING:
    from plait import Workflow, WorkflowSpec
    from plait.spi import BuildContext, PluginManager

__all__ = [
    "Flow",
    "FlowJoin",
    "FlowLoader",
    "FlowOutput",
    "plait_register_executor_kinds",
    "plait_register_loaders",
]


class FlowLoader:
    """The ``flow`` loader: flow text to a :class:`~plait.WorkflowSpec`.

    Options (``plait.load(text, format="flow", **options)``): ``merge`` (the merge strategy
    of parallel blocks that name none; default ``concat_newline``), ``merge_options`` (its
    options, e.g. ``{"separator": " | "}``) and ``name`` (the workflow's name).

    .. versionadded:: 0.1
    """

    suffixes: tuple[str, ...] = (".flow",)
    #: the loader options ``plait.load`` accepts for this format (it refuses others)
    options: tuple[str, ...] = ("merge", "merge_options", "name")

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec of ``text``.

        :raises plait.LoadError: every problem, each with its line, column and the
            line with a caret under it.
        """
        from ._compile import compile_flow

        return compile_flow(text, ctx)

    def detect(self, text: str) -> bool:
        """Whether ``text`` looks like a flow: it has a ``->`` and is neither JSON nor a
        YAML mapping."""
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
    :raises plait.LoadError: every problem of the flow, with positions.
    :raises plait.ConfigError: two agents with the same name, or an agent that is
        neither an executor nor an async function.

    .. versionadded:: 0.1
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
    """Register ``flow.output`` and ``flow.join``."""
    register("flow.output", FlowOutputKind())
    register("flow.join", FlowJoinKind())
