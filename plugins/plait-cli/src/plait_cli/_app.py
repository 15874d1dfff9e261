"""The ``plait`` command group: built-in commands, plus the ones plugins add.

Plugin commands come from ``plait_register_commands(cli)``, called with the group the
first time a command that is not built in is looked up (or the help lists commands). That
loads the plugins strictly; if it fails, the built-in commands still work — ``plait
plugins`` above all, the command that shows what is broken — and the failure is reported
where a plugin command was wanted.

A built-in command's module is imported only when that command is looked up to run (or
for its own ``--help``): ``plait --help`` lists them from :data:`BUILT_IN`, so it imports
neither the runner side of the kernel nor any store (click's "lazily loading subcommands"
pattern, with the short help kept beside the import path).
"""

from __future__ import annotations

import gc
import importlib
import os
from collections.abc import Sequence
from typing import Any

import click
from plait import PlaitError, get_plugin_manager
from plait.spi import core_version

from ._version import __version__ as cli_version

__all__ = ["BUILT_IN", "CommandConflictError", "PlaitGroup", "main", "make_cli"]

#: The built-in commands: name -> (``module:attribute`` of the command, its short help).
#: The short help must be the command's own (a test compares them).
BUILT_IN: dict[str, tuple[str, str]] = {
    "plugins": (
        "plait_cli._listing:plugins_command",
        "List plugins, their status and what they registered.",
    ),
    "fragments": ("plait_cli._listing:fragments_command", "List published workflow fragments."),
    "run": ("plait_cli._run:run_command", "Run a workflow on a message; print its outputs."),
    "resume": (
        "plait_cli._resume:resume_command",
        "Continue a checkpointed run, answering its requests.",
    ),
    "validate": (
        "plait_cli._validate:validate_command",
        "Check workflow files; print every problem and where.",
    ),
    "graph": (
        "plait_cli._graph:graph_command",
        "Print a workflow's graph as Mermaid, DOT or SVG.",
    ),
    "runs": (
        "plait_cli._runs:runs_command",
        "List the runs a checkpoint store holds, newest first.",
    ),
}


class _LazyCommand(click.Command):
    """A command not imported yet (a built-in one, or a plugin's: :func:`lazy_command`): a
    name and a short help, for listings."""

    def __init__(self, name: str, import_path: str, short_help: str) -> None:
        super().__init__(name, short_help=short_help)
        self.import_path = import_path

    def load(self) -> click.Command:
        """Import the real command."""
        module, _, attribute = self.import_path.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), self.import_path
        return command


def lazy_command(name: str, import_path: str, short_help: str) -> click.Command:
    """A plugin's command that is imported only when it is used: ``plait --help`` lists
    ``name`` with ``short_help``; ``plait NAME …`` (its own ``--help`` too) imports
    ``import_path`` (``"module:attribute"``, a :class:`click.Command`) and runs it. Add it
    in ``plait_register_commands`` with ``cli.add_command(lazy_command(...))``, so that
    every ``plait`` command does not pay for importing what one command needs."""
    return _LazyCommand(name, import_path, short_help)


class CommandConflictError(PlaitError):
    """A plugin added a command under a name another command already has."""


def _origin(command: click.Command) -> str:
    if isinstance(command, _LazyCommand):
        module = command.import_path.partition(":")[0]
    else:
        module = getattr(command.callback, "__module__", None) or "an unknown module"
    return "built-in" if module.startswith("plait_cli") else f"from {module}"


class PlaitGroup(click.Group):
    """The ``plait`` command group; plugins receive it in ``plait_register_commands(cli)``.

    Add a command with ``cli.add_command(command)`` or the ``@cli.command()`` decorator.
    A name that is taken (by a built-in command or another plugin's) raises
    :class:`CommandConflictError`; then no plugin command is added, and the error is shown
    when a plugin command is asked for.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resolve_lazy = True
        self._plugins_loaded = False
        self._warned = False
        #: Why plugin commands could not be added, once that was tried and failed.
        self.plugin_error: BaseException | None = None

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Add ``cmd`` as ``name`` (default: its own name); a taken name is an error."""
        key = name or cmd.name
        existing = self.commands.get(key) if key else None
        if isinstance(existing, _LazyCommand) and existing.import_path == _import_path(cmd):
            existing = cmd  # the built-in command itself, imported by its caller
        if existing is not None and existing is not cmd:
            from ._output import DISABLE_ENV

            raise CommandConflictError(
                f"command {key!r} ({_origin(cmd)}) clashes with the {_origin(existing)} "
                f"command {key!r}; rename one, or disable the plugin ({DISABLE_ENV}=name)"
            )
        super().add_command(cmd, name)

    def load_plugin_commands(self) -> BaseException | None:
        """Let plugins add their commands (once); return the error if that failed.

        All or nothing: when a plugin fails to load or its hook raises, the commands other
        plugins added in the same call are removed again.
        """
        if not self._plugins_loaded:
            self._plugins_loaded = True
            before = dict(self.commands)
            try:
                get_plugin_manager().pm.hook.plait_register_commands(cli=self)
            except Exception as exc:
                self.commands = before
                self.plugin_error = exc
        return self.plugin_error

    def plugin_error_note(self) -> str:
        """Why plugin commands are missing, with what to do (empty when they are not)."""
        if self.plugin_error is None:
            return ""
        from ._output import DISABLE_ENV, describe_error

        return (
            f"plugin commands are not available: {describe_error(self.plugin_error)}\n"
            f"(`plait plugins` lists every plugin and its status; {DISABLE_ENV}=name "
            "disables one)"
        )

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A built-in command (imported now), else (loading plugin commands first) a plugin's."""
        command = super().get_command(ctx, cmd_name)
        if command is None and not self._plugins_loaded:
            self.load_plugin_commands()
            command = super().get_command(ctx, cmd_name)
        if isinstance(command, _LazyCommand) and self._resolve_lazy:
            command = self.commands[cmd_name] = command.load()
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click does, but a built-in command is listed without importing it."""
        self._resolve_lazy = False
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._resolve_lazy = True

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, plugin commands included (a failure is a warning here)."""
        if self.load_plugin_commands() is not None and not self._warned:
            self._warned = True
            click.echo(f"warning: {self.plugin_error_note()}", err=True)
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a Plait error (a broken plugin, a bad workflow file …) is one
        line on stderr and exit status 1, the full traceback only with ``--debug``."""
        try:
            return super().invoke(ctx)
        except PlaitError as exc:
            if ctx.meta.get("plait.debug") or os.environ.get("PLAIT_DEBUG"):
                raise
            message = getattr(exc, "message", None) or str(exc)
            raise click.ClickException(
                f"{message.splitlines()[0]} (run with --debug for the traceback)"
            ) from exc

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click does; an unknown command also says why plugin commands are missing.
        A plugin's command ends the start-up (:func:`start_up_over`): it may run for long,
        as a worker or a server does."""
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except click.UsageError as exc:
            notes = [_install_note(args[0])] if args else []
            if self.plugin_error is not None:
                notes.append(self.plugin_error_note())
            if not any(notes):
                raise
            message = "\n".join([exc.message, *filter(None, notes)])
            raise click.UsageError(message, exc.ctx) from exc
        if command is not None and _origin(command) != "built-in":
            start_up_over()
        return name, command, rest


def _install_note(name: str) -> str:
    """For a command that is not installed: which distribution adds it and how to install
    that, as the installed plugins say (``plait-catalog`` knows the first-party commands,
    the same table an unknown executor kind or store is looked up in); else ``""``."""
    try:
        hint = get_plugin_manager().install_hint("command", name)
    except Exception:  # a hint must not hide the usage error it was asked for
        return ""
    return f"plait {name}: {hint}" if hint else ""


def _import_path(command: click.Command) -> str:
    callback = command.callback
    module = getattr(callback, "__module__", "")
    for import_path, _ in BUILT_IN.values():
        name, _, attribute = import_path.partition(":")
        if module == name and getattr(importlib.import_module(name), attribute, None) is command:
            return import_path
    return ""


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["plait.debug"] = True


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"plait-cli {cli_version} (plait-core {core_version()})")
    ctx.exit()


def make_cli() -> PlaitGroup:
    """A new ``plait`` command group with the built-in commands.

    Plugin commands are added to it when first needed. Test a plugin's command with
    ``click.testing.CliRunner().invoke(make_cli(), [...])``.
    """
    cli = PlaitGroup(
        name="plait",
        help=(
            "Plait: list plugins and fragments, run, resume and list runs, validate and graph "
            "workflow files. "
            "Plugins add more commands."
        ),
        context_settings={"help_option_names": ["-h", "--help"]},
        params=[
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_print_version,
                help="Show the versions of plait-cli and plait-core.",
            ),
            click.Option(
                ["--debug"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_set_debug,
                help="Show full tracebacks (also PLAIT_DEBUG=1).",
            ),
        ],
    )
    for name, (import_path, short_help) in BUILT_IN.items():
        cli.add_command(_LazyCommand(name, import_path, short_help))
    return cli


#: Whether :func:`main` has the cyclic garbage collector off for the start-up.
_starting = False


def main(args: Sequence[str] | None = None) -> None:
    """Run the ``plait`` command (the console script's entry point).

    The start-up (imports, loading the plugins, building the workflow) makes many objects
    that live as long as the process and next to no garbage, so the cyclic garbage
    collector, which would go over them again and again, is off until the command's own
    work starts (:func:`start_up_over`). At exit, what the process made is frozen
    (:func:`gc.freeze`): the interpreter's last collections skip it, and memory is handed
    back as the process ends. Output and checkpoints are written before then.

    :param args: the arguments (default: ``sys.argv[1:]``).
    """
    global _starting
    _starting = gc.isenabled()
    gc.disable()
    try:
        make_cli().main(args=list(args) if args is not None else None, prog_name="plait")
    finally:
        start_up_over()
        gc.freeze()


def start_up_over() -> None:
    """The command's own work starts (a run, a plugin's command): what the start-up made
    stays (:func:`gc.freeze`) and the garbage collector is back on, if :func:`main` had
    turned it off (elsewhere, a test calling a command, this does nothing)."""
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()
