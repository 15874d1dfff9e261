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

A name that is taken is a :class:`CommandConflictError`. Commands that run a workflow can
resolve a ``TARGET`` argument the way ``plait run`` does with :func:`load_target` (or decide
its form once with :func:`parse_target` and carry the :class:`Target`), and grant a workflow
file capabilities as ``plait run`` does with :func:`grant_options` (``--allow``, ``--trust``,
``--allow-imports``) and :func:`grants_from`. Test a
command with ``click.testing.CliRunner().invoke(make_cli(), ["greet", "Ada"])``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from ._app import (
        CommandConflictError as CommandConflictError,
        PlaitGroup as PlaitGroup,
        main as main,
        make_cli as make_cli,
    )
    from ._grants import grant_options as grant_options, grants_from as grants_from
    from ._target import (
        Target as Target,
        TargetError as TargetError,
        load_target as load_target,
        parse_target as parse_target,
    )
    from ._version import __version__ as __version__


# Every process that loads Plait's plugins imports this module (entry point ``cli``); click
# and the commands are imported only when the command line is used, and ``load_target``
# (which imports the whole kernel) only when called for.
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
