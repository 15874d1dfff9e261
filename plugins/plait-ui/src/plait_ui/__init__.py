"""``plait-ui``: ``plait ui``, an offline run inspector in the browser.

``plait ui [STORE_URL] [--workflow TARGET] [--port N] [--read-only] [--host H] [--open]``
serves a small Starlette app on 127.0.0.1 and prints its URL with a one-time token. The
pages read the store as stored JSON (:mod:`plait_durable`): nothing named by stored data
is imported, and the workflow's code is imported only when ``--workflow`` names it (to
answer requests and resume runs).

Build the app yourself with :func:`make_app` (what the tests drive with Starlette's
``TestClient``). Plugins add panels to a run's page through ``plait_run_panels``, a hook
of this plugin's own (:mod:`plait_ui.hookspecs`, declared through ``plait_addhooks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import lazy_exports

if TYPE_CHECKING:
    import click
    from plait.spi import PluginManager

    from ._app import UiSettings as UiSettings, make_app as make_app


@plait.hookimpl
def plait_addhooks(pluginmanager: PluginManager) -> None:
    """Declare the hook ``plait-ui`` calls (:mod:`plait_ui.hookspecs`)."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_register_commands(cli: click.Group) -> None:
    """Add ``plait ui`` (its module, and Starlette, are imported when it runs)."""
    from ._command import ui_command

    cli.add_command(ui_command)


# Every process that loads Plait's plugins imports this module (entry point ``ui``):
# Starlette, Jinja2 and uvicorn are imported only when the app is built.
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
