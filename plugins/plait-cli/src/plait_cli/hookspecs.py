"""The hooks ``plait-cli`` calls, for the plugins that extend the ``plait`` command.

``plait-cli`` declares them as it is registered (its ``plait_addhooks``): a plugin that
implements one of them and does not require ``plait-cli`` marks it
``@hookimpl(optionalhook=True)``, so that it loads where ``plait-cli`` is not installed.
They are documented with the kernel's hooks, in ``docs/hooks.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plait.spi import hookspec

__all__: list[str] = []


@hookspec
def plait_run_columns() -> Mapping[str, Any] | None:
    """Add columns to the run listings of ``plait runs`` and ``plait ui``.

    A column is a name and a function of one listed run: ``value(info) -> str``, ``info``
    a ``plait_durable.RunInfo`` whose ``metadata`` is its latest checkpoint's metadata as
    the listing read it (stored JSON: untrusted, and empty when the listing did not read
    the checkpoint). The function reads only what ``info`` holds (never the store: a
    listing of thousands of runs calls it once per run) and returns a short string
    (``"-"`` when it has nothing to say); the listings escape it, shorten it, and show
    ``?`` when it raises. Column names are unique: two plugins giving one name is an error
    naming both.

    :return: ``{name: value}``, the columns in the order to show them, or ``None``;
        every implementation is called.
    """


@hookspec
def plait_pending_runs(store: str, queues: Sequence[str]) -> Any:
    """Add runs that have no checkpoint yet to the run listings of ``plait runs`` and
    ``plait ui``: runs a task queue holds for the checkpoint store ``store`` that no worker
    has checkpointed.

    ``plait-workers`` answers it for PostgreSQL and Redis stores.

    The answer is ``None`` (nothing for this store: decide from the URL alone, with no
    connection) or an ``async`` function of no arguments returning the runs, each a
    ``plait_durable.RunInfo`` whose ``status`` is the source's state (``queued`` …) and
    whose ``created_at``/``updated_at`` say when it was submitted. It reads its source
    once per listing, within a time bound of its own, and raises when it cannot (the
    listing then shows a warning naming the plugin, and the runs it has). A listed run
    that has checkpoints is shown once, from its latest checkpoint.

    :param store: the checkpoint store's URL.
    :param queues: queue names the user asked for besides the default
        (``plait runs --queue NAME``), or empty.
    :return: ``None`` or the async function; every implementation is called.
    """


@hookspec
def plait_register_commands(cli: Any) -> None:
    """Add sub-commands to the ``plait`` command-line interface.

    :param cli: the CLI's command group, a :class:`plait_cli.PlaitGroup` (a
        :class:`click.Group`).
    :return: nothing; every implementation is called.
    """


@hookspec(firstresult=True)
def plait_change_policies() -> Any:
    """Give what applies a policy for a changed workflow to a stored run before it
    resumes (``plait resume --on-change POLICY``).

    The answer has ``names``, the policies it knows in the order to list them, and
    ``async prepare(workflow, store, run_id, policy, *, allow=None)``, which applies
    ``policy`` to stored run ``run_id`` (or the run of checkpoint ``run_id``) of the
    checkpoint store ``store`` (a URL or an open store) for a resume with ``workflow``,
    ``allow`` being the grants typed for it: it may write the run a new checkpoint (a
    migration) or refuse the run (an error naming why), and returns what the resume
    needs: ``run_id``, ``accept_changes`` (bool), ``workflow`` (the one to resume with:
    ``workflow``, or another the policy chose) and ``note`` (a line for the person who
    resumes, or ``""``). For a workflow file the caller also passes ``document`` (its
    path) and, when typed, ``pinned_document`` and ``run_stored_document``; under ``pin``
    the answer's ``workflow`` may be the stored document's, loaded from it (its runs
    record that document, as any loaded workflow's do).
    ``async verdicts(workflow, store, run_ids, policy)`` judges stored runs without running
    or writing anything (``plait compat``'s verdict): run id -> a verdict with ``outcome``
    (``as_is``, ``accept``, ``migrate``, ``pinned`` or ``rejected``), ``reason``,
    ``chain``, ``changes``, ``stranded`` and ``to_json()``, for each of ``run_ids`` that
    is an unfinished run of ``workflow`` (``plait runs --against``, ``plait ui
    --workflow``). ``plait-versions`` gives it; without it, ``--on-change`` and
    ``--against`` fail naming that distribution.

    :return: the policies, or ``None`` to leave them to another plugin; stops at the
        first non-``None`` result.
    """
