"""Invocations: running one executor invocation, with or without a retry policy and a
timeout (:func:`invoke`, the runner's one invocation path).

Executors without a policy pay nothing for it: their handler writes straight to the run.
Under a policy an attempt runs against :class:`~plait.state.Effects` — a stand-in for the
run's state that buffers what the handler sends, yields, emits, asks and shares — and a
deep copy of the executor's state; only a successful attempt's effects are committed.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .context import WorkflowContext
from .errors import ExecutorFailedError, ExecutorTimeoutError, WorkflowRunError
from .events import ExecutorFailed, ExecutorRetrying, WorkflowEvent
from .observe import note_attempt, note_retry
from .policies import RetryPolicy
from .state import Effects, RunState

__all__ = ["Policy", "cancelled_from_inside", "invoke", "wrap_failure"]

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


async def invoke(
    run: RunState | Effects,
    eid: str,
    call: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[Any]],
    message: Any,
    index: int,
    policy: Policy | None,
    *,
    emit: Callable[[WorkflowEvent], None] | None,
    native_asyncio: bool,
    on_retry: Callable[[str, int], Awaitable[None]] | None,
) -> None:
    """Run one invocation of ``eid``'s handler ``call`` on ``message`` (the ``index``-th of
    its deliveries this superstep), writing what it does to ``run``.

    The one invocation path, with and without a policy. Without one, the handler writes
    straight to ``run`` in one attempt (the hot path: nothing is copied). With one
    (retries, a timeout, or an error edge that takes its failures), every attempt runs
    against :class:`~plait.state.Effects` of its own and a deep copy of the executor's
    state, and only the attempt that succeeds is committed to ``run``.

    :raises WorkflowRunError: the last attempt's failure, naming ``eid`` and the superstep.
    """
    root = run if isinstance(run, RunState) else run._root
    step = root.superstep
    retry: RetryPolicy | None = None
    timeout: float | None = None
    attempt, key = 1, ""
    if policy is not None:
        retry, timeout = policy
        key = f"{step}:{eid}:{index}"
        attempt = root.attempts.get(key, 0) + 1  # a resumed run keeps its count
        if attempt > 1:
            note_attempt(root, attempt)
    while True:
        staged: Effects | None = None
        if policy is None:
            ctx = run.context(eid)
        else:
            staged = Effects(run)
            attempt_state = copy.deepcopy(root.executor_state.get(eid, {}))
            ctx = WorkflowContext(staged, eid, attempt_state)  # type: ignore[arg-type]
            ctx._attempt = attempt
        ctx._index = index
        try:
            if timeout is None:
                await call(message, ctx)
            else:
                with anyio.fail_after(timeout):
                    await call(message, ctx)
        except TimeoutError as exc:
            if timeout is None:
                error = wrap_failure(eid, step, exc)
            else:
                error = ExecutorTimeoutError(
                    f"executor {eid!r} timed out after {timeout:g} s in superstep {step} "
                    f"(attempt {attempt})",
                    executor_id=eid,
                    superstep=step,
                    limit=timeout,
                )
                error.__cause__ = exc
        except asyncio.CancelledError as exc:
            if not cancelled_from_inside(native_asyncio):
                raise
            error = wrap_failure(eid, step, exc)
        except Exception as exc:
            error = wrap_failure(eid, step, exc)
        else:
            if staged is not None:
                staged.commit()
                live = root.executor_state.setdefault(eid, {})
                live.clear()
                live.update(attempt_state)
                root.attempts.pop(key, None)
            return
        cause = error.__cause__ if isinstance(error, ExecutorFailedError) else error
        if retry is None or attempt > retry.max_attempts or not retry.retries(cause or error):
            # an error of another executor (a nested run's) is announced by that one
            if emit is not None and (policy is not None or error.executor_id == eid):
                emit(ExecutorFailed(eid, step, cause or error))
            raise error
        delay = retry.delay_before(attempt)
        if emit is not None:
            emit(ExecutorRetrying(eid, step, attempt, delay, cause or error))
        note_retry(root, attempt, delay, cause or error)
        root.attempts[key] = attempt
        if on_retry is not None:
            await on_retry(key, attempt)  # a crash during the backoff keeps the count
        await anyio.sleep(delay)
        attempt += 1
