"""The hooks plait-cli declares for the plugins that extend it (``plait_addhooks``,
:mod:`plait_cli.hookspecs`), read by plait-cli: the columns and the pending runs of run
listings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import plait_cli
import pytest
from plait import PluginConflictError, RegistrationError
from plait.spi import PluginManager, hookimpl
from plait_cli import _runs, run_columns


class ColumnsOf:
    """A plugin whose ``plait_run_columns`` answers ``answer``."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    @hookimpl
    def plait_run_columns(self) -> Any:
        return self.answer


class PendingOf:
    """A plugin whose ``plait_pending_runs`` answers ``runs`` (an async function giving
    them), ``None`` when ``runs`` is, or raises ``error`` when asked to list."""

    def __init__(self, runs: list[str] | None, error: str | None = None) -> None:
        self.runs, self.error = runs, error

    @hookimpl
    def plait_pending_runs(self, store: str, queues: Sequence[str]) -> Any:
        if self.runs is None:
            return None

        async def listed() -> list[str]:
            if self.error is not None:
                raise RuntimeError(self.error)
            return [f"{run}@{store}/{'+'.join(queues)}" for run in self.runs or []]

        return listed


def test_pending_runs_are_gathered_and_a_failing_source_is_a_warning(
    plait_plugin_manager: PluginManager, plait_register_plugin: Callable[..., str]
) -> None:
    import anyio

    def pending() -> tuple[list[Any], list[str]]:
        return anyio.run(lambda: _runs.gather_pending("s://x", ["q"]))

    plait_register_plugin(plait_cli, "cli")
    assert pending() == ([], [])
    plait_register_plugin(PendingOf(["a", "b"]), "first")
    plait_register_plugin(PendingOf(None), "quiet")
    plait_register_plugin(PendingOf([], error="server down"), "broken")
    assert pending() == (
        ["a@s://x/q", "b@s://x/q"],
        ["plugin 'broken' could not list its runs: server down"],
    )


def test_run_columns_are_merged_and_a_bad_answer_names_its_plugin(
    plait_plugin_manager: PluginManager, plait_register_plugin: Callable[..., str]
) -> None:
    plait_register_plugin(plait_cli, "cli")
    assert run_columns() == {}
    plait_register_plugin(ColumnsOf({"a": str}), "first")
    plait_register_plugin(ColumnsOf(None), "quiet")
    plait_register_plugin(ColumnsOf({"b": repr}), "second")
    assert run_columns() == {"b": repr, "a": str}
    plait_register_plugin(ColumnsOf({"c": "not callable"}), "wrong")
    with pytest.raises(RegistrationError, match="plait_run_columns of plugin 'wrong' must"):
        run_columns()
    plait_plugin_manager.unregister("wrong")
    plait_register_plugin(ColumnsOf({"a": len}), "again")
    with pytest.raises(PluginConflictError, match="'a' is given by both plugin 'again' and"):
        run_columns()
