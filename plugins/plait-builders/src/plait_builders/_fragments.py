"""Published fragments: named, versioned, reusable pieces of workflow.

A distribution publishes fragments through the ``plait_register_fragments`` hook::

    import plait
    from plait_builders import Fragment, WorkflowBuilder

    def summarize() -> WorkflowBuilder:
        return WorkflowBuilder("summarize").add_edge(split, digest).set_start(split)

    SUMMARIZE = Fragment("textkit.summarize", summarize, version="1.0.0",
                         input_types=(str,), output_types=(Summary,))

    @plait.hookimpl
    def plait_register_fragments(register):
        register(SUMMARIZE.name, SUMMARIZE)

and users compose it by name: ``builder.add_workflow("textkit.summarize")``.
:func:`list_fragments` gives what a ``plait fragments`` command prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from plait import Workflow, get_plugin_manager
from plait.spi import PluginManager, type_name

from ._builder import ConnectionMixin, WorkflowBuilder
from ._common import CompositionError, _tags
from ._connection import Contract, port_dict

__all__ = ["Fragment", "FragmentInfo", "list_fragments"]


def _types(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _optional_tags(value: Any) -> tuple[str, ...] | None:
    return None if value is None else _tags(value)


@attrs.frozen
class Fragment:
    """A named, versioned workflow fragment a distribution publishes.

    :param name: its published name, dotted by distribution (``"textkit.summarize"``); also
        its default prefix when composed.
    :param factory: a function returning a fresh :class:`WorkflowBuilder` (or high-level
        builder) holding the fragment's wiring, with its start set.
    :param version: the fragment's version (its contract's, not the distribution's).
    :param input_types: what it accepts (default: read from the built fragment).
    :param output_types: what its exits send on (default: read from the built fragment).
    :param description: one line for listings.
    :param output_semantics: free tags saying what its output is (``"summary"``,
        ``"conversation"`` …; default: the built fragment's own).
    """

    name: str
    factory: Callable[[], Any]
    version: str = attrs.field(kw_only=True)
    input_types: tuple[Any, ...] | None = attrs.field(default=None, kw_only=True, converter=_types)
    output_types: tuple[Any, ...] | None = attrs.field(default=None, kw_only=True, converter=_types)
    description: str = attrs.field(default="", kw_only=True)
    output_semantics: tuple[str, ...] | None = attrs.field(
        default=None, kw_only=True, converter=_optional_tags
    )

    def build(self) -> WorkflowBuilder:
        """A fresh builder holding this fragment's wiring (the factory, called again).

        :raises CompositionError: when the factory returns something else than a builder.
        """
        made = self.factory()
        if isinstance(made, WorkflowBuilder):
            return made
        if isinstance(made, ConnectionMixin):
            return made.to_builder()
        raise CompositionError(
            f"fragment {self.name!r}: its factory must return a WorkflowBuilder, got "
            f"{type(made).__name__}"
        )

    def standalone(self) -> Workflow:
        """The fragment run on its own, as one node of a flow or a DAG runs it: built, with
        what each exit sends yielded as a workflow output (an exit sends on, since a
        fragment is made to be composed, and a built workflow's exit has nowhere to send).
        """
        from typing import Any as _Any

        from ._nodes import FunctionNode

        builder = self.build()
        exits = builder.as_connection().outputs
        for index, exit_id in enumerate(exits, start=1):
            sent = list(dict.fromkeys(builder._executors[exit_id].output_types))
            if not sent:
                continue  # it yields (or ends) on its own
            kind = sent[0] if len(sent) == 1 else _Any
            node_id = "fragment:output" if index == 1 else f"fragment:output#{index}"
            output = FunctionNode(
                node_id, _identity, input_type=kind, output_type=kind, emit="yield"
            )
            builder.add_edge(exit_id, output)
        return builder.build()

    @property
    def contract(self) -> Contract:
        """The declared types and semantics; what is not declared, and the ports, are read
        from a freshly built fragment."""
        derived = self.build().as_connection().contract
        return Contract(
            self.input_types if self.input_types is not None else derived.input_types,
            self.output_types if self.output_types is not None else derived.output_types,
            derived.workflow_output_types,
            output_semantics=(
                self.output_semantics
                if self.output_semantics is not None
                else derived.output_semantics
            ),
            ports=derived.ports,
        )


@attrs.frozen
class FragmentInfo:
    """One published fragment, as listings show it (JSON-ready through :meth:`to_dict`)."""

    name: str
    version: str
    distribution: str
    plugin: str
    input_types: tuple[str, ...]
    output_types: tuple[str, ...]
    description: str = ""
    #: free tags saying what its output is (``Contract.output_semantics``)
    output_semantics: tuple[str, ...] = ()
    #: its ports (``Contract.ports``), each as :func:`port_dict` gives it
    ports: tuple[dict[str, Any], ...] = attrs.field(default=(), hash=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        data = attrs.asdict(self)
        data["input_types"] = list(self.input_types)
        data["output_types"] = list(self.output_types)
        data["output_semantics"] = list(self.output_semantics)
        data["ports"] = [dict(port) for port in self.ports]
        return data


def _identity(message: Any) -> Any:
    return message


def list_fragments(plugin_manager: PluginManager | None = None) -> list[FragmentInfo]:
    """Every published fragment, sorted by name: what ``plait fragments`` prints.

    :param plugin_manager: where to look (default: the process-wide manager).
    """
    manager = plugin_manager or get_plugin_manager()
    infos: list[FragmentInfo] = []
    for entry in manager.registry("fragment").values():
        fragment = entry.obj
        contract = getattr(fragment, "contract", None)
        if not isinstance(contract, Contract):
            contract = Contract()
        infos.append(
            FragmentInfo(
                name=entry.name,
                version=str(getattr(fragment, "version", "") or "?"),
                distribution=entry.distribution,
                plugin=entry.plugin,
                input_types=tuple(type_name(t) for t in contract.input_types),
                output_types=tuple(type_name(t) for t in contract.output_types),
                description=str(getattr(fragment, "description", "") or ""),
                output_semantics=tuple(contract.output_semantics),
                ports=tuple(port_dict(p) for p in contract.ports),
            )
        )
    return infos
