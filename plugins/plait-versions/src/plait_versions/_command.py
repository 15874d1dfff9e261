"""``plait compat TARGET``: decide every unfinished stored run before a deploy."""

from __future__ import annotations

import json
from typing import Any

import click
from plait_cli import TargetError, grant_options, grants_from, load_target, parse_target

from ._policies import POLICIES

__all__ = ["compat_command"]


@click.command("compat", short_help="Decide each unfinished stored run before a deploy.")
@click.argument("target")
@click.option(
    "--checkpoint",
    metavar="URL",
    default="sqlite:///.plait/runs.db",
    show_default=True,
    help="The store the runs wrote to.",
)
@click.option(
    "--since",
    metavar="AGE",
    default=None,
    help="Only runs updated in the last AGE (30m, 12h, 7d, 2w).",
)
@click.option(
    "--format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line per run and its changes; json: one JSON document.",
)
@click.option(
    "--on-change",
    type=click.Choice(POLICIES),
    default="migrate",
    show_default=True,
    help="The policy the runs would be resumed under (plait resume --on-change).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Also run, for each recorded run (plait run --record) that TARGET resumes, the "
    "last superstep its record holds: on a copy of the checkpoint before it, migrated, "
    "every outside call answered from the record, nothing written to the store; say "
    "whether it would match the record or where it first diverges. Needs plait-replay.",
)
@grant_options(
    "Let a workflow file import the Python code it names (building it runs nothing else; "
    "with --dry-run, a superstep of its code runs)."
)
@click.option(
    "--document-format",
    "document_format",
    metavar="FORMAT",
    default=None,
    help="The workflow file's format (flow, dag, steps …; default: its suffix); --format "
    "is this command's output.",
)
@click.pass_context
def compat_command(
    ctx: click.Context,
    target: str,
    checkpoint: str,
    since: str | None,
    output: str,
    on_change: str,
    dry_run: bool,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    document_format: str | None,
) -> None:
    """Say, for every unfinished run of workflow TARGET in the store (running, waiting
    for an answer, failed), whether the TARGET about to be deployed resumes it as it is,
    migrates it (through which registered migrations) or strands it, and why, with what
    changed per node. Nothing is run and nothing is written.

    With --dry-run, each recorded run TARGET resumes also gets the last superstep its
    record holds run again under TARGET, from a migrated copy of the checkpoint before
    it, against the record migrated the same way: `would match`, or the first divergence
    (superstep, executor, message path, JSON Patch), as plait replay reports it. A
    workflow file then gets only the capabilities granted here (--allow, --trust).

    Exits 1 when any run would be stranded (or, with --dry-run, diverged), 0 otherwise;
    2 for a usage error (--dry-run without plait-replay installed).

    TARGET is module:attr, path/to/file.py:attr or a workflow file, as for plait run.
    """
    import time

    import anyio
    from plait import PlaitError
    from plait_documents import Grants
    from plait_durable import opened_store, parse_age

    try:
        cutoff = None if since is None else time.time() - parse_age(since)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param_hint="--since") from None
    if dry_run:
        _require_replay()
    allow_imports = allow_imports or trust or "imports" in allow
    try:
        # a dry-run runs a superstep of the workflow's code: the grants typed, as to run it
        grants = (
            grants_from(allow, trust, allow_imports)
            if dry_run
            else Grants.to_build(allow_imports=allow_imports)
        )
        parsed = parse_target(target, format=document_format)
        workflow = load_target(parsed, allow_imports=allow_imports, allow=grants)
    except TargetError as exc:
        raise click.ClickException(str(exc)) from exc

    from ._compat import compat_report

    async def judge() -> Any:
        async with opened_store(checkpoint) as store:
            report = await compat_report(workflow, store, since=cutoff, on_change=on_change)
            if not dry_run:
                return report, {}
            from ._dry_run import dry_run as dry_run_one

            runs = {v.run_id: await dry_run_one(workflow, store, v) for v in report.verdicts}
            return report, runs

    try:
        report, dry_runs = anyio.run(judge, backend="asyncio")
    except PlaitError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    tried: dict[str, int] = {}
    for found in dry_runs.values():
        tried[found.outcome] = tried.get(found.outcome, 0) + 1
    if output == "json":
        runs = [v.to_json() for v in report.verdicts]
        for run in runs:
            if dry_run:
                run["dry_run"] = dry_runs[run["run_id"]].to_json()
        document: dict[str, Any] = {
            "workflow": report.workflow,
            "version": report.version,
            "policy": on_change,
            "counts": report.counts(),
            "stranded": len(report.stranded),
        }
        if dry_run:
            document["dry_run"] = tried
        click.echo(json.dumps({**document, "runs": runs}, indent=2))
    else:
        for verdict in report.verdicts:
            chain = f" through {', '.join(verdict.chain)}" if verdict.chain else ""
            click.echo(
                f"{verdict.run_id}  {verdict.status}  {verdict.outcome}{chain}: {verdict.reason}"
            )
            for change in verdict.changes:
                click.echo(f"    {change}")
            for line in dry_runs[verdict.run_id].lines() if dry_run else ():
                click.echo(f"    {line}")
        counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items())) or "no runs"
        summary = f"workflow {report.workflow} version {report.version}: {counts}; "
        summary += f"{len(report.stranded)} stranded"
        if dry_run:
            shown = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(tried.items()))
            summary += f"; dry-run: {shown or 'no runs'}"
        click.echo(summary, err=True)
    if report.stranded or tried.get("diverged") or tried.get("failed"):
        ctx.exit(1)


def _require_replay() -> None:
    """Refuse ``--dry-run`` (exit 2) when plait-replay, which answers a run's outside
    calls from its record, is not installed, saying how to install it."""
    try:
        import plait_replay  # noqa: F401
    except ImportError:
        from plait import get_plugin_manager

        from ._dry_run import REPLAY_DISTRIBUTION

        how = get_plugin_manager().how_to_install(REPLAY_DISTRIBUTION)
        raise click.UsageError(
            f"--dry-run answers each run's outside calls from its record, which needs "
            f"{REPLAY_DISTRIBUTION} ({how}); without it, plait compat judges the runs "
            "without running them"
        ) from None
