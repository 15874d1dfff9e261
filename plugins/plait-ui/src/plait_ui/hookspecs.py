"""The hook ``plait-ui`` calls, for the plugins that add to a run's page.

``plait-ui`` declares it as it is registered (its ``plait_addhooks``): a plugin that
implements it and does not require ``plait-ui`` marks it ``@hookimpl(optionalhook=True)``,
so that it loads where ``plait-ui`` is not installed. It is documented with the kernel's
hooks, in ``docs/hooks.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait.spi import hookspec

__all__: list[str] = []


@hookspec
def plait_run_panels(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Add panels to the page of one run in ``plait ui``: what a plugin reads from the
    metadata of the checkpoint the page shows (a budget's spend per unit and per node).

    A panel is plain data the page renders (escaped): ``{"title": str, "bars": [{"label":
    str, "fraction": float (0 to 1), "text": str}], "columns": [str], "rows": [[str]]}``,
    every key but ``title`` optional. ``metadata`` is stored JSON: untrusted; read only
    numbers and names from it, never the store.

    :param metadata: the checkpoint's metadata (``metadata["observers"]`` holds what the
        run's observers kept).
    :return: ``{name: panel}`` (a name is the panel's id on the page), or ``None`` (the
        plugin has nothing to show for this run); every implementation is called.
    """
