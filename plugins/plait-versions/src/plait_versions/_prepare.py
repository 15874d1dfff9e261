"""What ``plait resume --on-change POLICY`` asks of this plugin, through the
``plait_change_policies`` hook: the policies' names, and a policy applied to a stored run
before it resumes.

The names live in :mod:`._policies` and nowhere else: ``plait-cli`` lists and checks them
through the hook, and never imports this plugin. The module is light (``plait resume --help`` lists
the names): what applies a policy is imported when one is applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from plait import Workflow
    from plait_durable import CheckpointStore

    from ._policy import Verdict

from ._policies import POLICIES

__all__ = ["ChangePolicies", "Prepared"]


@attrs.frozen
class Prepared:
    """What a policy applied to a stored run leaves for the resume to do.

    :param run_id: the run (or checkpoint) to resume.
    :param accept_changes: resume it on the changed workflow as it is (policy ``accept``).
    :param workflow: the workflow to resume it with: the one given, or the one the policy
        chose.
    :param note: a line for the person who resumes (what was done to the run), or ``""``.
    """

    run_id: str
    accept_changes: bool
    workflow: Workflow
    note: str = ""


class ChangePolicies:
    """The answer to ``plait_change_policies``: :data:`POLICIES`, :meth:`prepare` and
    :meth:`verdicts`."""

    #: the policies, in the order they are listed
    names: tuple[str, ...] = POLICIES

    async def verdicts(
        self,
        workflow: Workflow,
        store: str | CheckpointStore,
        run_ids: Iterable[str],
        policy: str = "migrate",
    ) -> Mapping[str, Verdict]:
        """``plait compat``'s verdict (:class:`~plait_versions.Verdict`) on each of
        ``run_ids`` that is an unfinished run of ``workflow`` in ``store``, under
        ``policy``, by run id: what the
        ``COMPAT`` column of ``plait runs --against`` and ``plait ui --workflow`` shows.
        Nothing runs and nothing is written.

        :raises ValueError: ``policy`` is not one of :data:`POLICIES`.
        """
        from plait_durable import opened_store

        from ._compat import verdicts_of

        async with opened_store(store) as opened:
            return await verdicts_of(workflow, opened, run_ids, on_change=policy)

    async def prepare(
        self,
        workflow: Workflow,
        store: str | CheckpointStore,
        run_id: str,
        policy: str,
        *,
        allow: Any = None,
        document: str | None = None,
        pinned_document: str | None = None,
        run_stored_document: bool = False,
    ) -> Prepared:
        """Apply ``policy`` to stored run ``run_id`` (or the run of checkpoint
        ``run_id``) of ``store`` before it resumes with ``workflow``: a ``migrate``
        verdict migrates the run (one new checkpoint), a run the policy strands is
        refused, naming every change.

        :param allow: the grants typed for this resume (a workflow the policy builds gets
            these and never more).
        :param document: the path of the workflow file ``workflow`` was loaded from, if
            it was: under ``pin``, a changed file resumes the run on the document it
            stored (:mod:`._pin`: on a sealed store; on an unsigned one with
            ``pinned_document`` or ``run_stored_document``).
        :param pinned_document: the user's copy of the run's version, which must be
            byte-identical to the stored one.
        :param run_stored_document: the user saw the diff and runs the stored version.
        :raises PinnedRunError: policy ``pin`` and the run cannot stay on its version.
        :raises NoMigrationError: policy ``migrate`` and no chain covers the change.
        :raises MigrationError: a migration failed or left a value that does not fit.
        :raises ValueError: ``policy`` is not one of :data:`POLICIES`.
        """
        from plait_durable import opened_store

        from ._policy import apply_verdict, decide, stored_checkpoint

        async with opened_store(store) as opened:
            found = await stored_checkpoint(opened, run_id)
            verdict = await decide(workflow, opened, found, policy)
            if verdict.outcome == "pinned" and document is not None:
                from ._pin import pinned_workflow

                pinned = await pinned_workflow(
                    opened,
                    found,
                    verdict.changes,
                    document=document,
                    allow=allow,
                    pinned_document=pinned_document,
                    run_stored_document=run_stored_document,
                )
                if pinned is not None:  # (its workflow carries the stored document)
                    return Prepared(run_id, False, pinned.workflow, pinned.note)
            await apply_verdict(workflow, opened, found, verdict)
        note = ""
        if verdict.outcome == "migrate":
            note = (
                f"run {verdict.run_id} migrated from version {verdict.stored_version} to "
                f"{verdict.version} ({', '.join(verdict.chain)})"
            )
        # a migrated run goes on from its new checkpoint; any other from the one named
        resumed = found.run_id if verdict.outcome == "migrate" else run_id
        return Prepared(resumed, verdict.outcome == "accept", workflow, note)
