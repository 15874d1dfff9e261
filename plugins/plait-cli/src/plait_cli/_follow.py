"""Following one run from the shell: progress, events as JSON, outputs as they come, and
Ctrl-C (the first stops at the next superstep boundary, after its checkpoint; the second
aborts at once).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import IO, Any

import anyio
import attrs
import click
from plait import OutputEvent, PlaitError, RunStatus, WorkflowEvent, WorkflowRunResult
from plait.spi import PendingRequest, record_repr

from ._app import start_up_over
from ._output import describe_error, event_record, format_output, to_json
from ._progress import LineProgress, LiveProgress, Progress, make_progress

__all__ = ["Display", "Outcome", "execute", "follow"]

#: Seconds a run goes before the live display appears (a quicker run shows its summary).
SHOW_AFTER = 0.2
#: What ``follow`` starts: a run or a resume, given the extra run options it needs.
Start = Callable[[dict[str, Any]], Awaitable[WorkflowRunResult]]


@attrs.define(repr=False)
class Outcome:
    """How a run ended as the shell sees it (``aborted``: a second Ctrl-C cancelled it)."""

    __repr__ = record_repr

    run_id: str
    status: RunStatus = RunStatus.FAILED
    outputs: list[Any] = attrs.field(factory=list)
    error: BaseException | None = None
    supersteps: int = 0
    requests: list[PendingRequest] = attrs.field(factory=list)
    #: the run's shared state when it ended (``--step-context`` reads plait-steps' key)
    shared: dict[str, Any] = attrs.field(factory=dict)
    aborted: bool = False
    interrupted: bool = False

    @classmethod
    def of(cls, result: WorkflowRunResult, interrupted: bool) -> Outcome:
        return cls(
            result.run_id,
            result.status,
            result.outputs,
            result.error,
            result.supersteps,
            list(result.pending_requests),
            dict(result.shared),
            interrupted=interrupted,
        )


@attrs.define(repr=False)
class Display:
    """What to show while a run goes: JSON events, progress (live or lines), or nothing."""

    __repr__ = record_repr

    json_events: bool = False
    quiet: bool = False
    #: where progress goes (default: standard error)
    stream: IO[str] | None = None

    def progress(self) -> Progress | None:
        if self.json_events or self.quiet:
            return None
        return make_progress(self.stream if self.stream is not None else sys.stderr)


def execute(start: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``anyio.run(start, *args)`` on asyncio; a Plait error (before a run ends, or from a
    store) becomes a CLI error."""
    try:
        return anyio.run(start, *args, backend="asyncio")
    except PlaitError as exc:
        raise click.ClickException(describe_error(exc)) from exc


def follow(start: Start, run_id: str, display: Display) -> Outcome:
    """Run ``start`` with the display's event feed and Ctrl-C handling; how it ended."""
    start_up_over()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        return execute(_follow, start, run_id, display)  # type: ignore[no-any-return]
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


async def _follow(start: Start, run_id: str, display: Display) -> Outcome:
    progress = display.progress()
    # on a terminal, outputs wait until the live display is gone; elsewhere they stream
    defer = isinstance(progress, LiveProgress) and sys.stdout.isatty()
    feed = _feed(progress, display.json_events, print_outputs=not defer)
    stop = anyio.Event()
    options: dict[str, Any] = {"stop": stop, "raise_on_failure": False}
    if feed is not None:
        options["on_event"] = feed
    if display.json_events:
        options["events"] = "all"
    if progress is not None:
        options["watch"] = progress.watch
    results: list[WorkflowRunResult] = []
    errors: list[Exception] = []
    run_scope = anyio.CancelScope()
    presses = 0

    def interrupted() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            stop.set()
            _tell(
                progress,
                "Ctrl-C: stopping after this superstep, once it is checkpointed "
                "(Ctrl-C again aborts at once)",
            )
        else:
            _tell(progress, "Ctrl-C again: aborting now")
            run_scope.cancel()

    if progress is not None:
        progress.run_id = run_id
        if not isinstance(progress, LiveProgress):
            progress.start()
    try:
        async with anyio.create_task_group() as tg:
            _catch_interrupts(interrupted)

            polling = anyio.CancelScope()

            async def run() -> None:
                try:
                    with run_scope:
                        results.append(await start(options))
                except Exception as exc:  # raised below, outside the task group, unwrapped
                    errors.append(exc)
                finally:
                    polling.cancel()

            async def poll(progress: Progress) -> None:
                with polling:
                    while True:
                        await anyio.sleep(progress.interval)
                        progress.tick()

            async def show_later(progress: LiveProgress) -> None:
                # a run over before the display would show anything never pays for it
                with polling:
                    await anyio.sleep(SHOW_AFTER)
                    progress.start()

            if isinstance(progress, LineProgress):  # a live display looks from its thread
                tg.start_soon(poll, progress)
            elif isinstance(progress, LiveProgress):
                tg.start_soon(show_later, progress)
            tg.start_soon(run)
    finally:
        if progress is not None:
            progress.stop()
    if errors:
        raise errors[0]
    if not results:  # a second Ctrl-C cancelled the run
        return Outcome(run_id, RunStatus.RUNNING, aborted=True, interrupted=True)
    outcome = Outcome.of(results[0], interrupted=presses > 0)
    if defer or feed is None:
        for output in outcome.outputs:
            click.echo(format_output(output))
    return outcome


def _catch_interrupts(on_signal: Callable[[], None]) -> None:
    """Route SIGINT to ``on_signal``, run on the event loop, until :func:`follow` puts the
    previous handler back. The handler is Python's, not the loop's, so it stays in place
    after the run ends: a Ctrl-C while the run is being wrapped up is absorbed (the loop
    is closed by then) rather than raised as KeyboardInterrupt in the middle of it. Off
    the main thread nothing is caught."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()

    def handle(signum: int, frame: Any) -> None:
        try:
            loop.call_soon_threadsafe(on_signal)
        except RuntimeError:  # the loop is closed: the run is over, its report follows
            pass

    signal.signal(signal.SIGINT, handle)


def _tell(progress: Progress | None, text: str) -> None:
    if progress is not None:
        progress.note(text)
    else:
        click.echo(text, err=True)


def _feed(
    progress: Progress | None, json_events: bool, *, print_outputs: bool
) -> Callable[[WorkflowEvent], None] | None:
    """The ``on_event`` callback: JSON lines, progress, outputs to stdout as they come."""
    if json_events:

        def as_json(event: WorkflowEvent) -> None:
            click.echo(to_json(event_record(event)), err=True)
            if type(event) is OutputEvent:
                click.echo(format_output(event.data))

        return as_json
    if progress is None:
        return None
    if not print_outputs:
        return progress

    def show(event: WorkflowEvent) -> None:
        progress(event)
        if type(event) is OutputEvent:
            click.echo(format_output(event.data))

    return show
