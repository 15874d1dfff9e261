"""``plait resume --on-change POLICY``: what a workflow that changed since a run's
checkpoint does to the run, decided by the plugin that answers the
``plait_change_policies`` hook (``plait-versions``); and the ``COMPAT`` column of ``plait
runs --against TARGET`` and ``plait ui --workflow TARGET``, that plugin's verdict on each
listed run (:func:`compat_verdicts`, :func:`compat_cell`).

This distribution neither imports that plugin nor keeps its own list of the policies:
it asks the hook for their names (to check ``POLICY`` and to list them in ``--help``), for
the policy applied to the stored run before it resumes, and for its verdicts. Without a
plugin that answers, ``--on-change`` and ``--against`` are errors naming the distribution
to install.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import click
from plait import PlaitError, Workflow, get_plugin_manager

from ._follow import execute

__all__ = [
    "COMPAT_POLICY",
    "PolicyType",
    "apply_policy",
    "change_policies",
    "compat_cell",
    "compat_verdicts",
    "policies",
]

#: The hook that gives the policies (:mod:`plait_cli.hookspecs`).
HOOK = "plait_change_policies"
#: The distribution that answers it, named when no installed plugin does.
PROVIDER = "plait-versions"


def policies(what: str) -> Any:
    """What the first plugin to answer ``plait_change_policies`` gives (its ``names``,
    ``prepare`` and ``verdicts``), for ``what`` (the words an error names it by).

    :raises UnknownNameError: no plugin answers.
    :raises PluginLoadError: the plugin that answers raises or gives an object without
        ``names``, ``prepare`` and ``verdicts``, naming its distribution.
    """
    return get_plugin_manager().first(
        HOOK, "change policies", what, ("names", "prepare", "verdicts")
    )


#: The policy the ``COMPAT`` column judges runs under unless ``--on-change`` says
#: otherwise (``plait compat``'s default too).
COMPAT_POLICY = "migrate"


def change_policies(policy: str, *, against: bool = False) -> Any:
    """The policies of the plugin that answers ``plait_change_policies``, for
    ``--on-change policy`` (or, ``against``, for the verdicts of ``--against``).

    :raises click.UsageError: no plugin answers, naming the distribution that would.
    """
    from plait import UnknownNameError

    asked = "--against" if against else f"--on-change {policy}"
    try:
        return policies(f"plait {'runs' if against else 'resume'} {asked}")
    except UnknownNameError as exc:
        manager = get_plugin_manager()
        distribution = manager.provider("hook", HOOK) or PROVIDER
        without = (
            "no stored run is judged against a workflow (plait compat comes with it too)"
            if against
            else "a changed workflow is refused (naming each change) or resumed as it is "
            "with --accept-changes"
        )
        raise click.UsageError(
            f"{asked}: the policies for a changed workflow come with {distribution} "
            f"({manager.how_to_install(distribution)}); without it, {without}"
        ) from exc


async def compat_verdicts(
    workflow: Workflow, store: Any, run_ids: Iterable[str], policy: str = COMPAT_POLICY
) -> Mapping[str, Any]:
    """``plait compat``'s verdict on each of ``run_ids`` that is an unfinished run of
    ``workflow`` in ``store`` (a URL or an open store) under ``policy``, by run id, from
    the plugin that answers ``plait_change_policies`` (its ``verdicts``: nothing runs,
    nothing is written); the other runs are left out.

    :raises UnknownNameError: no plugin answers, naming the distribution that would.
    """
    answer = policies("the COMPAT column")
    found: Mapping[str, Any] = await answer.verdicts(workflow, store, list(run_ids), policy)
    return found


def compat_cell(verdict: Any) -> str:
    """A verdict in the ``COMPAT`` column: its outcome (``as_is``, ``accept``, ``migrate``,
    ``pinned``, ``rejected``) and, for ``migrate``, the migrations it applies
    (``migrate shop@1,shop@2``); ``-`` for a run that was not judged (``None``: a run
    that finished, or another workflow's)."""
    if verdict is None:
        return "-"
    chain = ",".join(verdict.chain)
    return f"{verdict.outcome} {chain}" if chain else str(verdict.outcome)


if TYPE_CHECKING:
    _ParamType = click.ParamType[str]
else:  # generic only from click 8.5 on, which plait-cli does not require
    _ParamType = click.ParamType


class PolicyType(_ParamType):
    """``--on-change``'s value: one of the names the ``plait_change_policies`` plugin
    gives, listed in ``--help`` when one is installed."""

    name = "policy"

    def _names(self) -> tuple[str, ...]:
        try:
            return tuple(policies("plait resume --help").names)
        except PlaitError:  # none installed (or a broken plugin, which running says)
            return ()

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        """``[reject|pin|…]`` as the plugin names them, else ``POLICY``."""
        names = self._names()
        return f"[{'|'.join(names)}]" if names else "POLICY"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[Any]:
        """The policies that start with ``incomplete``."""
        from click.shell_completion import CompletionItem

        return [CompletionItem(n) for n in self._names() if n.startswith(incomplete)]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """``value`` when the plugin knows it as a policy."""
        policy = str(value)
        names = tuple(change_policies(policy).names)
        if policy not in names:
            self.fail(f"{policy!r} is not one of {', '.join(map(repr, names))}", param, ctx)
        return policy


def apply_policy(
    workflow: Workflow,
    run_id: str,
    store: str,
    policy: str,
    allow: Any,
    json_events: bool,
    **pinning: Any,
) -> Any:
    """Apply ``policy`` to stored run ``run_id`` of ``store`` before it resumes with
    ``workflow`` (a migrated run gets its new checkpoint; a run the policy strands is a
    CLI error naming why), and say what was done (unless stderr is JSON lines).

    :param pinning: for a workflow file, what ``pin`` needs: ``document`` (its path),
        ``pinned_document`` (``--pinned-document``), ``run_stored_document``.
    :return: what the resume needs (``run_id``, ``accept_changes``, ``workflow``: under
        ``pin``, the stored document's, which its checkpoints then record).
    """
    policies = change_policies(policy)
    given = {k: v for k, v in pinning.items() if v is not None and v is not False}

    async def prepare() -> Any:
        return await policies.prepare(workflow, store, run_id, policy, allow=allow, **given)

    prepared = execute(prepare)
    if prepared.note and not json_events:
        click.echo(prepared.note, err=True)
    return prepared
