"""Builders for Plait workflows.

``WorkflowBuilder`` wires executors with edges, fan-out, fan-in and switches and builds an
immutable :class:`plait.Workflow`. The plugin also registers the ``python`` executor kind,
which builds an executor from an import path (``pkg.module:attr``) so declarative files and
resumed runs can rebuild executors from data.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import plait
from plait import Executor, FunctionExecutor
from plait.hookspecs import Register

from ._builder import Case, ExecutorRef, WorkflowBuilder

__all__ = ["Case", "ExecutorRef", "WorkflowBuilder", "python_executor"]


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
