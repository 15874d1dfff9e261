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

3. ``pip install`` the distribution; ``plait.describe()`` lists it. In a script,
   ``plait.register(module_or_object)`` does the same without packaging.

Test it with the ``plait_testing`` pytest plugin (the ``plait-testing`` distribution).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__


class _Package(types.ModuleType):
    """``plait`` itself. ``plait.executor`` and ``plait.load`` are functions named like the
    submodules that define them; the import system binds a submodule on its package when it
    is first imported, which would hide the function — this keeps the function."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("executor", "load") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

from ._executor import executor as executor  # noqa: E402  (the decorator every workflow uses)

if TYPE_CHECKING:
    from . import _convert as convert, _errors as errors, _events as events, _plugins as plugins
    from ._context import (
        InvocationFailure as InvocationFailure,
        RequestResponse as RequestResponse,
        WorkflowContext as WorkflowContext,
    )
    from ._convert import converter as converter, register_type_hooks as register_type_hooks
    from ._errors import (
        CapabilityError as CapabilityError,
        CheckpointAuthError as CheckpointAuthError,
        CheckpointDecodeError as CheckpointDecodeError,
        CheckpointEncodeError as CheckpointEncodeError,
        CheckpointError as CheckpointError,
        CheckpointNotFoundError as CheckpointNotFoundError,
        ConfigError as ConfigError,
        ConverterError as ConverterError,
        CorruptCheckpointError as CorruptCheckpointError,
        DocumentError as DocumentError,
        ExecutorFailedError as ExecutorFailedError,
        ExecutorTimeoutError as ExecutorTimeoutError,
        ExpressionError as ExpressionError,
        IncompatiblePluginError as IncompatiblePluginError,
        LoadError as LoadError,
        NotPortableError as NotPortableError,
        PlaitError as PlaitError,
        PlaitWarning as PlaitWarning,
        PluginConflictError as PluginConflictError,
        PluginError as PluginError,
        PluginLoadError as PluginLoadError,
        PluginLoadErrors as PluginLoadErrors,
        RegistrationError as RegistrationError,
        ResponseTypeError as ResponseTypeError,
        RoutingError as RoutingError,
        RunLeaseError as RunLeaseError,
        RunOptionError as RunOptionError,
        SharedStateConflictError as SharedStateConflictError,
        SharedStateRaceError as SharedStateRaceError,
        SharedStateRaceWarning as SharedStateRaceWarning,
        SourcePosition as SourcePosition,
        StoreUnavailableError as StoreUnavailableError,
        SuperstepLimitError as SuperstepLimitError,
        TopologyMismatchError as TopologyMismatchError,
        TypeCheckError as TypeCheckError,
        UnhandledMessageError as UnhandledMessageError,
        UnknownNameError as UnknownNameError,
        VisitLimitError as VisitLimitError,
        WorkflowChangedError as WorkflowChangedError,
        WorkflowRunError as WorkflowRunError,
        WorkflowValidationError as WorkflowValidationError,
    )
    from ._events import (
        CustomEvent as CustomEvent,
        EventObserver as EventObserver,
        ExecutorCompleted as ExecutorCompleted,
        ExecutorFailed as ExecutorFailed,
        ExecutorInvoked as ExecutorInvoked,
        ExecutorRetrying as ExecutorRetrying,
        OutputEvent as OutputEvent,
        RequestInfoEvent as RequestInfoEvent,
        RunFinished as RunFinished,
        RunStarted as RunStarted,
        RunStatus as RunStatus,
        SuperstepFinished as SuperstepFinished,
        SuperstepStarted as SuperstepStarted,
        WorkflowEvent as WorkflowEvent,
        WorkflowRunResult as WorkflowRunResult,
    )
    from ._executor import (
        Executor as Executor,
        FunctionExecutor as FunctionExecutor,
        handler as handler,
    )
    from ._hookspecs import hookimpl as hookimpl
    from ._options import RetryPolicy as RetryPolicy
    from ._plugins import (
        describe as describe,
        get_plugin_manager as get_plugin_manager,
        register as register,
        unregister as unregister,
    )
    from ._spec import (
        EdgeGroupSpec as EdgeGroupSpec,
        NodeSpec as NodeSpec,
        WorkflowSpec as WorkflowSpec,
    )
    from ._types import Never as Never
    from ._workflow import Workflow as Workflow, load as load

#: Where each public name lives; imported on first use (PEP 562), so ``import plait`` and
#: ``plait --help`` do not pay for the runner, the converter records or the workflow IR.
_LAZY = {
    "CapabilityError": "_errors",
    "CheckpointAuthError": "_errors",
    "CheckpointDecodeError": "_errors",
    "CheckpointEncodeError": "_errors",
    "CheckpointError": "_errors",
    "CheckpointNotFoundError": "_errors",
    "ConfigError": "_errors",
    "ConverterError": "_errors",
    "NotPortableError": "_errors",
    "CorruptCheckpointError": "_errors",
    "CustomEvent": "_events",
    "DocumentError": "_errors",
    "EdgeGroupSpec": "_spec",
    "EventObserver": "_events",
    "Executor": "_executor",
    "ExecutorCompleted": "_events",
    "ExecutorFailed": "_events",
    "ExecutorFailedError": "_errors",
    "ExecutorInvoked": "_events",
    "ExecutorRetrying": "_events",
    "ExecutorTimeoutError": "_errors",
    "ExpressionError": "_errors",
    "FunctionExecutor": "_executor",
    "IncompatiblePluginError": "_errors",
    "InvocationFailure": "_context",
    "LoadError": "_errors",
    "Never": "_types",
    "NodeSpec": "_spec",
    "OutputEvent": "_events",
    "PlaitError": "_errors",
    "PlaitWarning": "_errors",
    "PluginConflictError": "_errors",
    "PluginError": "_errors",
    "PluginLoadError": "_errors",
    "PluginLoadErrors": "_errors",
    "RegistrationError": "_errors",
    "RequestInfoEvent": "_events",
    "RequestResponse": "_context",
    "ResponseTypeError": "_errors",
    "RetryPolicy": "_options",
    "RoutingError": "_errors",
    "RunFinished": "_events",
    "RunLeaseError": "_errors",
    "RunOptionError": "_errors",
    "RunStarted": "_events",
    "RunStatus": "_events",
    "SharedStateConflictError": "_errors",
    "SharedStateRaceError": "_errors",
    "SharedStateRaceWarning": "_errors",
    "SourcePosition": "_errors",
    "StoreUnavailableError": "_errors",
    "SuperstepFinished": "_events",
    "SuperstepLimitError": "_errors",
    "SuperstepStarted": "_events",
    "TopologyMismatchError": "_errors",
    "TypeCheckError": "_errors",
    "UnhandledMessageError": "_errors",
    "UnknownNameError": "_errors",
    "VisitLimitError": "_errors",
    "Workflow": "_workflow",
    "WorkflowChangedError": "_errors",
    "WorkflowContext": "_context",
    "WorkflowEvent": "_events",
    "WorkflowRunError": "_errors",
    "WorkflowRunResult": "_events",
    "WorkflowSpec": "_spec",
    "WorkflowValidationError": "_errors",
    "converter": "_convert",
    "describe": "_plugins",
    "get_plugin_manager": "_plugins",
    "handler": "_executor",
    "hookimpl": "_hookspecs",
    "load": "_workflow",
    "register": "_plugins",
    "register_type_hooks": "_convert",
    "unregister": "_plugins",
}
_SUBMODULES = frozenset({"convert", "errors", "events", "plugins"})
#: Every public name: the type checkers read the imports above (``X as X`` re-exports).
__all__ = ["__version__", "convert", "errors", "events", "executor", "plugins"]
__all__ += sorted(_LAZY)


def _import_lazily(name: str) -> Any:
    if name in _SUBMODULES:
        value: Any = importlib.import_module(f"{__name__}._{name}")
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


class _SubmoduleAliases:
    """``import plait.errors`` (and ``plait.events``, ``plait.convert``, ``plait.plugins``):
    the namespaces ``plait`` offers as attributes import as the private modules that hold
    them, only when asked for, so ``import plait`` stays lazy."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in _SUBMODULES:
            return None
        import importlib.util

        module = importlib.import_module(f"{__name__}._{name}")
        return importlib.util.spec_from_loader(fullname, _Existing(module))


class _Existing:
    """A loader that hands over a module already imported."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        return None

    def load_module(self, fullname: str, /) -> types.ModuleType:
        return self.module


sys.meta_path.append(_SubmoduleAliases())
