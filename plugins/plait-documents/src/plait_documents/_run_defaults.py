"""Run options a document sets for its workflow (a ``budget:`` section): checked when the
document is loaded, against the options the installed plugins declare, and kept in the
spec's ``options`` (the workflow's run defaults)."""

from __future__ import annotations

from typing import Any

from plait import PlaitError

__all__ = ["DOCUMENT_RUN_OPTIONS", "check_run_option"]

#: The run options a document may set at its top level, by key.
DOCUMENT_RUN_OPTIONS = ("budget",)


def check_run_option(name: str, value: Any, manager: Any) -> str | None:
    """What is wrong with run option ``name`` set to ``value`` (JSON-ready, from a
    document), or ``None``: the plugin that declares it converts it as a run would (an
    option no installed plugin declares says which distribution to install)."""
    from plait.spi import RunOptions

    try:
        RunOptions.from_kwargs({}, {name: value}, manager)
    except PlaitError as exc:
        return str(exc)
    return None
