"""``plait-cli``: the ``plait`` command.

``plait plugins`` lists every plugin and its status (it works while a plugin is broken),
``plait fragments`` the published workflow fragments, ``plait run TARGET MESSAGE`` runs a
workflow and ``plait resume TARGET RUN_ID`` continues a checkpointed one.

Plugins add sub-commands through the ``plait_register_commands(cli)`` hook. ``cli`` is a
:class:`PlaitGroup`, a :class:`click.Group`::

    import click
    import plait


    @click.command()
    @click.argument("name")
    def greet(name: str) -> None:
        \"\"\"Say hello.\"\"\"
        click.echo(f"hello {name}")


    @plait.hookimpl
    def plait_register_commands(cli: click.Group) -> None:
        cli.add_command(greet)

A command whose module imports much is added with :func:`lazy_command` (its name, its
``"module:attribute"`` and a short help), so that it is imported only when it runs. A name
that is taken is a :class:`CommandConflictError`. Commands that run a workflow can
resolve a ``TARGET`` argument the way ``plait run`` does with :func:`load_target` (or decide
its form once with :func:`parse_target` and carry the :class:`Target`), with the options
``plait run`` has for it: :func:`grant_options` (``--allow``, ``--trust``,
``--allow-imports``, read with :func:`grants_from`). The columns plugins add to run
listings (``plait_run_columns``) are read with :func:`run_columns` and :func:`run_cells`
(``plait runs`` and ``plait ui`` show them); the runs plugins add that have no checkpoint
yet (``plait_pending_runs``) with :func:`pending_runs` and :func:`merge_pending`; ``plait
compat``'s verdict on listed runs (the ``COMPAT`` column of ``plait runs --against`` and
``plait ui --workflow``, from the ``plait_change_policies`` hook) with
:func:`compat_verdicts` and :func:`compat_cell`. Test a
command with ``click.testing.CliRunner().invoke(make_cli(), ["greet", "Ada"])``.

These hooks are ``plait-cli``'s own (:mod:`plait_cli.hookspecs`, declared through
``plait_addhooks`` as the plugin is registered), with ``plait_change_policies``, which
``plait resume --on-change`` asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import hookimpl, lazy_exports

if TYPE_CHECKING:
    from plait.spi import PluginManager

    from ._app import (
        CommandConflictError as CommandConflictError,
        PlaitGroup as PlaitGroup,
        lazy_command as lazy_command,
        main as main,
        make_cli as make_cli,
    )
    from ._grants import grant_options as grant_options, grants_from as grants_from
    from ._on_change import (
        COMPAT_POLICY as COMPAT_POLICY,
        compat_cell as compat_cell,
        compat_verdicts as compat_verdicts,
    )
    from ._runs import (
        PENDING as PENDING,
        merge_pending as merge_pending,
        pending_runs as pending_runs,
        run_cells as run_cells,
        run_columns as run_columns,
    )
    from ._target import (
        Target as Target,
        TargetError as TargetError,
        load_target as load_target,
        parse_target as parse_target,
    )
    from ._version import __version__ as __version__


@hookimpl
def plait_addhooks(pluginmanager: PluginManager) -> None:
    """Declare the hooks ``plait-cli`` calls (:mod:`plait_cli.hookspecs`)."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


# Every process that loads Plait's plugins imports this module (entry point ``cli``); click
# and the commands are imported only when the command line is used, and ``load_target``
# (which imports the whole kernel) only when called for.
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
