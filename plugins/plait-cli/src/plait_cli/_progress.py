"""Live progress of a run, fed by its events (the ``on_event`` run option).

On a terminal, a rich live display: the superstep, the executors running with their
elapsed time, retries, failures and the latest outputs, redrawn a few times a second by
rich's own thread (the event handler only updates counters, so a fast run pays little).
Elsewhere (a pipe, a log file, CI), plain lines: one per superstep, one per retry or
failure.

.. versionadded:: 0.1
"""

from __future__ import annotations

import time
from collections import deque
from typing import IO, Any

from plait.events import (
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
    ExecutorRetrying,
    OutputEvent,
    RequestInfoEvent,
    RunFinished,
    RunStarted,
    SuperstepFinished,
    SuperstepStarted,
    WorkflowEvent,
)

from ._output import format_output

__all__ = ["LineProgress", "LiveProgress", "Progress", "make_progress"]

#: How many of the latest outputs the live display shows.
_RECENT = 3
#: The widest output shown in the live display.
_OUTPUT_WIDTH = 100


def _short(text: str, width: int = _OUTPUT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


class Progress:
    """What every progress display tracks; subclasses say how it is shown.

    Call the object with each event; :meth:`note` adds a message (Ctrl-C's "stopping…").
    """

    def __init__(self) -> None:
        self.run_id = ""
        self.superstep = 0
        self.started = time.monotonic()
        self.step_started = self.started
        self.running: dict[str, float] = {}  # executor id -> when it was invoked
        self.invocations = 0
        self.retries = 0
        self.failures = 0
        self.outputs = 0
        self.recent: deque[str] = deque(maxlen=_RECENT)
        self.notes: list[str] = []
        self.finished: RunFinished | None = None

    def __call__(self, event: WorkflowEvent) -> None:
        kind = type(event)
        if kind is ExecutorInvoked:
            self.running[event.executor_id] = time.monotonic()  # type: ignore[attr-defined]
            self.invocations += 1
        elif kind is ExecutorCompleted:
            self.running.pop(event.executor_id, None)  # type: ignore[attr-defined]
        elif kind is SuperstepStarted:
            self.superstep = event.superstep  # type: ignore[attr-defined]
            self.step_started = time.monotonic()
        elif kind is SuperstepFinished:
            self.superstep_finished(event)  # type: ignore[arg-type]
        elif kind is OutputEvent:
            self.outputs += 1
            self.recent.append(_short(format_output(event.data)))  # type: ignore[attr-defined]
            self.output(event)  # type: ignore[arg-type]
        elif kind is ExecutorRetrying:
            self.retries += 1
            self.retrying(event)  # type: ignore[arg-type]
        elif kind is ExecutorFailed:
            self.running.pop(event.executor_id, None)  # type: ignore[attr-defined]
            self.failures += 1
            self.failed(event)  # type: ignore[arg-type]
        elif kind is RunStarted:
            self.run_id = event.run_id  # type: ignore[attr-defined]
        elif kind is RunFinished:
            self.finished = event  # type: ignore[assignment]
        elif kind is RequestInfoEvent:
            self.requested(event)  # type: ignore[arg-type]

    # what a display adds; the plain counters above are shared
    def superstep_finished(self, event: SuperstepFinished) -> None: ...
    def output(self, event: OutputEvent) -> None: ...
    def retrying(self, event: ExecutorRetrying) -> None: ...
    def failed(self, event: ExecutorFailed) -> None: ...
    def requested(self, event: RequestInfoEvent) -> None: ...

    def note(self, text: str) -> None:
        """Show a message about the run (Ctrl-C was pressed …)."""
        self.notes.append(text)

    def start(self) -> None:
        """Start showing progress."""

    def stop(self) -> None:
        """Stop showing progress and print the run's summary line."""

    def summary(self) -> str:
        """One line: how the run ended, after how many supersteps and how long."""
        elapsed = _seconds(time.monotonic() - self.started)
        status = self.finished.status.value if self.finished is not None else "interrupted"
        parts = [
            f"run {self.run_id}: {status}",
            f"{self.superstep} superstep(s)",
            f"{self.invocations} invocation(s)",
            f"{self.outputs} output(s)",
        ]
        if self.retries:
            parts.append(f"{self.retries} retr{'y' if self.retries == 1 else 'ies'}")
        return ", ".join(parts) + f" in {elapsed}"


class LineProgress(Progress):
    """Plain lines on a stream that is not a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def superstep_finished(self, event: SuperstepFinished) -> None:
        took = _seconds(time.monotonic() - self.step_started)
        self._line(f"superstep {event.superstep}: {', '.join(event.executor_ids)} ({took})")

    def retrying(self, event: ExecutorRetrying) -> None:
        self._line(
            f"retry: executor {event.executor_id!r} attempt {event.attempt + 1} in "
            f"{event.delay:g} s after {type(event.error).__name__}: {event.error}"
        )

    def failed(self, event: ExecutorFailed) -> None:
        self._line(
            f"failed: executor {event.executor_id!r} in superstep {event.superstep}: "
            f"{type(event.error).__name__}: {event.error}"
        )

    def note(self, text: str) -> None:
        super().note(text)
        self._line(text)

    def stop(self) -> None:
        if self.finished is not None or self.notes:
            self._line(self.summary())


class LiveProgress(Progress):
    """A rich live display on a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        from rich.console import Console

        self.console = Console(file=stream, stderr=True)
        self.live: Any = None

    def render(self) -> Any:
        """The display as it is now (called by rich's refresh thread)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        now = time.monotonic()
        head = Text.assemble(
            ("run ", "dim"),
            (self.run_id[:12], "bold"),
            ("  superstep ", "dim"),
            (str(self.superstep), "bold cyan"),
            ("  elapsed ", "dim"),
            (_seconds(now - self.started), "bold"),
            ("  invocations ", "dim"),
            (str(self.invocations), "bold"),
            ("  outputs ", "dim"),
            (str(self.outputs), "bold green"),
        )
        if self.retries:
            head.append(f"  retries {self.retries}", "yellow")
        if self.failures:
            head.append(f"  failures {self.failures}", "bold red")
        parts: list[Any] = [head]
        running = self.running.copy()  # one C-level copy: the event loop keeps writing
        if running:
            table = Table.grid(padding=(0, 2))
            table.add_column(style="cyan")
            table.add_column(justify="right")
            by_age = sorted(running.items(), key=lambda item: item[1])
            for eid, since in by_age[:10]:
                table.add_row(f"▸ {eid}", _seconds(now - since))
            if len(by_age) > 10:
                table.add_row(f"  … and {len(by_age) - 10} more", "")
            parts.append(table)
        for text in list(self.recent):
            parts.append(Text.assemble(("→ ", "green"), text))
        for text in list(self.notes):
            parts.append(Text(text, style="yellow"))
        return Group(*parts)

    def retrying(self, event: ExecutorRetrying) -> None:
        self.console.print(
            f"[yellow]retry[/] executor [cyan]{event.executor_id}[/] attempt "
            f"{event.attempt + 1} in {event.delay:g} s after "
            f"{type(event.error).__name__}: {event.error}",
            markup=True,
            highlight=False,
        )

    def failed(self, event: ExecutorFailed) -> None:
        self.console.print(
            f"[bold red]failed[/] executor [cyan]{event.executor_id}[/] in superstep "
            f"{event.superstep}: {type(event.error).__name__}: {event.error}",
            markup=True,
            highlight=False,
        )

    def start(self) -> None:
        from rich.live import Live

        self.live = Live(
            get_renderable=self.render,
            console=self.console,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.live.start()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        if self.finished is None and not self.notes:
            return  # the run never started: its error says why
        style = "green" if self.finished is not None and not self.finished.error else "yellow"
        if self.finished is not None and self.finished.status.value == "failed":
            style = "red"
        self.console.print(f"[{style}]{self.summary()}[/]", highlight=False)


def make_progress(stream: IO[str]) -> Progress:
    """A live display when ``stream`` is a terminal (and rich is installed), else lines."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        try:
            return LiveProgress(stream)
        except ImportError:  # pragma: no cover - rich is a dependency of plait-cli
            pass
    return LineProgress(stream)
