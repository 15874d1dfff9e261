"""Transactional attempts: running one invocation under a retry policy and a timeout.

Used by the runner only for executors that have a policy, so executors without one pay
nothing. An attempt runs against an :class:`AttemptRun` — a stand-in for the run's state
that buffers what the handler sends, yields, emits, asks and shares — and a deep copy of
the executor's state; only a successful attempt's effects are committed.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from .context import WorkflowContext
from .errors import ExecutorFailedError, ExecutorTimeoutError, WorkflowRunError
from .events import ExecutorFailed, ExecutorRetrying, WorkflowEvent
from .observe import note_attempt, note_retry
from .policies import RetryPolicy

if TYPE_CHECKING:
    from .state import RunState

__all__ = ["AttemptRun", "Policy", "cancelled_from_inside", "invoke_with_policy", "wrap_failure"]

#: ``(retry policy or None, timeout in seconds or None)`` of one executor
Policy = tuple[RetryPolicy | None, float | None]


def wrap_failure(eid: str, step: int, exc: BaseException) -> WorkflowRunError:
    """The run error for ``exc`` raised by executor ``eid``'s handler in ``step``."""
    if isinstance(exc, WorkflowRunError):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        error = ExecutorFailedError(
            f"executor {eid!r} failed in superstep {step}: its handler raised CancelledError "
            "although the run was not cancelled (a library cancelled something the handler "
            "awaited); the branch is not dropped",
            executor_id=eid,
            superstep=step,
        )
    else:
        error = ExecutorFailedError(
            f"executor {eid!r} failed in superstep {step}: {type(exc).__name__}: {exc}",
            executor_id=eid,
            superstep=step,
        )
    error.__cause__ = exc
    return error


def cancelled_from_inside(native_asyncio: bool) -> bool:
    """A ``CancelledError`` reached a handler's caller: was it raised by the handler itself
    (True) rather than by a cancellation of the run or of its task (False)?

    On trio, asyncio's ``CancelledError`` can only come from the handler. On asyncio,
    ``Task.cancelling()`` (3.11+) counts real cancellation requests; on 3.10, which lacks
    it, a ``CancelledError`` is taken as a real cancellation here — the runner still fails
    the run when a branch of a parallel superstep ends cancelled before it cancelled any.
    """
    if not native_asyncio:
        return True
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and cancelling() == 0


class AttemptRun:
    """Stands in for :class:`~plait.state.RunState` during one attempt and buffers its
    effects until :meth:`commit`."""

    __slots__ = ("_custom", "_outputs", "_requests", "_shared_before", "_state", "outbox", "shared")

    def __init__(self, state: RunState) -> None:
        self._state = state
        self.outbox: list[tuple[str, Any, str | None]] = []
        self.shared = dict(state.shared)
        self._shared_before = dict(state.shared)
        self._outputs: list[tuple[str, Any]] = []
        self._custom: list[tuple[str, Any]] = []
        self._requests: list[tuple[str, str, Any, Any]] = []

    @property
    def run_id(self) -> str:
        return self._state.run_id

    @property
    def superstep(self) -> int:
        return self._state.superstep

    def emit_output(self, executor_id: str, data: Any) -> None:
        self._outputs.append((executor_id, data))

    def emit_custom(self, executor_id: str, data: Any) -> None:
        self._custom.append((executor_id, data))

    def request_info(
        self, executor_id: str, request: Any, response_type: Any, *, request_id: str | None = None
    ) -> str:
        request_id = request_id or uuid.uuid4().hex
        self._requests.append((request_id, executor_id, request, response_type))
        return request_id

    def commit(self, executor_id: str, attempt_state: dict[str, Any]) -> None:
        """Apply this attempt's effects to the run, in the order a direct run gives."""
        state = self._state
        state.outbox.extend(self.outbox)
        for eid, data in self._outputs:
            state.emit_output(eid, data)
        for eid, data in self._custom:
            state.emit_custom(eid, data)
        for request_id, eid, request, response_type in self._requests:
            state.request_info(eid, request, response_type, request_id=request_id)
        for key in set(self._shared_before) - set(self.shared):
            state.shared.pop(key, None)
        for key, value in self.shared.items():
            if key not in self._shared_before or self._shared_before[key] is not value:
                state.shared[key] = value
        live = state.executor_state.setdefault(executor_id, {})
        live.clear()
        live.update(attempt_state)


async def invoke_with_policy(
    state: RunState,
    eid: str,
    call: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[Any]],
    message: Any,
    index: int,
    policy: Policy,
    *,
    emit: Callable[[WorkflowEvent], None] | None,
    native_asyncio: bool,
    on_retry: Callable[[str, int], Awaitable[None]] | None,
) -> None:
    """Run one invocation under ``policy`` (retries, timeout); commit the first attempt
    that succeeds, raise the last failure otherwise."""
    retry, timeout = policy
    step = state.superstep
    key = f"{step}:{eid}:{index}"
    attempt = state.attempts.get(key, 0) + 1  # a resumed run keeps its count
    if attempt > 1:
        note_attempt(state, attempt)
    while True:
        run = AttemptRun(state)
        attempt_state = copy.deepcopy(state.executor_state.get(eid, {}))
        ctx: WorkflowContext[Any, Any] = WorkflowContext(run, eid, attempt_state)  # type: ignore[arg-type]
        ctx._attempt, ctx._index = attempt, index
        try:
            if timeout is None:
                await call(message, ctx)
            else:
                with anyio.fail_after(timeout):
                    await call(message, ctx)
        except TimeoutError as exc:
            error: WorkflowRunError = ExecutorTimeoutError(
                f"executor {eid!r} timed out after {timeout:g} s in superstep {step} "
                f"(attempt {attempt})",
                executor_id=eid,
                superstep=step,
                limit=timeout or 0.0,
            )
            error.__cause__ = exc
        except asyncio.CancelledError as exc:
            if not cancelled_from_inside(native_asyncio):
                raise
            error = wrap_failure(eid, step, exc)
        except Exception as exc:
            error = wrap_failure(eid, step, exc)
        else:
            run.commit(eid, attempt_state)
            state.attempts.pop(key, None)
            return
        cause = error.__cause__ if isinstance(error, ExecutorFailedError) else error
        if retry is None or attempt > retry.max_attempts or not retry.retries(cause or error):
            if emit is not None:
                emit(ExecutorFailed(eid, step, cause or error))
            raise error
        delay = retry.delay_before(attempt)
        if emit is not None:
            emit(ExecutorRetrying(eid, step, attempt, delay, cause or error))
        note_retry(state, attempt, delay, cause or error)
        state.attempts[key] = attempt
        if on_retry is not None:
            await on_retry(key, attempt)  # a crash during the backoff keeps the count
        await anyio.sleep(delay)
        attempt += 1
