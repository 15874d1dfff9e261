"""The panels plugins add to a run's page (``plait_run_panels``): a budget's bars and its
spend per node, say. What a plugin answers is checked and cut to size here; the page
escapes every text (its template autoescapes), so a name a store kept shows as text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_ROWS", "run_panels"]

#: The most rows of a panel's table shown (the rest are counted).
MAX_ROWS = 200
#: The longest text shown in a panel (a cell, a bar's text, a note).
_TEXT = 200


def run_panels(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The panels of the plugins for a checkpoint's ``metadata``, ready for the page:
    ``{"id", "title", "error", "bars": [{"label", "percent", "text"}], "columns",
    "rows", "left_out", "notes"}`` each; a piece of the wrong shape is left out."""
    return [_panel(name, panel) for name, panel in answers(metadata).items()]


def answers(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The panels the plugins add to a run's page (``plait_run_panels``) for a
    checkpoint's ``metadata``: name -> panel, in pluggy's call order. A plugin whose
    answer raises, or is not a mapping of names to mappings, gets a panel of its own
    saying so (``{"title": plugin, "error": why}``): one plugin's bug never hides the
    page."""
    from plait import get_plugin_manager

    panels: dict[str, Any] = {}
    for plugin, call in get_plugin_manager().implementations("plait_run_panels"):
        try:
            answer = call(metadata=metadata) or {}
        except Exception as exc:  # the page still shows; the panel says why
            answer = {plugin: {"title": plugin, "error": repr(exc)}}
        if not isinstance(answer, Mapping) or not all(
            isinstance(name, str) and isinstance(panel, Mapping) for name, panel in answer.items()
        ):
            error = (
                f"plait_run_panels must return a mapping of names to panels, got {answer!r:.200}"
            )
            answer = {plugin: {"title": plugin, "error": error}}
        panels.update(answer)
    return panels


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _panel(name: str, panel: Mapping[str, Any]) -> dict[str, Any]:
    bars = []
    for bar in _list(panel.get("bars")):
        if not isinstance(bar, Mapping):
            continue
        fraction = bar.get("fraction")
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            continue
        share = float(fraction)
        share = 0.0 if math.isnan(share) else min(max(share, 0.0), 1.0)
        bars.append(
            {
                "label": _text(bar.get("label", "")),
                "percent": round(share * 100, 1),
                "text": _text(bar.get("text", "")),
                "full": share >= 1.0,
            }
        )
    rows = [[_text(cell) for cell in _list(row)] for row in _list(panel.get("rows"))]
    error = panel.get("error")
    return {
        "id": _text(name),
        "title": _text(panel.get("title") or name),
        "error": None if error is None else _text(error),
        "bars": bars,
        "columns": [_text(column) for column in _list(panel.get("columns"))],
        "rows": rows[:MAX_ROWS],
        "left_out": max(len(rows) - MAX_ROWS, 0),
        "notes": [_text(note) for note in _list(panel.get("notes"))],
    }
