"""Plait: workflows of agents and any other async work, run in Pregel-style supersteps.

The kernel knows nothing concrete. Routers, merge strategies, converters, checkpoint
stores, builders, front-ends and the CLI come from plugins found through the entry-point
group ``plait``.

Writing a plugin takes three steps:

1. Implement one or more hooks from :mod:`plait.hookspecs`, marked with
   :data:`plait.hookimpl`::

       import plait

       @plait.hookimpl
       def plait_register_merge_strategies(register):
           register("longest", Longest())

2. Point an entry point of group ``plait`` at the module in your ``pyproject.toml``::

       [project.entry-points.plait]
       longest = "plait_longest"

3. ``pip install`` the distribution; ``plait.plugins.describe()`` lists it. In a script,
   ``plait.register(module_or_object)`` does the same without packaging.

Test it with the ``plait_testing`` pytest plugin (the ``plait-testing`` distribution).
"""

from __future__ import annotations

from typing import Any

from . import convert, errors, events, plugins
from .context import InvocationFailure, RequestResponse, WorkflowContext
from .convert import converter
from .errors import PlaitError, WorkflowRunError, WorkflowValidationError
from .events import RunStatus
from .executor import Executor, FunctionExecutor, executor, handler
from .hookspecs import hookimpl
from .load import load
from .plugins import describe, get_plugin_manager, register, unregister
from .policies import RetryPolicy
from .spec import EdgeGroupSpec, NodeSpec, WorkflowSpec
from .types import Never
from .workflow import Workflow, WorkflowRunResult

__all__ = [
    "EdgeGroupSpec",
    "Executor",
    "FunctionExecutor",
    "InvocationFailure",
    "Never",
    "NodeSpec",
    "PlaitError",
    "RequestResponse",
    "RetryPolicy",
    "RunStatus",
    "Workflow",
    "WorkflowContext",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowSpec",
    "WorkflowValidationError",
    "__version__",
    "convert",
    "converter",
    "describe",
    "errors",
    "events",
    "executor",
    "get_plugin_manager",
    "handler",
    "hookimpl",
    "load",
    "plugins",
    "register",
    "unregister",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return plugins.core_version()
    raise AttributeError(f"module 'plait' has no attribute {name!r}")
