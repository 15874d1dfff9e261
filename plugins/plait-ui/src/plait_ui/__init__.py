"""``plait-ui``: ``plait ui``, an offline run inspector in the browser.

``plait ui [STORE_URL] [--workflow TARGET] [--port N] [--read-only] [--host H] [--open]``
serves a small Starlette app on 127.0.0.1 and prints its URL with a one-time token. The
pages read the store as stored JSON (:mod:`plait_durable`): nothing named by stored data
is imported, and the workflow's code is imported only when ``--workflow`` names it (to
answer requests and resume runs).

Build the app yourself with :func:`make_app` (what the tests drive with Starlette's
``TestClient``).

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait

if TYPE_CHECKING:
    import click

    from ._app import UiSettings, make_app

__all__ = ["UiSettings", "make_app", "plait_register_commands"]


@plait.hookimpl
def plait_register_commands(cli: click.Group) -> None:
    """Add ``plait ui`` (its module, and Starlette, are imported when it runs)."""
    from ._command import ui_command

    cli.add_command(ui_command)


# Every process that loads Plait's plugins imports this module (entry point ``ui``):
# Starlette, Jinja2 and uvicorn are imported only when the app is built.
def __getattr__(name: str) -> Any:
    if name in ("UiSettings", "make_app"):
        from . import _app

        return getattr(_app, name)
    raise AttributeError(f"module 'plait_ui' has no attribute {name!r}")
