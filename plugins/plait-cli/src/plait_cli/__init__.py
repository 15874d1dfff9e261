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
its form once with :func:`parse_target` and carry the :class:`Target`). Test a
command with ``click.testing.CliRunner().invoke(make_cli(), ["greet", "Ada"])``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import CommandConflictError, PlaitGroup, main, make_cli
    from ._target import Target, TargetError, load_target, parse_target

__all__ = [
    "CommandConflictError",
    "PlaitGroup",
    "Target",
    "TargetError",
    "__version__",
    "load_target",
    "main",
    "make_cli",
    "parse_target",
]


# Every process that loads Plait's plugins imports this module (entry point ``cli``); click
# and the commands are imported only when the command line is used, and ``load_target``
# (which imports the whole kernel) only when called for.
_APP = frozenset({"CommandConflictError", "PlaitGroup", "main", "make_cli"})
_TARGET = frozenset({"Target", "TargetError", "load_target", "parse_target"})


def __getattr__(name: str) -> Any:
    if name in _APP:
        from . import _app

        return getattr(_app, name)
    if name in _TARGET:
        from . import _target

        return getattr(_target, name)
    if name == "__version__":
        from ._version import cli_version

        return cli_version()
    raise AttributeError(f"module 'plait_cli' has no attribute {name!r}")
