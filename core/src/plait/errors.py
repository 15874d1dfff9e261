"""One error hierarchy for Plait, rooted at :class:`PlaitError`.

Every error names the thing it is about (executor id, plugin distribution, edge, run id)
and, where it can, says how to fix it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import ExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "PlaitError",
    "PluginError",
    "PluginLoadError",
    "PluginLoadErrors",
    "PluginConflictError",
    "IncompatiblePluginError",
    "RegistrationError",
    "UnknownNameError",
    "WorkflowValidationError",
    "TypeCheckError",
    "RunOptionError",
    "WorkflowRunError",
    "ExecutorFailedError",
    "SuperstepLimitError",
    "VisitLimitError",
    "UnhandledMessageError",
    "RoutingError",
    "ConverterError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "CheckpointEncodeError",
    "TopologyMismatchError",
    "StoreUnavailableError",
    "ResponseTypeError",
]


class PlaitError(Exception):
    """Base of every error Plait raises on purpose."""


# ---------------------------------------------------------------------------
# plugins
# ---------------------------------------------------------------------------


class PluginError(PlaitError):
    """A plugin could not be loaded, registered or validated."""


class PluginLoadError(PluginError):
    """One plugin failed in one phase of loading.

    :param distribution: the distribution that ships the plugin (``"plait-redis"``).
    :param version: that distribution's version.
    :param entry_point: the entry point, as ``name = module:attr``.
    :param phase: ``compatibility``, ``import``, ``register`` or ``validate``.
    """

    def __init__(
        self,
        message: str,
        *,
        distribution: str,
        version: str,
        entry_point: str,
        phase: str,
    ) -> None:
        self.distribution = distribution
        self.version = version
        self.entry_point = entry_point
        self.phase = phase
        dist = f"{distribution} {version}" if version else distribution
        super().__init__(
            f"plugin {entry_point!r} from distribution {dist} failed in phase {phase!r}: {message}"
        )


class IncompatiblePluginError(PluginLoadError):
    """A plugin requires a ``plait-core`` version other than the running one."""


class PluginLoadErrors(ExceptionGroup, PluginError):  # type: ignore[misc]
    """Every plugin that failed to load, reported together."""

    def __new__(cls, message: str, errors: Sequence[Exception]) -> PluginLoadErrors:
        return super().__new__(cls, message, list(errors))

    def derive(self, excs: Sequence[Exception]) -> PluginLoadErrors:
        return PluginLoadErrors(self.message, excs)


class PluginConflictError(PluginError):
    """Two plugins registered the same name for the same kind."""


class RegistrationError(PluginError):
    """Something registered through a registry hook does not fit its kind's protocol."""


class UnknownNameError(PlaitError, LookupError):
    """A router, merge strategy, store scheme (…) name that no plugin registered."""


# ---------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------


class WorkflowValidationError(PlaitError):
    """A workflow is structurally wrong; ``problems`` lists every problem found."""

    def __init__(self, problems: Sequence[str], *, workflow: str | None = None) -> None:
        self.problems = list(problems)
        self.workflow = workflow
        where = f"workflow {workflow!r}" if workflow else "workflow"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{where} is invalid ({len(self.problems)} problem(s)):\n{lines}")


class TypeCheckError(WorkflowValidationError):
    """An edge connects a source whose messages the target cannot handle."""


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------


class RunOptionError(PlaitError, TypeError):
    """An unknown or invalid run option."""


class WorkflowRunError(PlaitError):
    """A run failed. ``superstep`` and ``executor_id`` say where, when known."""

    def __init__(
        self, message: str, *, executor_id: str | None = None, superstep: int | None = None
    ) -> None:
        self.executor_id = executor_id
        self.superstep = superstep
        super().__init__(message)


class ExecutorFailedError(WorkflowRunError):
    """An executor's handler raised; the original exception is the ``__cause__``."""


class SuperstepLimitError(WorkflowRunError):
    """The run went past ``max_supersteps``."""


class VisitLimitError(WorkflowRunError):
    """An executor ran more often than its visit limit allows."""


class UnhandledMessageError(WorkflowRunError):
    """A message reached an executor with no handler for its type, or had nowhere to go."""


class RoutingError(WorkflowRunError):
    """A router could not decide where a message goes (a switch with no match, …)."""


class ConverterError(WorkflowRunError):
    """A converter failed at run time."""


# ---------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------


class CheckpointError(PlaitError):
    """Base for checkpoint problems."""


class CheckpointNotFoundError(CheckpointError, LookupError):
    """No checkpoint with that id (or no checkpoint for that run)."""


class CorruptCheckpointError(CheckpointError):
    """A stored checkpoint does not decode or fails its integrity check."""


class CheckpointEncodeError(CheckpointError):
    """A value in the run's state cannot be encoded; names the executor or state key."""


class TopologyMismatchError(CheckpointError):
    """A checkpoint was taken on a different graph than the one resuming it."""


class StoreUnavailableError(CheckpointError):
    """A checkpoint store cannot be reached."""


class ResponseTypeError(PlaitError, TypeError):
    """A human-in-the-loop response has the wrong type; the request stays pending."""
