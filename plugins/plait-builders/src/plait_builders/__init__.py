"""Builders for Plait workflows.

``WorkflowBuilder`` wires executors with edges, fan-out, fan-in and switches and builds an
immutable :class:`plait.Workflow`.

Composition: ``handle = builder.add_workflow(fragment, prefix=...)``
merges a builder, a built workflow, a connection or a published :class:`Fragment` under
``prefix/``; ``builder.connect(a, b, adapter=None, allow_lossy=False)`` wires points.
:class:`SequentialBuilder` and :class:`ConcurrentBuilder` compose the same way; a built
:class:`plait.Workflow` is composed by cloning its topology (:func:`connection_from_workflow`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from plait_documents import (
        ConverterExecutor as ConverterExecutor,
        LossyConversion as LossyConversion,
    )

    from ._builder import (
        Case as Case,
        ConnectionMixin as ConnectionMixin,
        ExecutorRef as ExecutorRef,
        WorkflowBuilder as WorkflowBuilder,
        WorkflowConnection as WorkflowConnection,
        connection_from_workflow as connection_from_workflow,
    )
    from ._connection import (
        CompositionError as CompositionError,
        ConnectionHandle as ConnectionHandle,
        ConnectionPoint as ConnectionPoint,
        Contract as Contract,
    )
    from ._fragments import (
        Fragment as Fragment,
        FragmentInfo as FragmentInfo,
        list_fragments as list_fragments,
    )
    from ._high_level import (
        ConcurrentBuilder as ConcurrentBuilder,
        HighLevelBuilder as HighLevelBuilder,
        SequentialBuilder as SequentialBuilder,
    )
    from ._nodes import FunctionNode as FunctionNode

# a library, not a plugin (it registers nothing, so it has no entry point): importing it
# imports none of its names (nor the kernel's build modules under them) until one is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
