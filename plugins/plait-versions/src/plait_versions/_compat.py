"""``plait compat``'s decision: every unfinished stored run of a workflow, judged against
the workflow about to be deployed, with nothing run and nothing written.

A run is unfinished when its latest checkpoint is ``running``, ``idle_with_pending_requests``
or ``failed``. Each gets a :class:`~plait_versions.Verdict` (:func:`~plait_versions.decide`
under the policy asked for, ``migrate`` by default): resumes as it is, resumes on the new
workflow unchanged (``accept``), migrates through a named chain, resumes on the workflow
document it stored (``pinned``, under policy ``pin``), or is rejected, and why;
with the per-node diff. Runs of one deploy share their stored fingerprint, so the diff is
worked out once per stored fingerprint, not once per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs
from plait.spi import compiled_graph
from plait_durable import CheckpointStore, list_runs

from ._policy import Differ, Verdict, decide

if TYPE_CHECKING:
    from plait import Workflow

__all__ = ["UNFINISHED", "CompatReport", "compat_report", "verdicts_of"]

#: The statuses of a run that may still be resumed.
UNFINISHED = ("running", "idle_with_pending_requests", "failed")
_PAGE = 500


@attrs.frozen
class CompatReport:
    """What :func:`compat_report` found.

    :param workflow: the workflow's name.
    :param version: its version.
    :param verdicts: one per unfinished run, by run id.
    """

    workflow: str | None
    version: int | None
    verdicts: Sequence[Verdict]

    @property
    def stranded(self) -> list[Verdict]:
        """The runs that would not resume."""
        return [v for v in self.verdicts if v.stranded]

    def counts(self) -> dict[str, int]:
        """How many runs got each verdict."""
        found: dict[str, int] = {}
        for verdict in self.verdicts:
            found[verdict.outcome] = found.get(verdict.outcome, 0) + 1
        return found


async def compat_report(
    workflow: Workflow,
    store: CheckpointStore,
    *,
    since: float | None = None,
    on_change: str = "migrate",
) -> CompatReport:
    """The verdict on every unfinished run of ``workflow`` (by name) in ``store`` updated at
    or after ``since`` (seconds since the epoch), under policy ``on_change``. Reads the
    store; runs and writes nothing. A run the listing cannot name the workflow of (a
    sealed store keeps the name in the sealed metadata) is read to find out."""
    run_ids: list[str] = []
    for status in UNFINISHED:
        cursor: str | None = None
        while True:
            page = await list_runs(store, status=status, since=since, limit=_PAGE, cursor=cursor)
            run_ids.extend(s.run_id for s in page.runs if s.workflow in (workflow.name, None))
            cursor = page.next_cursor
            if cursor is None:
                break
    found = await verdicts_of(workflow, store, run_ids, on_change=on_change)
    return CompatReport(workflow.name, workflow.version, sorted(found.values(), key=_run_id))


def _run_id(verdict: Verdict) -> str:
    return verdict.run_id


async def verdicts_of(
    workflow: Workflow,
    store: CheckpointStore,
    run_ids: Iterable[str],
    *,
    on_change: str = "migrate",
) -> dict[str, Verdict]:
    """The verdict (:func:`~plait_versions.decide` under ``on_change``) on each of
    ``run_ids`` that is an unfinished run of ``workflow`` (its latest checkpoint names the
    workflow and is one of :data:`UNFINISHED`), by run id; the others are left out.
    What ``plait compat`` judges, and the ``COMPAT`` column of ``plait runs --against``
    and ``plait ui --workflow`` (through the ``plait_change_policies`` hook). Reads each
    run's latest checkpoint; the per-node diff is worked out once per stored fingerprint."""
    from plait import get_plugin_manager

    graph = compiled_graph(workflow)
    current = get_plugin_manager().durability("plait compat").fingerprint(graph)
    differ = Differ(current)
    found: dict[str, Verdict] = {}
    for run_id in dict.fromkeys(run_ids):
        latest = await store.latest(run_id)
        if (
            latest is None
            or latest.status not in UNFINISHED
            or latest.metadata.get("workflow") != workflow.name
        ):
            continue
        found[run_id] = await decide(workflow, store, latest, on_change, differ=differ)
    return found
