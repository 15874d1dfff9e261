"""``plait replay TARGET RUN_ID``: a recorded run again, with today's code, offline."""

from __future__ import annotations

import json
from typing import Any

import click
from plait_cli import grant_options, grants_from, load_target, parse_target

__all__ = ["replay_command"]

#: where plait run keeps checkpoints unless told otherwise (plait-cli's default)
DEFAULT_STORE = "sqlite:///.plait/runs.db"


def _names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[str]:
    """``--live a,b --live c`` as ``["a", "b", "c"]``."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


@click.command("replay", short_help="Replay a recorded run offline; report the first divergence.")
@click.argument("target")
@click.argument("run_id")
@click.option(
    "--checkpoint",
    metavar="URL",
    default=DEFAULT_STORE,
    show_default=True,
    help="The store the recorded run is in.",
)
@click.option(
    "--live",
    metavar="NODE,...",
    multiple=True,
    callback=_names,
    help="Executors whose outside calls go out for real (re-recording them); the "
    "replay is then kept in the store as a new recorded run.",
)
@click.option(
    "--schedule",
    metavar="NAME",
    help="Replay on this schedule (superstep, pipelined); default the workflow's.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="The report as text or as JSON (for tools).",
)
@grant_options("Let the workflow file import the Python code it names (as plait run did).")
@click.option(
    "--agents",
    "agents",
    metavar="MODULE_OR_FILE.py",
    help="A Python module (or .py file) whose agents the workflow file may name (as for "
    "plait run; --format is the report's here: a workflow file's format goes by its "
    "extension).",
)
def replay_command(
    target: str,
    run_id: str,
    checkpoint: str,
    live: list[str],
    schedule: str | None,
    output_format: str,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    agents: str | None,
) -> None:
    """Run the workflow TARGET again against the recorded run RUN_ID and compare.

    TARGET is the workflow as it is today (a workflow file, module:attr or
    path/to/file.py:attr, as for plait run); RUN_ID a run recorded with plait run
    --record. Every outside call (model calls, http and shell steps, ctx.now(),
    ctx.random()) is answered from the record and the network is shut: an attempt fails
    the replay, naming the executor. The run is compared superstep by superstep with
    the record; the first difference is reported with its superstep, executor, message
    path and a JSON diff (for a model call the record has no answer for, the prompt's
    diff against the nearest recorded one). The workflow file gets only the
    capabilities granted here, never any the record names.

    Exit status: 0 the replay equals the record, 1 it diverged, 2 a usage error.
    """
    import anyio
    from plait import PlaitError

    allow_imports = allow_imports or trust or "imports" in allow
    grants = grants_from(allow, trust, allow_imports)
    try:
        workflow = load_target(
            parse_target(target, agents=agents),
            allow_imports=allow_imports,
            allow=grants,
        )
    except PlaitError as exc:
        raise click.ClickException(str(exc)) from exc
    from ._replay import replay

    metadata: dict[str, Any] = {"cli": {"target": target, "allow_imports": allow_imports}}

    async def go() -> Any:
        return await replay(
            workflow,
            run_id,
            checkpoint,
            live=live,
            save_to=checkpoint if live else None,
            schedule=schedule,
            checkpoint_metadata=metadata,
        )

    try:
        report = anyio.run(go)
    except PlaitError as exc:
        raise click.ClickException(str(exc)) from exc
    if output_format == "json":
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(report.text())
    raise SystemExit(0 if report.equal else 1)
