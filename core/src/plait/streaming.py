"""Streaming a run's events: :meth:`plait.Workflow.stream`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import sys
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

from .events import WorkflowEvent
from .options import RunOptions
from .state import RunState

if TYPE_CHECKING:
    from .workflow import Workflow, WorkflowRunResult

__all__ = ["EventStream"]


class EventStream:
    """The events of one run, as they happen (what :meth:`Workflow.stream` returns).

    Use it as ``async with workflow.stream(msg) as events: async for event in events``
    (structured: the run is a task of the block's task group), or iterate it directly.
    """

    def __init__(self, workflow: Workflow, message: Any, opts: RunOptions) -> None:
        self._workflow = workflow
        self._message = message
        self._opts = opts
        self._group: anyio.abc.TaskGroup | None = None
        self._receive: Any = None
        self._results: list[WorkflowRunResult] = []
        self._crashed: list[BaseException] = []
        self._entered = False
        self._plain: Any = None

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
        if not self._entered:
            plain = self._plain() if self._plain is not None else None
            if plain is None:
                plain = self._detached()
                # held weakly: the loop owns the generator, so an abandoned one is finalised
                # (and its run cancelled) as soon as the loop drops it
                self._plain = weakref.ref(plain)
            return plain
        return self._events()

    async def aclose(self) -> None:
        """Stop the plain form's run now (what ``contextlib.aclosing`` calls)."""
        plain = self._plain() if self._plain is not None else None
        if plain is not None:
            await plain.aclose()

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
        workflow, opts = self._workflow, self._opts
        listener = opts.on_event
        if listener is not None:
            send = emit

            def both(event: WorkflowEvent) -> None:
                send(event)
                listener(event)

            emit = both
        state = RunState(opts.run_id or uuid.uuid4().hex, emit)
        inbox = {workflow.spec.start: [self._message]}
        detail = opts.events != "lifecycle"
        return await workflow._execute(state, inbox, opts, detail=detail, live=True)

    def _settle(self) -> None:
        if self._crashed:
            raise self._crashed[0]
        if not self._results:  # the run task was interrupted by something other than an error
            raise RuntimeError("the streamed run ended without a result")
        self._workflow._finish(self._results[0], self._opts)

    # -- the plain form ----------------------------------------------------------------------

    async def _detached(self) -> AsyncIterator[WorkflowEvent]:
        send, receive = anyio.create_memory_object_stream[WorkflowEvent](math.inf)
        scope = anyio.CancelScope()
        finished = anyio.Event()

        async def produce() -> None:
            # runs in a task of its own, never across this generator's yields: a task group
            # here would be exited from whatever task finalises an abandoned iterator
            try:
                with scope:
                    async with send:
                        self._results.append(await self._run(send.send_nowait))
            except Exception as exc:  # an unexpected error reaches the consumer
                self._crashed.append(exc)
            finally:
                send.close()
                finished.set()

        task = _spawn(produce)  # noqa: F841 - held, so the task is not collected early
        try:
            async with receive:
                async for event in receive:
                    yield event
        finally:
            scope.cancel()
            with anyio.CancelScope(shield=True):
                await finished.wait()
        self._settle()


def _spawn(func: Callable[[], Awaitable[None]]) -> Any:
    """Start ``func`` in a task of its own on the running event loop (asyncio or trio), with
    a copy of the current context; return a handle the caller must keep (asyncio holds only
    weak references to its tasks)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import trio

        trio.lowlevel.spawn_system_task(func, context=contextvars.copy_context())
        return None
    return loop.create_task(func())  # type: ignore[arg-type]
