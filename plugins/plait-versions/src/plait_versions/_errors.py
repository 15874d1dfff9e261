"""The errors of version-safe runs, each a :class:`plait.CheckpointError` (the root the
kernel keeps for stored runs), so a caller that handles a refused resume handles these."""

from __future__ import annotations

from collections.abc import Sequence

from plait import CheckpointError
from plait_durable import WorkflowChangedError

__all__ = ["MigrationError", "NoMigrationError", "PinnedRunError"]


class MigrationError(CheckpointError):
    """A migration failed, or what it returned does not fit the new workflow: the run is
    left exactly as it was. The message names the migration, the run and, for a value
    that does not fit, its path in the snapshot.

    :param migration: the migration's name (``"orders@1"``), or ``None`` when the chain's
        result as a whole does not fit.
    :param run_id: the run.
    :param path: where in the snapshot the bad value is (``pending['writer'][0].body``),
        or ``None`` when the migration itself raised.
    """

    def __init__(
        self, message: str, *, migration: str | None, run_id: str, path: str | None = None
    ) -> None:
        self.migration = migration
        self.run_id = run_id
        self.path = path
        super().__init__(message)


class NoMigrationError(WorkflowChangedError):
    """The policy is ``migrate`` and no registered chain of migrations covers the change
    (``changes`` lists what changed, as :class:`~plait_durable.WorkflowChangedError`)."""

    def __init__(self, message: str, changes: Sequence[str] = ()) -> None:
        super().__init__(message, list(changes))


class PinnedRunError(WorkflowChangedError):
    """The policy is ``pin`` and the run cannot go on with the workflow given: it is
    pinned to the version it started on, and no stored version of that workflow may run
    here (a Python workflow's code is not stored; resume it with the code of its version)."""

    def __init__(self, message: str, changes: Sequence[str] = ()) -> None:
        super().__init__(message, list(changes))
