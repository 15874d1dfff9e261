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
    "PlaitWarning",
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
    "ExecutorTimeoutError",
    "SuperstepLimitError",
    "VisitLimitError",
    "SharedStateConflictError",
    "UnhandledMessageError",
    "RoutingError",
    "ConverterError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "CheckpointDecodeError",
    "CheckpointAuthError",
    "RunLeaseError",
    "CheckpointEncodeError",
    "TopologyMismatchError",
    "StoreUnavailableError",
    "ResponseTypeError",
    "SourcePosition",
    "LoadError",
    "ExpressionError",
    "ConfigError",
    "DocumentError",
]


class PlaitError(Exception):
    """Base of every error Plait raises on purpose."""


class PlaitWarning(UserWarning):
    """Something is probably wrong but Plait can go on (a name clash between plugins, a
    disabled plugin name that matches nothing)."""


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
# text and data: workflow files, expressions, executor configs
# ---------------------------------------------------------------------------


class SourcePosition:
    """Where a problem is in a document: ``line``/``column`` (1-based) for text, or a JSON
    ``path`` (``/nodes/0/is_entry``) for data, plus the ``source`` (file name or
    ``<string>``) and the offending line of text, when known.

    .. versionadded:: 0.1
    """

    __slots__ = ("column", "line", "path", "source", "text")

    def __init__(
        self,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        path: str | None = None,
        text: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.path = path
        self.text = text

    def __str__(self) -> str:
        where = self.source or "<string>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.path is not None:
            where += f" at {self.path}"
        return where

    def caret(self) -> str:
        """The offending line and a caret under the column (``SyntaxError``'s layout), or
        an empty string when the text is not known."""
        if self.text is None or self.column is None:
            return ""
        line = self.text.rstrip("\n")
        return f"    {line}\n    {' ' * max(self.column - 1, 0)}^"

    def __repr__(self) -> str:
        return f"SourcePosition({self!s})"


class _Positioned(PlaitError):
    """An error at a :class:`SourcePosition`; the message starts with the position and
    ends with the caret line."""

    def __init__(self, message: str, position: SourcePosition | None = None) -> None:
        self.reason = message
        self.position = position or SourcePosition()
        self.line = self.position.line
        self.column = self.position.column
        self.path = self.position.path
        caret = self.position.caret()
        head = f"{self.position}: {message}" if position is not None else message
        super().__init__(f"{head}\n{caret}" if caret else head)


class ExpressionError(_Positioned):
    """An expression or template that does not parse, or that failed to evaluate safely
    (a bound exceeded, a missing name where one is required)."""


class DocumentError(_Positioned):
    """A problem in a workflow document at a position (a syntax error, an unknown name, a
    byte the format does not allow); loaders collect them into a :class:`LoadError`."""


class ConfigError(_Positioned):
    """An executor kind's ``config`` does not fit its JSON Schema (``path`` says where)."""


class LoadError(PlaitError):
    """A workflow document (flow, JSON DAG, YAML steps …) is wrong; ``problems`` holds
    every problem found, each a positioned error, sorted by position.

    .. versionadded:: 0.1
    """

    def __init__(self, problems: Sequence[PlaitError], *, source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = source or "<string>"
        body = "\n".join(f"  - {p}".replace("\n", "\n    ") for p in self.problems)
        super().__init__(f"{where}: {len(self.problems)} problem(s):\n{body}")


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


class ExecutorTimeoutError(WorkflowRunError):
    """An invocation ran past its ``timeout`` (``limit`` seconds). A retry policy may retry it."""

    def __init__(self, message: str, *, executor_id: str, superstep: int, limit: float) -> None:
        super().__init__(message, executor_id=executor_id, superstep=superstep)
        self.limit = limit


class SuperstepLimitError(WorkflowRunError):
    """The run went past ``max_supersteps``."""


class VisitLimitError(WorkflowRunError):
    """An executor ran more often than its visit limit allows."""


class SharedStateConflictError(WorkflowRunError):
    """Two executors wrote one shared-state key in one superstep, and no reducer is
    declared for that key (the ``shared_reducers`` run option).

    .. versionadded:: 0.1
    """


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


class CheckpointDecodeError(CorruptCheckpointError):
    """A stored checkpoint names a type the workflow does not declare (or holds a value
    that does not rebuild into its declared type); names the run, the checkpoint and the
    type tag. Nothing named only by stored data is ever imported or built.

    .. versionadded:: 0.1
    """


class CheckpointAuthError(CorruptCheckpointError):
    """A checkpoint's MAC is missing or wrong for every configured ``checkpoint_key``, or
    an encrypted checkpoint cannot be decrypted with them.

    .. versionadded:: 0.1
    """


class RunLeaseError(CheckpointError):
    """Another live worker holds the run's lease (one writer per run), or this worker's
    lease was taken over; names the holder (host, pid, since).

    .. versionadded:: 0.1
    """


class CheckpointEncodeError(CheckpointError):
    """A value in the run's state cannot be encoded; names the executor or state key."""


class TopologyMismatchError(CheckpointError):
    """A checkpoint was taken on a different graph than the one resuming it."""


class StoreUnavailableError(CheckpointError):
    """A checkpoint store cannot be reached."""


class ResponseTypeError(PlaitError, TypeError):
    """A human-in-the-loop response has the wrong type; the request stays pending."""
