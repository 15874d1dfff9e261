"""Builders for Plait workflows.

``WorkflowBuilder`` wires executors with edges, fan-out, fan-in and switches and builds an
immutable :class:`plait.Workflow`.

Composition (seed 004, option 2): ``handle = builder.add_workflow(fragment, prefix=...)``
merges a builder, a built workflow, a connection or a published :class:`Fragment` under
``prefix/``; ``builder.connect(a, b, adapter=None, allow_lossy=False)`` wires points.
:class:`SequentialBuilder` and :class:`ConcurrentBuilder` compose the same way; a built
:class:`plait.Workflow` is composed by cloning its topology (:func:`connection_from_workflow`).

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from plait_documents import ConverterExecutor, LossyConversion

    from ._builder import (
        Case,
        ConnectionMixin,
        ExecutorRef,
        WorkflowBuilder,
        WorkflowConnection,
        connection_from_workflow,
    )
    from ._connection import CompositionError, ConnectionHandle, ConnectionPoint, Contract
    from ._fragments import Fragment, FragmentInfo, list_fragments
    from ._high_level import ConcurrentBuilder, HighLevelBuilder, SequentialBuilder
    from ._nodes import FunctionNode

# where each public name lives: this package is a plugin that registers nothing, and every
# plait command imports it to load plugins, so it imports none of them (nor the kernel's
# build modules under them) until one is used
_HOMES = {
    "Case": "_builder",
    "ExecutorRef": "_builder",
    "WorkflowBuilder": "_builder",
    "connection_from_workflow": "_builder",
    "CompositionError": "_connection",
    "ConnectionHandle": "_connection",
    "ConnectionMixin": "_builder",
    "ConnectionPoint": "_connection",
    "Contract": "_connection",
    "WorkflowConnection": "_builder",
    "Fragment": "_fragments",
    "FragmentInfo": "_fragments",
    "list_fragments": "_fragments",
    "ConcurrentBuilder": "_high_level",
    "HighLevelBuilder": "_high_level",
    "SequentialBuilder": "_high_level",
    "FunctionNode": "_nodes",
    # the converter nodes are the edge check's, which plait-documents shares with the
    # front-ends; they are named here too, where builder users look for them
    "ConverterExecutor": "_builder",
    "LossyConversion": "_builder",
}

__all__ = [
    "ConverterExecutor",
    "Case",
    "CompositionError",
    "ConcurrentBuilder",
    "ConnectionHandle",
    "ConnectionMixin",
    "ConnectionPoint",
    "Contract",
    "ExecutorRef",
    "Fragment",
    "FragmentInfo",
    "FunctionNode",
    "HighLevelBuilder",
    "LossyConversion",
    "SequentialBuilder",
    "WorkflowBuilder",
    "WorkflowConnection",
    "connection_from_workflow",
    "list_fragments",
]

__getattr__ = lazy_exports(__name__, _HOMES)
