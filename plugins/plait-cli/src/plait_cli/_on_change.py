"""``plait resume --on-change POLICY``: what a workflow that changed since a run's
checkpoint does to the run, decided by the plugin that answers the
``plait_change_policies`` hook (``plait-versions``).

This distribution neither imports that plugin nor keeps its own list of the policies:
it asks the hook for their names (to check ``POLICY`` and to list them in ``--help``) and
for the policy applied to the stored run before it resumes. Without a plugin that answers,
``--on-change`` is an error naming the distribution to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from plait import PlaitError, Workflow, get_plugin_manager

from ._follow import execute

__all__ = ["PolicyType", "apply_policy", "change_policies"]

#: The hook that gives the policies (the kernel names its distribution).
HOOK = "plait_change_policies"


def change_policies(policy: str) -> Any:
    """The policies of the plugin that answers ``plait_change_policies``, for
    ``--on-change policy``.

    :raises click.UsageError: no plugin answers, naming the distribution that would.
    """
    from plait import UnknownNameError

    manager = get_plugin_manager()
    try:
        return manager.change_policies(f"plait resume --on-change {policy}")
    except UnknownNameError as exc:
        distribution = manager.provider("hook", HOOK)
        if distribution is None:
            raise click.UsageError(str(exc)) from exc
        raise click.UsageError(
            f"--on-change {policy}: the policies for a changed workflow come with "
            f"{distribution} ({manager.how_to_install(distribution)}); without it, a "
            "changed workflow is refused (naming each change) or resumed as it is with "
            "--accept-changes"
        ) from exc


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
            return tuple(get_plugin_manager().change_policies("plait resume --help").names)
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
