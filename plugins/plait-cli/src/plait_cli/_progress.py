"""Live progress of a run, at no cost to the run.

A display gets the run's :class:`plait.spi.RunWatch` (the ``watch`` run option) and its
lifecycle events (``on_event``: outputs, requests, the end), and looks at the watch a few
times a second: nothing is built or called per superstep for it, so a run of a thousand
fast supersteps runs as fast with the display as without.

On a terminal, a rich live display, redrawn by rich's own thread: the superstep, the
executors running with their elapsed time, retries, and the latest outputs. Elsewhere (a
pipe, a log file, CI), plain lines: one whenever the superstep has moved on since the last
look, one per retry, and a summary.

What the run's observers say about it (the watch's ``status``: a budgeted run's spend
against its budget, from plait-budgets) is shown with the superstep and in the summary; a
run nobody observes has none, and the display shows nothing more.
"""

from __future__ import annotations

import time
from collections import deque
from typing import IO, Any

from plait import OutputEvent, RunFinished, WorkflowEvent
from plait.spi import RunWatch

from ._output import format_output

__all__ = ["LineProgress", "LiveProgress", "Progress", "make_progress"]

#: How many of the latest outputs the live display shows.
_RECENT = 3
#: The widest output shown in the live display.
_OUTPUT_WIDTH = 100
#: How many running executors the live display lists.
_LISTED = 10


def _short(text: str, width: int = _OUTPUT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


class Progress:
    """What every progress display tracks; subclasses say how it is shown.

    Give :meth:`watch` to the run as its ``watch`` option and the object itself as its
    ``on_event``; call :meth:`tick` now and then (the live display's thread does);
    :meth:`note` adds a message (Ctrl-C's "stopping…").
    """

    #: seconds between two looks at the run (what ``plait run`` polls at)
    interval = 0.25

    def __init__(self) -> None:
        self.run_id = ""
        self.started = time.monotonic()
        self.view: RunWatch | None = None
        self.superstep = 0
        self.step_seen = self.started  # when this superstep was first seen
        self.outputs = 0
        self.recent: deque[str] = deque(maxlen=_RECENT)
        self.retried: dict[str, int] = {}  # executor id -> the last failed attempt seen
        self.retries = 0
        self.notes: list[str] = []
        self.finished: RunFinished | None = None
        #: what the run's observers said at the last look (``RunWatch.status``)
        self.status: dict[str, str] = {}

    def watch(self, view: RunWatch) -> None:
        """Keep the run's live view (the ``watch`` run option)."""
        self.view = view
        self.run_id = view.run_id
        self.superstep = self.last_superstep = view.superstep

    def __call__(self, event: WorkflowEvent) -> None:
        """Take a lifecycle event (the ``on_event`` run option)."""
        if type(event) is OutputEvent:
            self.outputs += 1
            self.recent.append(_short(format_output(event.data)))
        elif type(event) is RunFinished:
            self.finished = event

    def tick(self) -> None:
        """Look at the run: note a new superstep and new retries."""
        view = self.view
        if view is None:
            return
        self.status = view.status
        step = view.superstep
        if step != self.superstep:
            self.superstep = step
            self.step_seen = time.monotonic()
            self.moved_on(step, view.deliveries)
        retrying = view.retrying
        for eid, failed in retrying.items():
            if self.retried.get(eid, 0) < failed:
                self.retries += failed - self.retried.get(eid, 0)
                self.retrying(eid, failed + 1)
        self.retried = retrying

    def moved_on(self, superstep: int, deliveries: dict[str, int]) -> None:
        """The run is in a new superstep, delivering to these executors (how many messages
        each): what a display adds."""

    def retrying(self, executor_id: str, attempt: int) -> None:
        """An invocation of ``executor_id`` is retried, as ``attempt``."""

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
        status = "interrupted"
        supersteps = self.view.superstep if self.view is not None else self.superstep
        if self.finished is not None:
            status, supersteps = self.finished.status.value, self.finished.supersteps
        parts = [f"run {self.run_id}: {status}", f"{supersteps} superstep(s)"]
        parts.append(f"{self.outputs} output(s)")
        if self.retries:
            parts.append(f"{self.retries} retr{'y' if self.retries == 1 else 'ies'}")
        parts.extend(f"{name} {said}" for name, said in self.status.items())
        return ", ".join(parts) + f" in {elapsed}"


class LineProgress(Progress):
    """Plain lines on a stream that is not a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def moved_on(self, superstep: int, deliveries: dict[str, int]) -> None:
        at = _seconds(time.monotonic() - self.started)
        running = [f"{eid} ({n} messages)" if n > 1 else eid for eid, n in deliveries.items()]
        shown = ", ".join(running[:_LISTED])
        if len(running) > _LISTED:
            shown += f" and {len(running) - _LISTED} more"
        said = "".join(f"; {name} {text}" for name, text in self.status.items())
        self._line(f"[{at}] superstep {superstep}: {shown}{said}")

    def retrying(self, executor_id: str, attempt: int) -> None:
        self._line(f"retry: executor {executor_id!r}, attempt {attempt}")

    def note(self, text: str) -> None:
        super().note(text)
        self._line(text)

    def stop(self) -> None:
        self.tick()
        if self.finished is not None or self.notes:
            self._line(self.summary())


class LiveProgress(Progress):
    """A rich live display on a terminal."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream
        self.live: Any = None  # rich is imported when the display first shows

    def _plain(self, text: str, colour: str) -> None:
        """A line without rich (the display never showed: a quick run pays nothing)."""
        import click

        click.secho(text, file=self.stream, fg=colour, color=True)

    def note(self, text: str) -> None:
        super().note(text)
        if self.live is None:  # not showing yet: say it now
            self._plain(text, "yellow")

    def render(self) -> Any:
        """The display as it is now (called by rich's refresh thread)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        self.tick()
        now = time.monotonic()
        view = self.view
        head = Text.assemble(
            ("run ", "dim"),
            (self.run_id[:12], "bold"),
            ("  superstep ", "dim"),
            (str(self.superstep), "bold cyan"),
            ("  elapsed ", "dim"),
            (_seconds(now - self.started), "bold"),
            ("  outputs ", "dim"),
            (str(self.outputs), "bold green"),
        )
        if self.retries:
            head.append(f"  retries {self.retries}", "yellow")
        for name, said in self.status.items():
            head.append(f"  {name} ", "dim")
            head.append(said, "bold magenta")
        parts: list[Any] = [head]
        counts = view.deliveries if view is not None and self.finished is None else {}
        running = tuple(counts)
        if running:
            table = Table.grid(padding=(0, 2))
            table.add_column(style="cyan")
            table.add_column(justify="right")
            took = _seconds(now - self.step_seen)
            retrying = self.retried
            for eid in running[:_LISTED]:
                again = f"  retry {retrying[eid] + 1}" if eid in retrying else ""
                many = f" ({counts[eid]})" if counts[eid] > 1 else ""
                table.add_row(f"▸ {eid}{many}", took + again)
            if len(running) > _LISTED:
                table.add_row(f"  … and {len(running) - _LISTED} more", "")
            parts.append(table)
        for text in list(self.recent):
            parts.append(Text.assemble(("→ ", "green"), text))
        for text in list(self.notes):
            parts.append(Text(text, style="yellow"))
        return Group(*parts)

    def start(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.live = Live(
            get_renderable=self.render,
            console=Console(file=self.stream, stderr=True),
            refresh_per_second=1 / self.interval,
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
        self.tick()  # the spend as the run ended
        colour = "green"
        if self.finished is None or self.finished.status.value != "idle":
            colour = "yellow"
        if self.finished is not None and self.finished.status.value == "failed":
            colour = "red"
        self._plain(self.summary(), colour)


def make_progress(stream: IO[str]) -> Progress:
    """A live display when ``stream`` is a terminal, else plain lines."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return LiveProgress(stream)
    return LineProgress(stream)
