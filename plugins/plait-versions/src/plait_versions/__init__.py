"""Version-safe runs for Plait: carry a durable run across a deploy.

A workflow declares a version (``Workflow(..., version=3)``, ``WorkflowBuilder(...,
version=3)``), and its checkpoints record it. When a stored run is resumed with a workflow
that changed, its policy decides (:func:`resume`, ``plait resume --on-change``):
``reject`` (the default), ``pin``, ``migrate`` or ``accept``.

- :class:`Migration`, :func:`register_migration`, :func:`migration`: functions from
  version N to N+1, registered from a script or through the ``plait_register_migrations``
  hook. Each takes a :class:`RunSnapshot` (executor states, pending messages, shared state,
  requests, outputs; stored values of classes as :class:`Record`) and returns the new one.
- :func:`resume`: the policy applied, then :meth:`plait.Workflow.resume`. A migrated run's
  chain runs on a copy; its result is checked against the new workflow's declared types;
  one new checkpoint records the new version and the migrations that ran.
- :class:`ChangePolicies`: the answer to the ``plait_change_policies`` hook, through which
  ``plait resume --on-change POLICY`` applies a policy (:class:`Prepared`) without
  importing this plugin.
- the ``version`` column of ``plait runs`` and ``plait ui`` (``plait_run_columns``): each
  run's version and short fingerprint.
- :func:`decide` and :class:`Verdict`: what a policy makes of a stored run, without
  running or writing anything; :func:`compat_report` for every unfinished run of a
  workflow, what ``plait compat TARGET --checkpoint URL`` prints (exit 1 when a run would
  be stranded); :func:`verdicts_of` for the runs named, what the ``COMPAT`` column of
  ``plait runs --against`` and ``plait ui --workflow`` shows (through
  ``plait_change_policies``).
- :func:`dry_run` and :class:`DryRun`: ``plait compat --dry-run``, a recorded run's last
  recorded superstep run again under the new workflow from a migrated copy
  (:func:`migrated_checkpoint`) of the checkpoint before it, against its record
  (plait-replay), nothing written to the store.
- Errors: :class:`MigrationError` (names the migration, the run, the path of the bad
  value), :class:`NoMigrationError`, :class:`PinnedRunError`.

Loading plugins imports this module alone: its names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import PluginManager, lazy_exports

if TYPE_CHECKING:
    from ._compat import (
        UNFINISHED as UNFINISHED,
        CompatReport as CompatReport,
        compat_report as compat_report,
        verdicts_of as verdicts_of,
    )
    from ._dry_run import DryRun as DryRun, dry_run as dry_run
    from ._errors import (
        MigrationError as MigrationError,
        NoMigrationError as NoMigrationError,
        PinnedRunError as PinnedRunError,
    )
    from ._migrations import (
        Migration as Migration,
        find_chain as find_chain,
        migration as migration,
        register_migration as register_migration,
    )
    from ._policies import (
        POLICIES as POLICIES,
        policy_for as policy_for,
        set_policy as set_policy,
    )
    from ._policy import (
        Verdict as Verdict,
        apply_verdict as apply_verdict,
        decide as decide,
        migrate_run as migrate_run,
        migrated_checkpoint as migrated_checkpoint,
        resume as resume,
    )
    from ._prepare import (
        ChangePolicies as ChangePolicies,
        Prepared as Prepared,
    )
    from ._snapshot import (
        PendingRequestRecord as PendingRequestRecord,
        Record as Record,
        RunSnapshot as RunSnapshot,
    )


@plait.hookimpl
def plait_addhooks(pluginmanager: PluginManager) -> None:
    """Declare the hook this plugin reads migrations from (:mod:`plait_versions.hookspecs`)
    and its registry, ``migration`` (a :class:`Migration`: ``workflow``, ``from_version``,
    ``migrate``)."""
    # (not `from . import hookspecs`, which asks this module's lazy exports first)
    import plait_versions.hookspecs as hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_registry(
        "plait_register_migrations", "migration", ("workflow", "from_version", "migrate")
    )


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_change_policies() -> Any:
    """The policies for a changed workflow, for ``plait resume --on-change``
    (:class:`ChangePolicies`: a light module; what applies a policy is imported when one is
    applied)."""
    from ._prepare import ChangePolicies

    return ChangePolicies()


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_run_columns() -> dict[str, Any]:
    """The ``version`` column of ``plait runs`` and ``plait ui``: each run's version and
    short fingerprint, from the metadata the listing read."""
    from ._columns import version_cell

    return {"version": version_cell}


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_register_commands(cli: Any) -> None:
    """Add ``plait compat`` (its module is imported when the command runs)."""
    from plait_cli import lazy_command

    cli.add_command(
        lazy_command(
            "compat",
            "plait_versions._command:compat_command",
            "Decide each unfinished stored run before a deploy.",
        )
    )


# each name is imported on first use: loading plugins imports only this module
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
