"""``plait compat --dry-run``: a recorded run's next superstep under the new workflow,
run against what the record says the run did, with nothing written where it is stored.

A stored run stops at its latest checkpoint, and its record (plait-replay, ``record=True``)
holds what it did up to there and nothing after. So the superstep dry-run is the last one
the record holds, ``s``: the run's checkpoint before it (superstep ``s - 1``) is copied and
migrated through the chain the verdict names (:func:`~plait_versions.migrated_checkpoint`,
as a resume would migrate it), and the new workflow runs superstep ``s`` on that copy, in
a scratch store of this process's memory, every outside call answered from the record
(plait-replay's :func:`~plait_replay.replay_superstep`: its answerer, its network guard).
What the superstep leaves (messages, requests, outputs, shared, executor and edge group
state, the outside calls, the executors that ran) is compared with the record's state
after superstep ``s`` migrated through the same chain: a migration and code that keep the
run's behaviour make the two equal; anything else is the first divergence, named as
``plait replay`` names it (superstep, executor, message path, JSON Patch).

A run whose verdict resumes it on the new workflow (``as_is``, ``accept``, ``migrate``) is
dry-run; the others (``rejected``, ``pinned``: not the new workflow) are skipped, and so is
a run that was not recorded, each saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError
from plait_durable import checkpoint_view

from ._migrations import Migration, find_chain
from ._policy import Verdict, migrated_checkpoint

if TYPE_CHECKING:
    from plait import Workflow
    from plait_durable import Checkpoint, CheckpointStore

__all__ = ["OUTCOMES", "REPLAY_DISTRIBUTION", "DryRun", "dry_run"]

#: What a dry-run finds: ``match`` (the superstep did what the record did), ``diverged``
#: (the first difference), ``failed`` (the migration failed on the record's checkpoints,
#: or the superstep could not run), ``not_recorded``, ``skipped`` (the verdict resumes
#: the run on no new code), ``cannot`` (the record holds no superstep to compare).
OUTCOMES = ("match", "diverged", "failed", "not_recorded", "skipped", "cannot")
#: The distribution that answers outside calls from a record.
REPLAY_DISTRIBUTION = "plait-replay"
#: The verdicts that resume a run on the new workflow.
_RESUMED = ("as_is", "accept", "migrate")


@attrs.frozen
class DryRun:
    """What ``plait compat --dry-run`` found for one run.

    :param run_id: the run.
    :param outcome: one of :data:`OUTCOMES`.
    :param reason: one sentence.
    :param superstep: the superstep dry-run, when one was.
    :param divergence: for ``diverged``, the first difference (a
        :class:`plait_replay.Divergence`: superstep, executor, what, message path, JSON
        Patch from the record to the dry-run).
    """

    run_id: str
    outcome: str
    reason: str
    superstep: int | None = None
    divergence: Any = None

    def to_json(self) -> dict[str, Any]:
        """The dry-run as JSON (``plait compat --dry-run --format json``)."""
        found = self.divergence
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "superstep": self.superstep,
            "divergence": None if found is None else attrs.asdict(found),
        }

    def lines(self) -> list[str]:
        """The dry-run for a person: ``dry-run: would match (…)`` or the divergence."""
        if self.outcome == "match":
            return [f"dry-run: would match ({self.reason})"]
        if self.outcome == "diverged" and self.divergence is not None:
            return [
                f"dry-run: {self.divergence.headline()}",
                *self.divergence.details("  "),
            ]
        return [f"dry-run: {self.outcome.replace('_', ' ')}: {self.reason}"]


def _version(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("version")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _recorded(checkpoint: Checkpoint) -> bool:
    """Whether the run records its outside calls (plait-replay keeps ``record`` in every
    checkpoint's metadata: the listing's read tells, with no blob read)."""
    observers = checkpoint.metadata.get("observers")
    replay = observers.get("replay") if isinstance(observers, Mapping) else None
    return isinstance(replay, Mapping) and replay.get("record") is True


async def dry_run(workflow: Workflow, store: CheckpointStore, verdict: Verdict) -> DryRun:
    """Dry-run stored run ``verdict.run_id`` of ``store`` under ``workflow`` as
    ``verdict`` says it resumes (see the module). Reads ``store``; writes nothing there.

    :raises ImportError: plait-replay is not installed (:data:`REPLAY_DISTRIBUTION`).
    """
    from plait_replay import ReplayError, read_recording, replay_superstep

    run_id = verdict.run_id
    if verdict.outcome not in _RESUMED:
        why = "it would not resume" if verdict.stranded else "it resumes on its stored document"
        return DryRun(run_id, "skipped", f"{verdict.outcome}: {why}, not on the new workflow")
    latest = await store.latest(run_id)
    if latest is None or not _recorded(latest):
        return DryRun(
            run_id,
            "not_recorded",
            "the run was not recorded (run with record=True, plait run --record): its "
            "outside calls have no answers to dry-run against",
        )
    kept: dict[int, str] = {}  # superstep -> its last checkpoint that did not fail
    for info in await store.list(run_id):
        if info.status != "failed":
            kept[info.superstep] = info.checkpoint_id
    step = max(kept, default=0)
    if step - 1 not in kept:
        return DryRun(
            run_id,
            "cannot",
            f"the record holds no superstep before its checkpoint at superstep {step} to dry-run",
        )
    try:
        recording = await read_recording(store, run_id)
        before = await checkpoint_view(store, kept[step - 1])
        after = await checkpoint_view(store, kept[step])
        chains = [_chain(workflow, verdict, view.checkpoint) for view in (before, after)]
        start = _migrated(workflow, before.checkpoint, before.state, chains[0])
        expected = _migrated(workflow, after.checkpoint, after.state, chains[1]).state
        if chains[1]:  # delivery ids name deliveries, not contents: kept across a migration
            expected = _with_ids(expected, after.state)
        report = await replay_superstep(
            workflow, recording, start, expected, accept_changes=verdict.outcome == "accept"
        )
    except ReplayError as exc:
        return DryRun(run_id, "cannot", str(exc), step)
    except PlaitError as exc:
        return DryRun(run_id, "failed", f"{type(exc).__name__}: {exc}", step)
    how = f"superstep {step} run again from the checkpoint before it"
    if verdict.chain:
        how += f", both migrated through {', '.join(verdict.chain)}"
    if report.equal:
        return DryRun(run_id, "match", how, step)
    return DryRun(run_id, "diverged", how, step, report.divergence)


def _chain(workflow: Workflow, verdict: Verdict, checkpoint: Checkpoint) -> list[Migration]:
    """The migrations that take ``checkpoint`` to ``workflow``'s version under
    ``verdict`` (none unless it migrates).

    :raises NoMigrationError: no registered chain covers the checkpoint's version.
    """
    if verdict.outcome != "migrate":
        return []
    stored, version = _version(checkpoint.metadata), workflow.version
    if stored is None or version is None or workflow.name is None or stored == version:
        return []
    chain, missing = find_chain(workflow.name, stored, version)
    if missing is not None:
        from ._errors import NoMigrationError

        raise NoMigrationError(
            f"checkpoint {checkpoint.checkpoint_id} of run {checkpoint.run_id}: {missing}"
        )
    return list(chain)


def _migrated(
    workflow: Workflow,
    checkpoint: Checkpoint,
    state: Mapping[str, Any],
    chain: list[Migration],
) -> Checkpoint:
    """``checkpoint`` with its full ``state``, migrated through ``chain`` when it has
    migrations (checked and restored as a resume would), as it is otherwise."""
    if chain:
        return migrated_checkpoint(workflow, checkpoint, state, chain)
    return attrs.evolve(checkpoint, state=dict(state), base_id=None)


def _with_ids(state: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` with the delivery ids the record gave its pending messages, for every
    executor that has as many pending as the record had."""
    pending = state.get("pending") or {}
    ids = {
        eid: list(found)
        for eid, found in (recorded.get("ids") or {}).items()
        if len(found) == len(pending.get(eid) or ())
    }
    return {**state, "ids": ids} if ids else dict(state)
