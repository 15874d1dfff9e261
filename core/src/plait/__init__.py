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

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._version import __version__


class _Package(types.ModuleType):
    """``plait`` itself. ``plait.executor`` and ``plait.load`` are functions named like the
    submodules that define them; the import system binds a submodule on its package when it
    is first imported, which would hide the function — this keeps the function."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("executor", "load") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

from .executor import executor  # noqa: E402  (the decorator every workflow uses)

if TYPE_CHECKING:
    from . import convert, errors, events, plugins
    from .context import InvocationFailure, RequestResponse, WorkflowContext
    from .convert import converter
    from .errors import PlaitError, WorkflowRunError, WorkflowValidationError
    from .events import RunStatus
    from .executor import Executor, FunctionExecutor, handler
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


#: Where each public name lives; imported on first use (PEP 562), so ``import plait`` and
#: ``plait --help`` do not pay for the runner, the converter graph or the workflow IR.
_LAZY = {
    "EdgeGroupSpec": "spec",
    "Executor": "executor",
    "FunctionExecutor": "executor",
    "InvocationFailure": "context",
    "Never": "types",
    "NodeSpec": "spec",
    "PlaitError": "errors",
    "RequestResponse": "context",
    "RetryPolicy": "policies",
    "RunStatus": "events",
    "Workflow": "workflow",
    "WorkflowContext": "context",
    "WorkflowRunError": "errors",
    "WorkflowRunResult": "workflow",
    "WorkflowSpec": "spec",
    "WorkflowValidationError": "errors",
    "converter": "convert",
    "describe": "plugins",
    "get_plugin_manager": "plugins",
    "handler": "executor",
    "hookimpl": "hookspecs",
    "load": "load",
    "register": "plugins",
    "unregister": "plugins",
}
_SUBMODULES = frozenset({"convert", "errors", "events", "plugins"})


def _import_lazily(name: str) -> Any:
    if name in _SUBMODULES:
        value: Any = importlib.import_module(f"{__name__}.{name}")
    elif name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if not TYPE_CHECKING:
    # hidden from type checkers, which see the imports above: a misspelt name stays an error
    __getattr__ = _import_lazily
