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


@click.command("replay")
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
    "--stub",
    metavar="NODE,...",
    multiple=True,
    callback=_names,
    help="Executors whose code does not run: each sends the messages and yields the "
    "outputs the record holds for it (replay a slice of the workflow).",
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
    stub: list[str],
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
            stub=stub,
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


#: the environment variable a bundle's key is read from, unless --key-env names another
KEY_VARIABLE = "PLAIT_BUNDLE_KEY"


def _key(variable: str | None) -> bytes | None:
    """The key in the environment variable ``variable`` (default: ``PLAIT_BUNDLE_KEY``,
    if set); never a key typed on the command line, where the shell history keeps it."""
    import os

    name = variable or KEY_VARIABLE
    value = os.environ.get(name)
    if variable is not None and not value:
        raise click.UsageError(f"--key-env {variable}: the environment variable is not set")
    return value.encode() if value else None


@click.command("export")
@click.argument("run_id")
@click.option("-o", "--output", "output", metavar="FILE", required=True, help="The bundle.")
@click.option(
    "--checkpoint", metavar="URL", default=DEFAULT_STORE, show_default=True, help="The store."
)
@click.option(
    "--key-env",
    metavar="VAR",
    help=f"Sign the bundle with the key in this environment variable (default {KEY_VARIABLE}, "
    "when set).",
)
@click.option(
    "--redact",
    metavar="JSONPATH",
    multiple=True,
    help="Replace the values this JSONPath matches in the run's states ($..email), "
    "wherever they appear, with typed placeholders; the bundle lists them (repeatable).",
)
def export_command(
    run_id: str, output: str, checkpoint: str, key_env: str | None, redact: tuple[str, ...]
) -> None:
    """Write run RUN_ID — its checkpoints, their values, its record, its journal — to one
    file (a zip of JSON) that plait import loads into any store: a bug report's attachment
    replays on the maintainer's machine. With a key (--key-env VAR, or PLAIT_BUNDLE_KEY) it is
    signed with HMAC-SHA256; --redact replaces personal data or keys with placeholders.
    """
    import anyio
    from plait import PlaitError

    from ._bundle import export_bundle

    key = _key(key_env)
    try:
        info = anyio.run(lambda: export_bundle(checkpoint, run_id, output, key=key, redact=redact))
    except PlaitError as exc:
        raise click.ClickException(str(exc)) from exc
    signed = "signed" if info.signed else "unsigned"
    journal = "" if info.journal is None else f", {info.journal} journal events"
    click.echo(f"wrote {output}: run {run_id}, {info.checkpoints} checkpoints{journal}, {signed}")
    for redaction in info.redacted:
        click.echo(f"redacted {redaction['path']}: {redaction['matched']} value(s)")


@click.command("import")
@click.argument("bundle", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--checkpoint", metavar="URL", default=DEFAULT_STORE, show_default=True, help="The store."
)
@click.option(
    "--key-env",
    metavar="VAR",
    help=f"Verify the bundle's signature with the key in this environment variable "
    f"(default {KEY_VARIABLE}, when set): a signed bundle needs its key.",
)
@click.option("--as", "run_id", metavar="RUN_ID", help="Import under this run id.")
def import_command(bundle: str, checkpoint: str, key_env: str | None, run_id: str | None) -> None:
    """Load BUNDLE (written by plait export) into the store, and print its run id: replay
    it with plait replay TARGET RUN_ID. A signed bundle is refused unless its key
    verifies it; an unsigned one is refused when a key is given."""
    import anyio
    from plait import PlaitError

    from ._bundle import import_bundle

    key = _key(key_env)
    try:
        info = anyio.run(lambda: import_bundle(bundle, checkpoint, key=key, run_id=run_id))
    except PlaitError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(info.run_id)
    for redaction in info.redacted:
        click.echo(
            f"redacted {redaction.get('path')!s}: {redaction.get('matched')!s} value(s)",
            err=True,
        )
