"""Plait: workflows of agents and any other async work, run in Pregel-style supersteps.

The kernel knows nothing concrete. Routers, merge strategies, converters, checkpoint
stores, builders, front-ends and the CLI come from plugins found through the entry-point
group ``plait``.

Writing a plugin takes three steps:

1. Implement one or more hooks (``plait._hookspecs``; the hook reference is
   docs/hooks.md), marked with :data:`plait.hookimpl`::

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

from typing import TYPE_CHECKING

from ._exports import lazy_exports

if TYPE_CHECKING:
    # submodules under public names (no ``X as X`` for these, hence the noqa)
    from . import (  # noqa: F401
        _errors as errors,
        _events as events,
        _plugins as plugins,
    )
    from ._context import (
        InvocationFailure as InvocationFailure,
        RequestResponse as RequestResponse,
        WorkflowContext as WorkflowContext,
    )
    from ._errors import (
        CheckpointError as CheckpointError,
        ConfigError as ConfigError,
        ConverterError as ConverterError,
        DocumentError as DocumentError,
        ExecutorFailedError as ExecutorFailedError,
        ExecutorTimeoutError as ExecutorTimeoutError,
        ExpressionError as ExpressionError,
        IncompatiblePluginError as IncompatiblePluginError,
        LoadError as LoadError,
        NotPortableError as NotPortableError,
        PatchError as PatchError,
        PlaitError as PlaitError,
        PlaitWarning as PlaitWarning,
        PluginConflictError as PluginConflictError,
        PluginError as PluginError,
        PluginLoadError as PluginLoadError,
        PluginLoadErrors as PluginLoadErrors,
        RegistrationError as RegistrationError,
        RoutingError as RoutingError,
        RunOptionError as RunOptionError,
        SharedStateConflictError as SharedStateConflictError,
        SharedStateRaceError as SharedStateRaceError,
        SharedStateRaceWarning as SharedStateRaceWarning,
        SourcePosition as SourcePosition,
        SuperstepLimitError as SuperstepLimitError,
        TypeCheckError as TypeCheckError,
        UnhandledMessageError as UnhandledMessageError,
        UnknownNameError as UnknownNameError,
        VisitLimitError as VisitLimitError,
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
        NestedEvent as NestedEvent,
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
        executor as executor,
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
        PortSpec as PortSpec,
        WorkflowSpec as WorkflowSpec,
    )
    from ._types import Never as Never
    from ._version import __version__ as __version__
    from ._workflow import Workflow as Workflow, load as load

if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    # every name is imported on first use, so `import plait` and `plait --help` pay for
    # neither the runner, the converter records nor the workflow IR
    __getattr__, __dir__ = lazy_exports(__name__)
