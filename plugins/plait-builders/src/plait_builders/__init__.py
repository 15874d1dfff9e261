"""Builders for Plait workflows.

``WorkflowBuilder`` wires executors with edges, fan-out, fan-in and switches and builds an
immutable :class:`plait.Workflow`.

Composition: ``handle = builder.add_workflow(fragment, prefix=...)``
merges a builder, a built workflow, a connection or a published :class:`Fragment` under
``prefix/``; ``builder.connect(a, b, adapter=None, allow_lossy=False)`` wires points.
:class:`SequentialBuilder` and :class:`ConcurrentBuilder` compose the same way and declare
their extension points as ports (``handle.port("aggregator_out")``). A built
:class:`plait.Workflow` is composed by cloning its topology: ``workflow.as_connection()``,
which the kernel asks this distribution for through the ``plait_workflow_as_connection``
hook (its one hook; :func:`connection_from_workflow` does the work).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import lazy_exports

if TYPE_CHECKING:
    from plait_documents import (
        ConverterExecutor as ConverterExecutor,
        LossyConversion as LossyConversion,
    )

    from ._builder import (
        ConnectionMixin as ConnectionMixin,
        WorkflowBuilder as WorkflowBuilder,
        WorkflowConnection as WorkflowConnection,
        connection_from_workflow as connection_from_workflow,
    )
    from ._common import CompositionError as CompositionError
    from ._connection import (
        Case as Case,
        ConnectionHandle as ConnectionHandle,
        ConnectionPoint as ConnectionPoint,
        Contract as Contract,
        ExecutorRef as ExecutorRef,
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


@plait.hookimpl
def plait_workflow_as_connection(workflow: plait.Workflow, prefix: str | None) -> Any:
    """``Workflow.as_connection()``: the workflow's topology cloned into a connection."""
    from ._builder import connection_from_workflow

    return connection_from_workflow(workflow, prefix)


# its entry point implements one hook, and registers nothing: loading plugins imports this
# module, none of its names (nor the kernel's build modules under them) until one is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
