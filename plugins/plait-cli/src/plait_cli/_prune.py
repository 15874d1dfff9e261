"""``plait runs prune``: remove old runs from a checkpoint store, by age, status and count.

A run is chosen by its latest checkpoint (what ``plait runs`` lists): older than
``--older-than``, with one of the ``--status`` values, beyond the newest ``--keep`` runs
that match. A run whose lease a live worker holds is never removed: pruning takes the run's
lease first (:meth:`plait_durable.CheckpointStore.acquire_lease`), so a run that is
running, or being resumed, right now is skipped and named. ``--dry-run`` says what would go.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import attrs
import click
from plait_durable import LeaseHolder, RunInfo, RunLeaseError, open_store, parse_age

__all__ = ["PruneReport", "prune_command", "prune_runs"]

#: How long pruning holds a run's lease: long enough to delete its checkpoints.
_LEASE_TTL = 60.0


@attrs.frozen
class PruneReport:
    """What a prune did (or, dry, would do).

    :param removed: the runs removed (or that would be), newest first, with how many
        checkpoints each had (``None`` on a dry run).
    :param skipped: runs that matched but whose lease a live worker holds, with the reason.
    """

    removed: list[tuple[RunInfo, int | None]]
    skipped: list[tuple[RunInfo, str]]


def choose(
    infos: Sequence[RunInfo],
    *,
    older_than: float | None,
    statuses: Sequence[str],
    keep: int | None,
    now: float,
) -> list[RunInfo]:
    """The runs of ``infos`` a prune removes, newest first (by their latest checkpoint's
    time): every filter must hold."""
    newest_first = sorted(infos, key=lambda info: info.updated_at, reverse=True)
    matching = [
        info
        for info in newest_first
        if (not statuses or info.status in statuses)
        and (older_than is None or now - info.updated_at >= older_than)
    ]
    return matching[keep:] if keep is not None else matching


async def prune_runs(
    url: str,
    *,
    older_than: float | None = None,
    statuses: Sequence[str] = (),
    keep: int | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Remove the runs of the store at ``url`` that :func:`choose` picks, each under its
    lease, so that no run a live worker holds loses a checkpoint."""
    store = open_store(url)
    removed: list[tuple[RunInfo, int | None]] = []
    skipped: list[tuple[RunInfo, str]] = []
    try:
        chosen = choose(
            await store.runs(), older_than=older_than, statuses=statuses, keep=keep, now=time.time()
        )
        holder = LeaseHolder.here()
        for info in chosen:
            try:
                lease = await store.acquire_lease(info.run_id, ttl=_LEASE_TTL, holder=holder)
            except RunLeaseError as exc:
                skipped.append((info, str(exc).splitlines()[0]))
                continue
            try:
                count = None if dry_run else await store.delete_run(info.run_id)
            finally:
                await store.release_lease(lease)
            removed.append((info, count))
    finally:
        await store.aclose()
    return PruneReport(removed=removed, skipped=skipped)


def _age_option(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from exc


@click.command("prune", short_help="Remove old runs by age, status and count.")
@click.option(
    "--older-than",
    metavar="AGE",
    callback=_age_option,
    help="Only runs whose latest checkpoint is at least this old (30m, 12h, 7d, 2w).",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(("running", "idle", "idle_with_pending_requests", "failed")),
    help="Only runs with this status (repeat for several).",
)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep the newest N runs that match; remove the rest.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@click.pass_context
def prune_command(
    ctx: click.Context,
    older_than: float | None,
    statuses: tuple[str, ...],
    keep: int | None,
    dry_run: bool,
) -> None:
    """Remove runs from the checkpoint store (`plait runs --checkpoint URL prune …`).

    At least one of --older-than, --status and --keep is needed, so that a bare `prune`
    never empties a store. A run a live worker holds (its lease) is skipped and named.
    """
    if older_than is None and not statuses and keep is None:
        raise click.UsageError("say which runs go: --older-than AGE, --status STATUS or --keep N")
    url = ctx.obj["store_url"]
    report = anyio.run(
        lambda: prune_runs(
            url, older_than=older_than, statuses=statuses, keep=keep, dry_run=dry_run
        )
    )
    verb = "would remove" if dry_run else "removed"
    for info, count in report.removed:
        what = "" if count is None else f" ({count} checkpoint(s))"
        click.echo(f"{verb} {info.run_id} {info.status}{what}")
    for info, reason in report.skipped:
        click.echo(f"kept {info.run_id}: {reason}", err=True)
    click.echo(f"{verb} {len(report.removed)} run(s) from {url}", err=True)
