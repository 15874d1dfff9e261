"""What a changed workflow does to a stored run: the policy, the verdict, the migration.

A run's policy (per run: ``resume(on_change=...)``, ``plait resume --on-change``; per
workflow: :func:`set_policy`; else ``reject``) decides what happens when the workflow
given to resume it is not the one its latest checkpoint records (its topology signature
or its fingerprint differ):

- ``reject``: refused, naming every change (plait-durable's
  :class:`~plait_durable.WorkflowChangedError`, today's default);
- ``pin``: the run stays on the version it started on; a Python workflow's code is not
  stored, so it is refused here (:class:`PinnedRunError`) until the code of its version
  resumes it;
- ``migrate``: the registered chain from the run's version to the workflow's is applied
  (:func:`migrate_run`), or the run is refused when no chain covers it
  (:class:`NoMigrationError`);
- ``accept``: the new workflow runs on the old state (``accept_changes=True``), when the
  topology is the same.

:func:`decide` gives the verdict without running or writing anything (what ``plait
compat`` prints); :func:`resume` applies it and resumes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs
from plait import CheckpointError, get_plugin_manager
from plait.spi import RunState, compiled_graph
from plait_durable import (
    DOCUMENT_KEY,
    BlobStore,
    BlobWriter,
    CheckpointStore,
    EncodeError,
    RunLeaseError,
    checkpoint_view,
    externalize_state,
    fingerprint_changes,
    has_blobs,
    opened_store,
    recorded_fingerprint,
)

from ._check import BadValue, check_state
from ._errors import MigrationError, NoMigrationError, PinnedRunError
from ._migrations import Migration, find_chain
from ._policies import policy_for
from ._snapshot import RunSnapshot, snapshot_of, state_of

if TYPE_CHECKING:
    from plait import Workflow, WorkflowRunResult
    from plait_durable import Checkpoint

__all__ = [
    "Verdict",
    "decide",
    "migrate_run",
    "migrated_checkpoint",
    "resume",
]


@attrs.frozen
class Verdict:
    """What a policy makes of one stored run and a workflow.

    :param run_id: the run.
    :param status: its latest checkpoint's status.
    :param outcome: ``as_is`` (nothing changed), ``accept`` (resumes on the new workflow
        unchanged), ``migrate`` (through :attr:`chain`), ``pinned`` (resumes on the
        workflow document it stored, :mod:`._pin`) or ``rejected`` (why:
        :attr:`reason`).
    :param reason: one sentence.
    :param stored_version: the version its checkpoint records (``None``: unversioned).
    :param version: the workflow's version.
    :param chain: the names of the migrations a ``migrate`` verdict applies, in order.
    :param changes: what changed, per node and edge group (plait-durable's fingerprint
        diff), empty for ``as_is``.
    :param policy: the policy that decided.
    """

    run_id: str
    status: str
    outcome: str
    reason: str
    stored_version: int | None
    version: int | None
    chain: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    policy: str = "reject"

    @property
    def stranded(self) -> bool:
        """Whether the run would not resume (``rejected``)."""
        return self.outcome == "rejected"

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON (``plait compat --format json``)."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "verdict": self.outcome,
            "reason": self.reason,
            "stored_version": self.stored_version,
            "version": self.version,
            "chain": list(self.chain),
            "changes": list(self.changes),
            "policy": self.policy,
        }


def _version(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("version")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Differ:
    """The per-node diff of a stored run against a workflow, computed once per stored
    fingerprint digest (runs of one deploy share it: ``plait compat`` diffs thousands of
    runs at the cost of a few)."""

    def __init__(self, current: Mapping[str, Any]) -> None:
        self.current = current
        self._cache: dict[Any, tuple[str, ...]] = {}

    async def changes(self, store: CheckpointStore, checkpoint: Checkpoint) -> tuple[str, ...]:
        """What changed from the workflow ``checkpoint`` records to the current one."""
        stored = checkpoint.metadata.get("fingerprint")
        digest = stored.get("digest") if isinstance(stored, Mapping) else None
        key = (digest, checkpoint.signature)
        if key not in self._cache:
            recorded = await recorded_fingerprint(store, checkpoint)
            origin = checkpoint.metadata.get("forked_from")
            if _summary_only(recorded) and isinstance(origin, Mapping):
                # a fork's one checkpoint holds the summary: its origin run has the details
                try:
                    found = await store.load(str(origin.get("checkpoint_id")))
                    recorded = await recorded_fingerprint(store, found)
                except CheckpointError:
                    pass  # the origin is gone: the summary it is
            self._cache[key] = tuple(fingerprint_changes(recorded, self.current))
        return self._cache[key]


def _summary_only(recorded: Any) -> bool:
    return isinstance(recorded, Mapping) and "nodes" not in recorded


async def decide(
    workflow: Workflow,
    store: CheckpointStore,
    checkpoint: Checkpoint,
    on_change: str | None = None,
    *,
    differ: Differ | None = None,
) -> Verdict:
    """The verdict of policy ``on_change`` (:func:`policy_for`) on resuming ``checkpoint``
    with ``workflow``: nothing runs and nothing is written."""
    policy = policy_for(workflow, on_change)
    graph = compiled_graph(workflow)
    durability = get_plugin_manager().durability("plait_versions.decide")
    current = durability.fingerprint(graph)
    stored = checkpoint.metadata.get("fingerprint")
    stored_version, version = _version(checkpoint.metadata), workflow.version

    def verdict(outcome: str, reason: str, **more: Any) -> Verdict:
        return Verdict(
            checkpoint.run_id,
            checkpoint.status,
            outcome,
            reason,
            stored_version,
            version,
            policy=policy,
            **more,
        )

    same_graph = checkpoint.signature == graph.signature
    if (
        same_graph
        and isinstance(stored, Mapping)
        and stored.get("digest") == current["digest"]
        and stored.get("format") == current["format"]
    ):
        return verdict("as_is", "the workflow is the one the run's checkpoint records")
    changes = await (differ or Differ(current)).changes(store, checkpoint)
    if policy == "accept":
        if same_graph:
            return verdict("accept", "the new workflow runs on the stored state", changes=changes)
        return verdict(
            "rejected",
            "policy accept: the graph's topology changed (executors or edges), which the "
            "stored state cannot run on unchanged; migrate it instead",
            changes=changes,
        )
    if policy == "reject":
        return verdict("rejected", "policy reject: the workflow changed", changes=changes)
    if policy == "pin":
        document = checkpoint.metadata.get(DOCUMENT_KEY)
        if isinstance(document, Mapping):
            name, sha256 = document.get("name"), document.get("sha256")
            if isinstance(name, str) and isinstance(sha256, str) and name.isprintable():
                return verdict(
                    "pinned",
                    f"policy pin: resumes on the document it stored, {name[:64]} (sha256 "
                    f"{sha256[:12]}), through plait resume FILE RUN_ID --on-change pin (on an "
                    "unsigned store with --pinned-document PATH or --run-stored-document)",
                    changes=changes,
                )
        return verdict(
            "rejected",
            f"policy pin: the run is pinned to version {_shown(stored_version)} (fingerprint "
            f"{_short(stored)}), and a Python workflow's code is not stored: resume it with "
            "the code of that version",
            changes=changes,
        )
    # migrate
    name = workflow.name
    if stored_version is None or version is None or name is None:
        missing = (
            "the run's checkpoint records no version"
            if stored_version is None
            else (
                "the workflow declares no version"
                if version is None
                else "the workflow has no name"
            )
        )
        return verdict("rejected", f"policy migrate: {missing}", changes=changes)
    if stored_version == version:
        return verdict(
            "rejected",
            f"policy migrate: the workflow changed but is still version {version}; raise its "
            "version and register a migration, or accept the change",
            changes=changes,
        )
    if stored_version > version:
        return verdict(
            "rejected",
            f"policy migrate: the run is on version {stored_version}, newer than the "
            f"workflow's {version}; resume it with that version's code",
            changes=changes,
        )
    chain, missing_step = find_chain(name, stored_version, version)
    if missing_step is not None:
        return verdict("rejected", f"policy migrate: {missing_step}", changes=changes)
    return verdict(
        "migrate",
        f"migrates from version {stored_version} to {version}",
        chain=tuple(m.name for m in chain),
        changes=changes,
    )


def _shown(version: int | None) -> str:
    return "(unversioned)" if version is None else str(version)


def _short(fingerprint: Any) -> str:
    digest = fingerprint.get("digest") if isinstance(fingerprint, Mapping) else None
    return f"{digest[:12]}" if isinstance(digest, str) else "(none recorded)"


def _chain_name(chain: Sequence[Migration]) -> str:
    return ", ".join(m.name for m in chain)


def apply_chain(chain: Sequence[Migration], snapshot: RunSnapshot, where: str) -> RunSnapshot:
    """``snapshot`` through every migration of ``chain`` in order.

    :raises MigrationError: a migration raised or returned something else than a snapshot
        of the same run.
    """
    for migration in chain:
        try:
            result = migration.migrate(snapshot)
        except Exception as exc:
            raise MigrationError(
                f"migration {migration.name} failed on {where}: {type(exc).__name__}: {exc}; "
                "the run is left as it was",
                migration=migration.name,
                run_id=snapshot.run_id,
            ) from exc
        if not isinstance(result, RunSnapshot) or result.run_id != snapshot.run_id:
            got = (
                type(result).__name__
                if not isinstance(result, RunSnapshot)
                else (f"a snapshot of run {result.run_id!r}")
            )
            raise MigrationError(
                f"migration {migration.name} returned {got} on {where}, not the run's "
                "RunSnapshot; the run is left as it was",
                migration=migration.name,
                run_id=snapshot.run_id,
            )
        snapshot = attrs.evolve(result, version=migration.to_version)
    return snapshot


async def migrate_run(
    workflow: Workflow, store: CheckpointStore, checkpoint: Checkpoint, chain: Sequence[Migration]
) -> Checkpoint:
    """Migrate stored run ``checkpoint.run_id`` from ``checkpoint`` through ``chain`` and
    write the result as the run's new latest checkpoint, which records the new version and
    the migrations that ran; ``workflow.resume`` then goes on from it.

    Atomic: the chain runs on a copy (:func:`migrated_checkpoint`), its result is checked
    against ``workflow``'s declared types and restored as a resume would restore it, and
    only then is one checkpoint saved (under the run's lease, its blobs with it; a sealed
    store signs it). A failure at any point writes nothing.

    :raises MigrationError: a migration failed or its result does not fit, naming the
        migration, the run and the path of the bad value.
    :raises RunLeaseError: another worker holds the run, or wrote to it meanwhile.
    """
    view = await checkpoint_view(store, checkpoint.checkpoint_id)
    new = migrated_checkpoint(workflow, checkpoint, view.state, chain)
    run_id = checkpoint.run_id
    lease = await store.acquire_lease(run_id, ttl=30.0)
    try:
        latest = await store.latest(run_id)
        if latest is None or latest.checkpoint_id != checkpoint.checkpoint_id:
            raise RunLeaseError(
                f"run {run_id!r} was written by another worker while it was being migrated "
                f"(its latest checkpoint is no longer {checkpoint.checkpoint_id!r}); resume "
                "it again"
            )
        if has_blobs(store):
            writer = BlobWriter()
            new = attrs.evolve(new, state=externalize_state(new.state, writer))
            blob_store = cast(BlobStore, store)  # (has_blobs: it takes them with a save)
            await blob_store.save(new, lease=lease, blobs=writer.take_new())
        else:
            await store.save(new, lease=lease)
    finally:
        try:
            await store.release_lease(lease)
        except CheckpointError:
            pass  # it expires on its own
    return new


def migrated_checkpoint(
    workflow: Workflow,
    checkpoint: Checkpoint,
    before: Mapping[str, Any],
    chain: Sequence[Migration],
) -> Checkpoint:
    """The checkpoint stored run ``checkpoint`` becomes through ``chain``, written nowhere:
    its full state ``before`` (values inline: :func:`plait_durable.checkpoint_view`)
    migrated on a copy, checked against ``workflow``'s declared types and restored as a
    resume would restore it; its metadata records the new version and the migrations
    that ran. :func:`migrate_run` saves it; ``plait compat --dry-run`` runs a superstep
    on it in a scratch store.

    :raises MigrationError: a migration failed or its result does not fit, naming the
        migration, the run and the path of the bad value.
    """
    graph = compiled_graph(workflow)
    run_id = checkpoint.run_id
    where = f"run {run_id!r} (checkpoint {checkpoint.checkpoint_id!r})"
    last = chain[-1].name if chain else None
    if before.get("pipeline") is not None:
        raise MigrationError(
            f"{where} is a cut of the pipelined schedule, which is not migrated; resume it "
            "to its next barrier with the code of its version first",
            migration=last,
            run_id=run_id,
        )
    snapshot = snapshot_of(
        before, run_id=run_id, version=_version(checkpoint.metadata), superstep=checkpoint.superstep
    )
    migrated = apply_chain(chain, snapshot, where)
    try:
        state = state_of(migrated, before)
        state["visits"] = {k: v for k, v in state["visits"].items() if k in graph.executors}
        check_state(graph, state)
    except (BadValue, EncodeError) as exc:
        path = exc.path
        problem = exc.problem if isinstance(exc, BadValue) else str(exc)
        raise MigrationError(
            f"migration {last} (chain {_chain_name(chain)}) left a value that does not fit "
            f"workflow {workflow.name!r} version {workflow.version} in {where}, at {path}: "
            f"{problem}; the run is left as it was",
            migration=last,
            run_id=run_id,
            path=path,
        ) from exc
    durability = get_plugin_manager().durability("plait_versions.migrate_run")
    try:  # restored as a resume restores it: every value decoded, every state rebuilt
        durability.restore(graph, RunState(run_id, None), state, {})
    except CheckpointError as exc:
        raise MigrationError(
            f"migration {last} (chain {_chain_name(chain)}) left a state of {where} that "
            f"does not rebuild on workflow {workflow.name!r} version {workflow.version}: "
            f"{exc}; the run is left as it was",
            migration=last,
            run_id=run_id,
        ) from exc
    metadata = {
        k: v
        for k, v in checkpoint.metadata.items()
        if k not in ("fingerprint", "topology", "version", "migrations", "workflow")
    }
    metadata.update(
        workflow=graph.spec.name,
        fingerprint=dict(durability.fingerprint(graph)),
        topology=graph.topology,
        version=workflow.version,
        migrations={
            "from_version": _version(checkpoint.metadata),
            "to_version": workflow.version,
            "applied": [m.name for m in chain],
            "from_checkpoint": checkpoint.checkpoint_id,
        },
    )
    return attrs.evolve(
        checkpoint,
        checkpoint_id=uuid.uuid4().hex,
        parent_id=checkpoint.checkpoint_id,
        signature=graph.signature,
        created_at=time.time(),
        state=state,
        metadata=metadata,
        base_id=None,
    )


async def stored_checkpoint(store: CheckpointStore, id: str) -> Checkpoint:
    """The latest checkpoint of run ``id``, or checkpoint ``id``.

    :raises CheckpointNotFoundError: neither is in ``store``, naming ``id``.
    """
    found = await store.latest(id)
    if found is None:
        found = await store.load(id)  # raises CheckpointNotFoundError naming it
    return found


async def resume(
    workflow: Workflow,
    id: str,
    checkpoint: Any,
    *,
    on_change: str | None = None,
    responses: Mapping[str, Any] | None = None,
    **options: Any,
) -> WorkflowRunResult:
    """:meth:`plait.Workflow.resume` under a policy for a changed workflow: the verdict
    (:func:`decide`) of run ``id``'s latest checkpoint is applied first — a ``migrate``
    verdict migrates the stored run (:func:`migrate_run`) — and the run then resumes.

    :param on_change: ``reject``, ``pin``, ``migrate`` or ``accept``; ``None``: the
        workflow's (:func:`set_policy`), else ``reject``.
    :raises WorkflowChangedError: policy ``reject`` and the workflow changed.
    :raises PinnedRunError: policy ``pin`` and the workflow changed.
    :raises NoMigrationError: policy ``migrate`` and no chain covers the change.
    :raises MigrationError: a migration failed or left a value that does not fit; the run
        is as it was.
    """
    policy = policy_for(workflow, on_change)
    async with opened_store(checkpoint) as store:
        found = await stored_checkpoint(store, id)
        verdict = await decide(workflow, store, found, policy)
        await apply_verdict(workflow, store, found, verdict)
        return await workflow.resume(
            found.run_id if verdict.outcome == "migrate" else id,
            store,
            responses=responses,
            accept_changes=verdict.outcome == "accept",
            **options,
        )


async def apply_verdict(
    workflow: Workflow, store: CheckpointStore, found: Checkpoint, verdict: Verdict
) -> None:
    """Do what ``verdict`` says before the run resumes: migrate it, or refuse a run the
    policy strands (under ``reject`` and ``accept`` the resume itself refuses it, naming
    every change, as it always has)."""
    if verdict.outcome == "migrate":
        assert workflow.name is not None and verdict.stored_version is not None
        chain, _ = find_chain(workflow.name, verdict.stored_version, verdict.version or 0)
        await migrate_run(workflow, store, found, chain)
    elif verdict.outcome == "pinned":  # what may run is decided where the file is named
        raise PinnedRunError(
            f"run {found.run_id} (checkpoint {found.checkpoint_id}) is pinned to the workflow "
            f"document it stored: {verdict.reason}; a workflow given in Python does not run it",
            verdict.changes,
        )
    elif verdict.stranded and verdict.policy in ("pin", "migrate"):
        error = PinnedRunError if verdict.policy == "pin" else NoMigrationError
        detail = "; ".join(verdict.changes) or "its fingerprint differs"
        raise error(
            f"run {found.run_id} (checkpoint {found.checkpoint_id}) was taken on a different "
            f"workflow ({detail}): {verdict.reason}",
            verdict.changes,
        )
