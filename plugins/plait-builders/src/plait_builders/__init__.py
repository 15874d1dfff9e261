"""Builders for Plait workflows.

``WorkflowBuilder`` wires executors with edges, fan-out, fan-in and switches and builds an
immutable :class:`plait.Workflow`. The plugin also registers the ``python`` executor kind,
which builds an executor from an import path (``pkg.module:attr``) so declarative files and
resumed runs can rebuild executors from data.

Composition (seed 004, option 2): ``handle = builder.add_workflow(fragment, prefix=...)``
merges a builder, a built workflow, a connection or a published :class:`Fragment` under
``prefix/``; ``builder.connect(a, b, adapter=None, allow_lossy=False)`` wires points.
:class:`SequentialBuilder` and :class:`ConcurrentBuilder` compose the same way, and the
plugin implements ``plait_workflow_as_connection`` so ``Workflow.as_connection()`` works.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import plait
from plait import Executor, FunctionExecutor, Workflow
from plait.hookspecs import Register

from ._builder import Case, ExecutorRef, WorkflowBuilder
from ._compose import connection_from_workflow
from ._connection import (
    CompositionError,
    ConnectionHandle,
    ConnectionMixin,
    ConnectionPoint,
    Contract,
    WorkflowConnection,
)
from ._fragments import Fragment, FragmentInfo, list_fragments
from ._high_level import ConcurrentBuilder, HighLevelBuilder, SequentialBuilder
from ._nodes import FunctionNode
from ._typecheck import ConverterExecutor

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
    "SequentialBuilder",
    "WorkflowBuilder",
    "WorkflowConnection",
    "list_fragments",
    "plait_register_executor_kinds",
    "plait_workflow_as_connection",
    "python_executor",
]


def python_executor(id: str, config: Mapping[str, Any]) -> Executor:
    """Build an executor from ``config["ref"]`` (``module:attr``).

    ``attr`` may be an :class:`~plait.Executor` instance (re-used only when its id matches),
    an ``Executor`` subclass (instantiated with ``id``) or an async function.
    """
    ref = config.get("ref")
    if not isinstance(ref, str) or ":" not in ref:
        raise ValueError(f"executor {id!r}: config 'ref' must be 'module:attr', got {ref!r}")
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, FunctionExecutor):
        return FunctionExecutor(obj.fn, id=id)
    if isinstance(obj, Executor):
        if obj.id != id:
            raise ValueError(f"executor {id!r}: {ref} is an executor with id {obj.id!r}")
        return obj
    if isinstance(obj, type) and issubclass(obj, Executor):
        return obj(id)
    if callable(obj):
        return FunctionExecutor(obj, id=id)
    raise ValueError(f"executor {id!r}: {ref} is neither an executor nor an async function")


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register the ``python`` executor kind."""
    register("python", python_executor)


@plait.hookimpl
def plait_workflow_as_connection(workflow: Workflow, prefix: str | None) -> WorkflowConnection:
    """Clone a built workflow's topology into a new builder (``Workflow.as_connection``)."""
    return connection_from_workflow(workflow, prefix)
