"""Graph exporters for Plait: a workflow as a Mermaid flowchart or Graphviz DOT.

Registers the exporters ``mermaid`` and ``dot`` through ``plait_register_exporters``;
``Workflow.to_mermaid()``, ``Workflow.to_dot()`` and ``Workflow.export(format)`` look them
up. Composed fragments show as nested boxes, inserted converters and adapters apart from
executors, and the output is deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy_exports

if TYPE_CHECKING:
    from plait import WorkflowSpec

    from ._graph import (
        Boxes as Boxes,
        boxes as boxes,
        node_role as node_role,
        split_id as split_id,
        to_dot as to_dot,
        to_mermaid as to_mermaid,
    )


class MermaidExporter:
    """The ``mermaid`` exporter: :func:`to_mermaid`."""

    def export(self, spec: WorkflowSpec) -> str:
        """A Mermaid flowchart of ``spec``."""
        from ._graph import to_mermaid

        return to_mermaid(spec)


class DotExporter:
    """The ``dot`` exporter: :func:`to_dot`."""

    def export(self, spec: WorkflowSpec) -> str:
        """Graphviz DOT of ``spec``."""
        from ._graph import to_dot

        return to_dot(spec)


@plait.hookimpl
def plait_register_exporters(register: Register) -> None:
    """Register ``mermaid`` and ``dot``."""
    register("mermaid", MermaidExporter())
    register("dot", DotExporter())


# the exporters' work lives in ``_graph``, imported when a graph is first exported: loading
# plugins (every plait command) imports this module only
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
