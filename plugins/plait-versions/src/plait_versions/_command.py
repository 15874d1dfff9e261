"""``plait compat TARGET``: decide every unfinished stored run before a deploy."""

from __future__ import annotations

import json
from typing import Any

import click
from plait_cli import TargetError, load_target, parse_target

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
    "--allow-imports",
    is_flag=True,
    help="Let a workflow file import the Python code it names (building runs nothing else).",
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
    allow_imports: bool,
    document_format: str | None,
) -> None:
    """Say, for every unfinished run of workflow TARGET in the store (running, waiting
    for an answer, failed), whether the TARGET about to be deployed resumes it as it is,
    migrates it (through which registered migrations) or strands it, and why, with what
    changed per node. Nothing is run and nothing is written. Exits 1 when any run would
    be stranded, 0 otherwise.

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
    try:
        grants = Grants.to_build(allow_imports=allow_imports)
        parsed = parse_target(target, format=document_format)
        workflow = load_target(parsed, allow_imports=allow_imports, allow=grants)
    except TargetError as exc:
        raise click.ClickException(str(exc)) from exc

    from ._compat import compat_report

    async def judge() -> Any:
        async with opened_store(checkpoint) as store:
            return await compat_report(workflow, store, since=cutoff, on_change=on_change)

    try:
        report = anyio.run(judge, backend="asyncio")
    except PlaitError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    if output == "json":
        click.echo(
            json.dumps(
                {
                    "workflow": report.workflow,
                    "version": report.version,
                    "policy": on_change,
                    "counts": report.counts(),
                    "stranded": len(report.stranded),
                    "runs": [v.to_json() for v in report.verdicts],
                },
                indent=2,
            )
        )
    else:
        for verdict in report.verdicts:
            chain = f" through {', '.join(verdict.chain)}" if verdict.chain else ""
            click.echo(
                f"{verdict.run_id}  {verdict.status}  {verdict.outcome}{chain}: {verdict.reason}"
            )
            for change in verdict.changes:
                click.echo(f"    {change}")
        counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items())) or "no runs"
        click.echo(
            f"workflow {report.workflow} version {report.version}: {counts}; "
            f"{len(report.stranded)} stranded",
            err=True,
        )
    if report.stranded:
        ctx.exit(1)
