"""The progress display shows what the run's observers say (``RunWatch.status``: a
budgeted run's spend, from plait-budgets), beside the superstep on a terminal and in the
summary; a run nobody observes shows nothing more."""

from __future__ import annotations

import io
from typing import Any

import anyio
from plait import Never, WorkflowContext, executor, hookimpl
from plait.spi import RunObserver
from plait_builders import WorkflowBuilder
from plait_cli._progress import LineProgress, LiveProgress, Progress
from plait_testing import RegisterPlugin
from rich.console import Console


class Spending(RunObserver):
    def __init__(self) -> None:
        self.steps = 0

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.steps = superstep

    def status(self) -> dict[str, str]:
        return {"spend": f"${self.steps}.00/$5.00 <b>"}


class Observes:
    @hookimpl
    def plait_observe_run(self, run_id: str) -> Any:
        return Spending()


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(progress: Progress) -> None:
    @executor(id="first")
    async def first(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x)

    @executor(id="last")
    async def last(x: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(x)

    workflow = WorkflowBuilder("spent").add_edge(first, last).set_start(first).build()

    async def go() -> None:
        await workflow.run(1, watch=progress.watch, on_event=progress)

    anyio.run(go)


def _drawn(progress: LiveProgress) -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(progress.render())
    return out.getvalue()


def test_the_live_display_and_the_summary_show_the_observers_status(
    plait_register_plugin: RegisterPlugin,
) -> None:
    quiet = LiveProgress(Tty())
    _run(quiet)
    assert "spend" not in _drawn(quiet) and "spend" not in quiet.summary()
    plait_register_plugin(Observes(), "progress-spending")
    live = LiveProgress(Tty())
    _run(live)
    assert "spend $2.00/$5.00 <b>" in _drawn(live)  # rich text, not markup: shown as is
    assert ", spend $2.00/$5.00 <b> in " in live.summary()
    lines = LineProgress(io.StringIO())
    _run(lines)
    lines.stop()
    assert ", spend $2.00/$5.00 <b> in " in lines.stream.getvalue()  # type: ignore[attr-defined]
