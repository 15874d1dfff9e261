"""Invocations: what one executor invocation's failure means (:func:`failure`, for every
invocation) and running one under a retry policy and a timeout (:func:`invoke_with_policy`).

Executors without a policy pay nothing for it: the runner calls their handler, which
writes straight to the run. Under a policy an attempt runs against
:class:`~plait.state.Effects` — a stand-in for the run's state that buffers what the
handler sends, yields, emits, asks and shares — and a deep copy of the executor's state;
only a successful attempt's effects are committed.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ._context import WorkflowContext
from ._errors import ExecutorFailedError, ExecutorTimeoutError, WorkflowRunError
from ._observe import note_attempt, note_retry
from ._policies import Policy
from ._state import Effects, RunState

__all__ = [
    "Policy",
    "cancelled_from_inside",
    "failure",
    "invoke_with_policy",
    "with_siblings",
    "wrap_failure",
]


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


def with_siblings(failures: list[BaseException]) -> BaseException:
    """A parallel superstep's first failure, with the others (``sibling_errors``; notes)."""
    first, others = failures[0], failures[1:]
    setattr(first, "sibling_errors", list(others))
    add_note = getattr(first, "add_note", None)
    if add_note is not None:
        for other in others:
            add_note(f"another branch of this superstep failed too: {other}")
    return first


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


def failure(
    eid: str,
    step: int,
    exc: BaseException,
    native_asyncio: bool,
    timeout: float | None = None,
    attempt: int = 1,
) -> WorkflowRunError:
    """The run error for what an invocation of ``eid`` raised — for every invocation, with
    or without a policy. A real cancellation (of the run, of its superstep) and what is
    not an ``Exception`` (``KeyboardInterrupt``) are raised again as they are."""
    if isinstance(exc, TimeoutError) and timeout is not None:
        error: WorkflowRunError = ExecutorTimeoutError(
            f"executor {eid!r} timed out after {timeout:g} s in superstep {step} "
            f"(attempt {attempt})",
            executor_id=eid,
            superstep=step,
            limit=timeout,
        )
        error.__cause__ = exc
        return error
    if isinstance(exc, asyncio.CancelledError):
        if not cancelled_from_inside(native_asyncio):
            raise exc
        return wrap_failure(eid, step, exc)
    if not isinstance(exc, Exception):
        raise exc
    return wrap_failure(eid, step, exc)


async def invoke_with_policy(
    run: RunState | Effects,
    eid: str,
    call: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[Any]],
    message: Any,
    index: int,
    policy: Policy,
    *,
    native_asyncio: bool,
    on_retry: Callable[[str, int], Awaitable[None]] | None,
) -> None:
    """Run one invocation of ``eid``'s handler ``call`` on ``message`` (the ``index``-th of
    its deliveries this superstep) under ``policy`` (retries, a timeout, or an error edge
    that takes its failures): every attempt runs against :class:`~plait.state.Effects` of
    its own and a deep copy of the executor's state, and only the attempt that succeeds is
    committed to ``run``. Failures are read by :func:`failure`, as every invocation's are.

    :raises WorkflowRunError: the last attempt's failure, naming ``eid`` and the superstep.
    """
    root = run if isinstance(run, RunState) else run._root
    step = run.superstep  # a pipelined run's effects carry their own logical time
    retry, timeout = policy
    key = f"{step}:{eid}:{run.delivery if run.delivery is not None else index}"
    attempt = root.attempts.get(key, 0) + 1  # a resumed run keeps its count
    if attempt > 1:
        note_attempt(root, attempt)
    while True:
        staged = Effects(run, root)
        attempt_state = copy.deepcopy(root.executor_state.get(eid, {}))
        ctx: WorkflowContext[Any, Any] = WorkflowContext(staged, eid, attempt_state)
        ctx._attempt, ctx._index = attempt, index
        try:
            if timeout is None:
                await call(message, ctx)
            else:
                with anyio.fail_after(timeout):
                    await call(message, ctx)
        except BaseException as exc:
            error = failure(eid, step, exc, native_asyncio, timeout, attempt)
        else:
            staged.commit()
            live = root.executor_state.setdefault(eid, {})
            live.clear()
            live.update(attempt_state)
            root.attempts.pop(key, None)
            return
        cause = error.__cause__ if isinstance(error, ExecutorFailedError) else error
        if retry is None or attempt > retry.max_attempts or not retry.retries(cause or error):
            raise error
        delay = retry.delay_before(attempt)
        note_retry(root, attempt, delay, cause or error)
        root.attempts[key] = attempt
        if on_retry is not None:
            await on_retry(key, attempt)  # a crash during the backoff keeps the count
        await anyio.sleep(delay)
        attempt += 1
