"""Looking at a run from outside: its events as they happen (:meth:`plait.Workflow.stream`).

A display that looks at a run at its own pace takes a live, read-only view of it instead
(``workflow.run(msg, watch=callback)``, :class:`plait.spi.RunWatch`), which costs the run
nothing per superstep — unlike ``events="all"``, which builds four events per superstep.
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

__all__ = ["EventStream"]


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
