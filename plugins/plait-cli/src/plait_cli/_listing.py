"""``plait plugins`` and ``plait fragments``: what is installed, as a table or as JSON."""

from __future__ import annotations

import importlib
from typing import Any

import click
from plait import PlaitError, describe
from plait.spi import PluginInfo

from ._output import DISABLE_ENV, describe_error, format_table, how_to_install, to_json

__all__ = ["fragments_command", "plugin_record", "plugins_command"]

#: The keys of each plugin in ``plait plugins --json``, in order.
PLUGIN_KEYS = ("name", "distribution", "version", "entry_point", "status", "error", "registered")


def plugin_record(info: PluginInfo) -> dict[str, Any]:
    """One plugin as ``plait plugins --json`` prints it (keys: :data:`PLUGIN_KEYS`)."""
    record = {key: getattr(info, key) for key in PLUGIN_KEYS}
    record["registered"] = {kind: list(names) for kind, names in info.registered.items()}
    return record


def _plugin_row(info: PluginInfo) -> tuple[list[str], list[str]]:
    cells = [info.name, info.distribution, info.version or "-", info.status, info.entry_point]
    details = [f"{kind}: {', '.join(names)}" for kind, names in info.registered.items()]
    if info.status == "blocked":
        details.append(f"disabled by {DISABLE_ENV}")
    if info.error:
        details.append(f"error: {info.error}")
    return cells, details


@click.command("plugins", short_help="List plugins, their status and what they registered.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool) -> None:
    """List every plugin: distribution, version, entry point, status, what it registered.

    Works while a plugin is broken: it is listed as failed, with its error, and the exit
    status is 1.
    """
    infos = describe()
    if as_json:
        click.echo(to_json([plugin_record(info) for info in infos], indent=2))
    else:
        headers = ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "ENTRY POINT"]
        click.echo(format_table(headers, [_plugin_row(info) for info in infos]))
    failed = [info for info in infos if info.status == "failed"]
    if failed:
        names = ", ".join(f"{info.name} ({info.distribution} {info.version})" for info in failed)
        click.echo(f"{len(failed)} plugin(s) failed to load: {names}", err=True)
        for info in failed:
            click.echo(f"  {info.error}", err=True)
        disable = ",".join(info.name for info in failed)
        click.echo(f"fix or upgrade them, or disable them with {DISABLE_ENV}={disable}", err=True)
        ctx.exit(1)


def _list_fragments() -> list[Any]:
    """``plait_builders.list_fragments()``, imported only now: plait-builders is optional."""
    try:
        builders = importlib.import_module("plait_builders")
    except ModuleNotFoundError as exc:
        if exc.name != "plait_builders":
            raise
        raise click.ClickException(
            "fragments are published through the plait-builders plugin, which is not "
            f"installed ({how_to_install('plait-builders')})"
        ) from exc
    try:
        fragments: list[Any] = builders.list_fragments()
    except PlaitError as exc:
        raise click.ClickException(
            f"cannot list fragments: {describe_error(exc)}\n"
            "(`plait plugins` shows every plugin and its status)"
        ) from exc
    return fragments


def _port_line(port: dict[str, Any]) -> str:
    """One port of a fragment, as the listing shows it under the fragment."""
    types = ", ".join(port["types"]) or "-"
    semantics = f" [{port['semantics']}]" if port["semantics"] else ""
    return f"port {port['name']} ({port['direction']}, {port['executor']}): {types}{semantics}"


@click.command("fragments", short_help="List published workflow fragments.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def fragments_command(as_json: bool) -> None:
    """List published workflow fragments: name, version, distribution, input and output
    types, output semantics, description and ports.

    Needs the plait-builders plugin, which defines fragments.
    """
    fragments = _list_fragments()
    if as_json:
        click.echo(to_json([fragment.to_dict() for fragment in fragments], indent=2))
        return
    if not fragments:
        click.echo("no installed plugin publishes a fragment", err=True)
        return
    headers = ["NAME", "VERSION", "DISTRIBUTION", "INPUT", "OUTPUT", "SEMANTICS"]
    rows = [
        (
            [
                f.name,
                f.version,
                f.distribution,
                ", ".join(f.input_types) or "-",
                ", ".join(f.output_types) or "-",
                ", ".join(f.output_semantics) or "-",
            ],
            ([f.description] if f.description else []) + [_port_line(p) for p in f.ports],
        )
        for f in fragments
    ]
    click.echo(format_table(headers, rows))
