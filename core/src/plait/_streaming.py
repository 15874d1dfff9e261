"""Looking at a run from outside: its events as they happen (:meth:`plait.Workflow.stream`)
and a live, read-only view (:class:`RunWatch`) for displays that look at it at their own pace.

``workflow.run(msg, watch=callback)`` calls ``callback(RunWatch)`` once, as the run starts;
a progress display keeps the view and reads it a few times a second (from a task or a
thread of its own). Nothing is built or called per superstep for it, so watching a run
costs the run nothing — unlike ``events="all"``, which builds four events per superstep.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

from ._events import WorkflowEvent
from ._options import RunOptions
from ._state import RunState, new_run_id

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from ._events import WorkflowRunResult
    from ._runner import RunnerView

__all__ = ["EventStream", "RunWatch"]


class EventStream:
    """The events of one run, as they happen (what :meth:`Workflow.stream` returns).

    The run always lives in a task group: the one the stream owns as an async context
    manager (``async with workflow.stream(msg) as events: async for event in events``),
    or the caller's (``async for event in workflow.stream(msg, task_group=tg)``).
    """

    def __init__(
        self,
        start: Callable[[RunState], Awaitable[WorkflowRunResult]],
        finish: Callable[[WorkflowRunResult], object],
        opts: RunOptions,
        task_group: anyio.abc.TaskGroup | None = None,
    ) -> None:
        """:param start: runs the workflow from its first message in the given run state.
        :param finish: settles a finished run's result (raises a failed run's error).
        """
        self._start = start
        self._finish = finish
        self._opts = opts
        self._caller_group = task_group
        self._group: anyio.abc.TaskGroup | None = None
        self._receive: Any = None
        self._results: list[WorkflowRunResult] = []
        self._crashed: list[BaseException] = []
        self._entered = False
        # held weakly: the loop owns the iterator, so an abandoned one is finalised (and
        # its run cancelled) as soon as the loop drops it
        self._iterator: weakref.ref[AsyncGenerator[WorkflowEvent, None]] | None = None

    # -- structured form -------------------------------------------------------------------

    async def __aenter__(self) -> EventStream:
        if self._entered:
            raise RuntimeError("a workflow stream can be entered once")
        self._entered = True
        send, self._receive = anyio.create_memory_object_stream[WorkflowEvent](math.inf)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._produce, send)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._group is not None
        self._group.cancel_scope.cancel()  # a no-op when the run already ended
        try:
            return await self._group.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # the block's own error (the run's failure, raised at the end of the events)
            # comes back wrapped by the task group: give it back as it was raised
            if exc is not None and group.exceptions == (exc,):
                raise exc from exc.__cause__
            raise
        finally:
            self._receive.close()

    def __aiter__(self) -> AsyncIterator[WorkflowEvent]:
        if self._entered:
            return self._events()
        if self._caller_group is None:
            raise RuntimeError(
                "a workflow stream runs in a task group: use `async with "
                "workflow.stream(message) as events: async for event in events`, or pass "
                "the caller's group, `workflow.stream(message, task_group=tg)`"
            )
        if self._iterator is not None:
            raise RuntimeError("a workflow stream can be iterated once")
        iterator = self._in_caller_group(self._caller_group)
        self._iterator = weakref.ref(iterator)
        return iterator

    async def aclose(self) -> None:
        """Stop the run now, in the caller's task group (what ``contextlib.aclosing``
        calls)."""
        iterator = self._iterator() if self._iterator is not None else None
        if iterator is not None:
            await iterator.aclose()

    async def _events(self) -> AsyncIterator[WorkflowEvent]:
        async for event in self._receive:
            yield event
        self._settle()

    async def _produce(self, send: Any) -> None:
        async with send:
            try:
                self._results.append(await self._run(send.send_nowait))
            except Exception as exc:  # an unexpected error reaches the consumer
                self._crashed.append(exc)

    async def _run(self, emit: Callable[[WorkflowEvent], None]) -> WorkflowRunResult:
        opts = self._opts
        listener = opts.on_event
        if listener is not None:
            send = emit

            def both(event: WorkflowEvent) -> None:
                send(event)
                listener(event)

            emit = both
        state = RunState(opts.run_id or new_run_id(), emit)
        return await self._start(state)

    def _settle(self) -> None:
        if self._crashed:
            raise self._crashed[0]
        if not self._results:  # the run task was interrupted by something other than an error
            raise RuntimeError("the streamed run ended without a result")
        self._finish(self._results[0])

    # -- in the caller's task group ----------------------------------------------------------

    async def _in_caller_group(
        self, group: anyio.abc.TaskGroup
    ) -> AsyncGenerator[WorkflowEvent, None]:
        send, receive = anyio.create_memory_object_stream[WorkflowEvent](math.inf)
        scope = anyio.CancelScope()

        async def produce() -> None:
            with scope:
                await self._produce(send)

        group.start_soon(produce)
        try:
            async with receive:
                async for event in receive:
                    yield event
        finally:
            # leaving early (break, an error, a closed or collected iterator) stops the
            # run; cancel() needs no await, so it works from whatever task closes us
            scope.cancel()
        self._settle()


# -- a live view of a run (RunWatch) -----------------------------------------------------


class RunWatch:
    """What a run is doing now. Every property reads the run's live state.

    Read from another thread, a value may be a superstep behind; it is never torn.
    """

    __slots__ = ("_runner", "_workflow")

    def __init__(self, runner: RunnerView, workflow: str | None) -> None:
        self._runner = runner
        self._workflow = workflow

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._runner.state.run_id

    @property
    def workflow(self) -> str | None:
        """The workflow's name."""
        return self._workflow

    def _pipelined(self) -> tuple[int, dict[str, int]] | None:
        """What a schedule without the barrier (``pipelined``) is doing, while the run is
        in it."""
        scheduled = self._runner.scheduled
        if scheduled is None or not scheduled.active:
            return None
        found: tuple[int, dict[str, int]] = scheduled.watched()
        return found

    @property
    def superstep(self) -> int:
        """The number of the superstep running (or that ran last); in the pipelined
        schedule, the lowest superstep with work (branches may run ahead of it).
        """
        pipelined = self._pipelined()
        if pipelined is not None:
            return pipelined[0]
        return self._runner.state.superstep

    @property
    def running(self) -> tuple[str, ...]:
        """The executors the running superstep delivers to (the last one's, between); in
        the pipelined schedule, the executors running now, whatever their superstep."""
        pipelined = self._pipelined()
        if pipelined is not None:
            return tuple(pipelined[1])
        return tuple(self._runner.current)

    @property
    def deliveries(self) -> dict[str, int]:
        """How many messages each executor of the running superstep handles in it (a
        fan-out's executor handles many); in the pipelined schedule, each running
        executor's messages not committed yet."""
        pipelined = self._pipelined()
        if pipelined is not None:
            return pipelined[1]
        return {eid: len(messages) for eid, messages in dict(self._runner.current).items()}

    @property
    def outputs(self) -> int:
        """How many outputs the run has yielded."""
        return len(self._runner.state.outputs)

    @property
    def pending_requests(self) -> int:
        """How many requests for outside input are pending."""
        return len(self._runner.state.pending_requests)

    @property
    def retrying(self) -> dict[str, int]:
        """Executors whose invocation is being retried now: ``{executor id: failed
        attempts so far}`` (the most of any of its invocations)."""
        state = self._runner.state
        attempts = state.attempts.copy()
        executors = state.attempt_executors.copy()
        retrying: dict[str, int] = {}
        for key, count in attempts.items():
            eid = executors.get(key)
            if eid is not None:  # a resumed count is the executor's when it runs again
                retrying[eid] = max(retrying.get(eid, 0), count)
        return retrying

    @property
    def status(self) -> dict[str, str]:
        """What the run's observers say about it now, a few words each by name (a budget's
        ``{"spend": "$0.12/$2.00 · 1.2k/200k tok"}``: :meth:`plait.spi.RunObserver.status`);
        empty when nobody observes the run or they have nothing to say."""
        said = getattr(self._runner.observer, "status", None)  # (none, or older than it)
        if said is None:
            return {}
        return dict(said() or {})
