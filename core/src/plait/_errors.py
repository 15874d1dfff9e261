"""One error hierarchy for Plait, rooted at :class:`PlaitError`.

Every error names the thing it is about (executor id, plugin distribution, edge, run id)
and, where it can, says how to fix it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import ExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "PatchError",
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
    "NotPortableError",
    "WorkflowRunError",
    "ExecutorFailedError",
    "ExecutorTimeoutError",
    "SuperstepLimitError",
    "VisitLimitError",
    "SharedStateConflictError",
    "SharedStateRaceError",
    "SharedStateRaceWarning",
    "UnhandledMessageError",
    "RoutingError",
    "ConverterError",
    "CheckpointError",
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

    ``text`` keeps at most :attr:`WINDOW` characters of a long line, around ``column``
    (cut ends marked ``…``), so a problem on a 100 KB line costs a few hundred bytes. A
    caller that has only a piece of the line passes it with ``text_column``, the column
    where the piece starts.
    """

    __slots__ = ("_caret_column", "column", "line", "path", "source", "text")

    #: the most characters of the offending line a position keeps and shows
    WINDOW = 120

    def __init__(
        self,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        path: str | None = None,
        text: str | None = None,
        text_column: int = 1,
    ) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.path = path
        self._caret_column = None if column is None else column - text_column + 1
        if text is not None and (len(text) > self.WINDOW or text_column > 1):
            text, self._caret_column = _excerpt(
                text, self._caret_column, self.WINDOW, cut_before=text_column > 1
            )
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
        if self.text is None or self._caret_column is None:
            return ""
        line = self.text.rstrip("\n")
        return f"    {line}\n    {' ' * max(self._caret_column - 1, 0)}^"

    def __repr__(self) -> str:
        return f"SourcePosition({self!s})"


def _excerpt(
    text: str, column: int | None, width: int, *, cut_before: bool = False
) -> tuple[str, int | None]:
    """At most ``width`` characters of ``text`` around ``column`` (1-based), ends that were
    cut marked ``…`` (the start too when ``cut_before``: ``text`` is itself a piece of a
    line), and the column's place in it."""
    at = min(max((column or 1) - 1, 0), len(text))
    start = max(0, min(at - width // 2, len(text) - width))
    end = start + width
    # A cut end's "…" takes the place of the character there (never the column's: it is
    # at least width // 2 from a cut); a piece that starts at 0 gets one in front.
    head = "…" if start > 0 or cut_before else ""
    tail = "…" if end < len(text) else ""
    body = text[start + (1 if start > 0 else 0) : end - len(tail)]
    shift = 1 if cut_before and start == 0 else 0
    return head + body + tail, None if column is None else at - start + 1 + shift


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
    """An executor kind's ``config`` does not fit its JSON Schema (``path`` says where).

    ``fix``, when the caller mends it by passing something, says what as data, for a
    front-end that words it its own way (``plait run`` names its flags): the option
    (``"allow_imports"``, ``"executors"``), the name to pass under it (``""`` for none) and
    the words of the message that say it in Python.
    """

    def __init__(
        self,
        message: str,
        position: SourcePosition | None = None,
        *,
        fix: tuple[str, str, str] | None = None,
    ) -> None:
        super().__init__(message, position)
        self.fix = fix


class LoadError(PlaitError):
    """A workflow document (flow, JSON DAG, YAML steps …) is wrong; ``problems`` holds
    every problem found, each a positioned error, sorted by position. The message shows
    the first :attr:`SHOWN` and says how many more there are.
    """

    #: how many problems the message shows; ``problems`` holds them all
    SHOWN = 50

    def __init__(self, problems: Sequence[PlaitError], *, source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = source or "<string>"
        shown = self.problems[: self.SHOWN]
        body = "\n".join(f"  - {p}".replace("\n", "\n    ") for p in shown)
        hidden = len(self.problems) - len(shown)
        if hidden:
            body += f"\n  … and {hidden:,} more"
        super().__init__(f"{where}: {len(self.problems)} problem(s):\n{body}")


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------


class NotPortableError(PlaitError):
    """A spec holds code that only exists in this process (a lambda, a closure …) and was
    asked to leave it: serialised, or rebuilt without the Python object.
    """


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


class PatchError(PlaitError):
    """A handler deprecated a patch (:meth:`~plait.WorkflowContext.deprecate_patch`) that
    this run answered ``False``: the run took the old branch, whose code is gone."""


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
    """


class SharedStateRaceError(WorkflowRunError):
    """Under ``strict=True``: one executor read a shared-state key in the superstep another
    executor wrote it in (see :class:`SharedStateRaceWarning`).
    """


class SharedStateRaceWarning(PlaitWarning):
    """One executor read a shared-state key in the superstep another wrote it in: the
    read saw the value from before the write (writes are visible from the next
    superstep), which is rarely what two branches sharing a key mean, and a branch that
    runs ahead in the pipelined schedule may read it before an earlier superstep's write
    is committed. The ``strict=True`` run option makes it a
    :class:`SharedStateRaceError`.
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
    """Base for checkpoint problems: what the durability and the checkpoint stores raise
    (``plait_durable.CheckpointNotFoundError``, ``RunLeaseError``,
    ``CorruptCheckpointError`` … come with ``plait-durable``, which raises them)."""
