"""The hook plait-ui declares for the plugins that add panels to a run's page
(``plait_addhooks``, :mod:`plait_ui.hookspecs`), read by plait-ui."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plait_ui
from plait.spi import PluginManager, hookimpl
from plait_ui._panels import answers


class PanelsOf:
    """A plugin whose ``plait_run_panels`` answers ``answer`` (raises it, if an error)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    @hookimpl
    def plait_run_panels(self, metadata: Any) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer(metadata) if callable(self.answer) else self.answer


def test_run_panels_are_merged_and_a_bad_or_raising_one_becomes_a_panel_saying_so(
    plait_plugin_manager: PluginManager, plait_register_plugin: Callable[..., str]
) -> None:
    plait_register_plugin(plait_ui, "ui")
    assert answers({}) == {}
    plait_register_plugin(PanelsOf(lambda m: {"seen": {"title": str(m["n"])}}), "reads")
    plait_register_plugin(PanelsOf(None), "quiet")
    assert answers({"n": 3}) == {"seen": {"title": "3"}}
    plait_register_plugin(PanelsOf(RuntimeError("no panel")), "raises")
    plait_register_plugin(PanelsOf({"x": "not a panel"}), "wrong")
    panels = answers({"n": 4})
    assert panels["seen"] == {"title": "4"}
    assert panels["raises"] == {"title": "raises", "error": "RuntimeError('no panel')"}
    assert panels["wrong"]["error"].startswith("plait_run_panels must return a mapping")
