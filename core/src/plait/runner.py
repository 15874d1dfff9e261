"""The superstep engine.

A run is a loop of supersteps. Each superstep takes the pending deliveries (target
executor -> messages), runs every target's handlers — concurrently in one anyio task
group when there is more than one delivery, inline when there is exactly one — then routes
what the handlers sent through the edge groups into the next superstep's deliveries.

The barrier is real: a superstep ends when its slowest executor ends; wrap a slow branch
as a nested workflow to let it run at its own pace.

Hot path: dispatch by message type is cached per executor; a superstep with one delivery
spawns no task; no event is built unless someone consumes it; messages are never copied.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
from asyncio import CancelledError
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from .attempts import cancelled_from_inside, invoke_with_policy, wrap_failure
from .context import InvocationFailure, WorkflowContext
from .errors import (
    ExecutorFailedError,
    RoutingError,
    RunOptionError,
    SuperstepLimitError,
    UnhandledMessageError,
    VisitLimitError,
    WorkflowRunError,
)
from .events import (
    ExecutorCompleted,
    ExecutorFailed,
    ExecutorInvoked,
    RunStatus,
    SuperstepFinished,
    SuperstepStarted,
)
from .observe import observe_runner
from .options import RunOptions
from .state import PendingRequest, RunState
from .types import type_name
from .watch import RunWatch

if TYPE_CHECKING:
    from .graph import CompiledGraph

__all__ = ["RunOptions", "RunState", "PendingRequest", "Runner"]


Inbox = dict[str, list[Any]]
#: (executor id, its messages, a limiter for concurrent messages, index of the first)
Job = tuple[str, list[Any], "anyio.CapacityLimiter | None", int]
# yield to the event loop (a cancellation point too) at least this often on inline
# supersteps, so other runs, stream consumers and cancel scopes get their turn even when
# every handler completes without awaiting anything
_YIELD_EVERY = 32


class Runner:
    """Runs one run of a compiled graph to the end (or the first failure)."""

    def __init__(
        self,
        graph: CompiledGraph,
        options: RunOptions,
        state: RunState,
        *,
        detail: bool,
        live: bool,
        on_superstep: Callable[[Runner, Inbox], Any] | None = None,
    ) -> None:
        self.graph = graph
        self.options = options
        self.state = state
        self.detail = detail  # build superstep/executor events
        self.live = live  # yield to the consumer every superstep
        self.on_superstep = on_superstep
        self.stop = options.stop  # asked at each superstep boundary (see RunOptions.stop)
        self.remaining: Inbox = {}  # the deliveries left when a stop was asked for
        if options.watch is not None:  # a display that looks at the run at its own pace
            options.watch(RunWatch(self))
        self.failures: list[BaseException] = []
        self.diverted: list[tuple[str, Any]] = []  # failures taken by error edges
        self._undiverted = observe_runner(self)  # observing methods if a plugin observes the run
        if graph.error_targets:
            self._invoke = self._invoke_diverting  # type: ignore[method-assign]
        self.policies = graph.policies
        self.executors = graph.run_executors  # placed ones resolved when it compiled
        #: called before a retry's backoff (durable runs record the attempt count)
        self.on_retry: Callable[[str, int], Awaitable[None]] | None = None
        self.native_asyncio = _on_asyncio()
        # asked per run, so an observer registered after build() still sees supersteps
        self.observe_supersteps = graph.plugin_manager.observers()[1]
        self.current: Inbox = {}  # the deliveries of the running superstep
        self.last_ran: Inbox = {}  # the deliveries of the superstep that just finished
        self.global_limiter = (
            anyio.CapacityLimiter(options.max_concurrency) if options.max_concurrency else None
        )
        self.concurrency = graph.default_concurrency
        if options.executor_concurrency:
            self.concurrency = {
                eid: n
                for eid, ex in graph.executors.items()
                if (n := options.executor_concurrency.get(eid, ex.max_concurrency or 1)) > 1
            }
        self.visit_limits = graph.default_visit_limits
        if options.executor_max_visits or options.max_visits:
            self.visit_limits = {}
            for eid, ex in graph.executors.items():
                limit = options.executor_max_visits.get(eid) or ex.max_visits or options.max_visits
                if limit:
                    self.visit_limits[eid] = limit
        for eid in (*options.executor_concurrency, *options.executor_max_visits):
            if eid not in graph.executors:
                raise RunOptionError(f"run option names unknown executor {eid!r}")
        for gid, runner in graph.stateful:
            if gid not in state.router_state:
                state.router_state[gid] = runner.initial_state()

    # -- the loop --------------------------------------------------------------------

    async def run(self, inbox: Inbox) -> RunStatus:
        """Run supersteps until nothing is pending; return the final status."""
        state, emit, stop = self.state, self.state.emit, self.stop
        limit = self.options.max_supersteps
        while inbox:
            if state.superstep >= limit:
                raise SuperstepLimitError(
                    f"run exceeded max_supersteps={limit}; still pending for "
                    f"executor(s) {', '.join(inbox)} (raise max_supersteps or fix the cycle)",
                    executor_id=next(iter(inbox)),
                    superstep=state.superstep + 1,
                )
            state.superstep += 1
            step = state.superstep
            self.current = inbox
            if self.detail and emit is not None:
                emit(SuperstepStarted(step, tuple(inbox)))
            if self.visit_limits:
                self._count_visits(inbox)
            if len(inbox) == 1:
                ((eid, messages),) = inbox.items()
                if len(messages) == 1 or eid not in self.concurrency:
                    if len(messages) == 1:
                        await self._invoke(eid, messages[0])
                    else:
                        for index, message in enumerate(messages):
                            await self._invoke(eid, message, index)
                    if self.live or step % _YIELD_EVERY == 0:
                        await anyio.lowlevel.checkpoint()
                else:
                    await self._parallel(inbox)
            else:
                await self._parallel(inbox)
            ran = inbox
            inbox = self._route() if state.outbox else {}
            if self.diverted:
                for target, failure in self.diverted:
                    inbox.setdefault(target, []).append(failure)
                self.diverted = []
            if self.graph.flushers:
                self._flush(inbox)
            if self.detail and emit is not None:
                emit(SuperstepFinished(step, tuple(ran)))
            if self.observe_supersteps:
                self.graph.plugin_manager.notify_superstep_finished(state.run_id, step, list(ran))
            if self.on_superstep is not None:
                self.last_ran = ran
                await self.on_superstep(self, inbox)
            if stop is not None and inbox and stop.is_set():
                self.remaining = inbox
                return RunStatus.RUNNING
        if state.pending_requests:
            return RunStatus.IDLE_WITH_PENDING_REQUESTS
        return RunStatus.IDLE

    def _count_visits(self, inbox: Inbox) -> None:
        visits, limits = self.state.visits, self.visit_limits
        for eid in inbox:
            count = visits[eid] = visits.get(eid, 0) + 1
            limit = limits.get(eid)
            if limit is not None and count > limit:
                raise VisitLimitError(
                    f"executor {eid!r} exceeded its visit limit max_visits={limit} "
                    f"in superstep {self.state.superstep}",
                    executor_id=eid,
                    superstep=self.state.superstep,
                )

    async def _invoke_diverting(self, eid: str, message: Any, index: int = 0) -> None:
        """:meth:`_invoke` for graphs with error edges (installed per run only for them)."""
        try:
            await self._undiverted(eid, message, index)
        except WorkflowRunError as exc:
            targets = self.graph.error_targets.get(eid)
            if not targets or exc.executor_id != eid:
                raise
            # an error edge takes the failure: the run goes on
            cause = exc.__cause__ if isinstance(exc, ExecutorFailedError) else None
            failure = InvocationFailure(
                eid, self.state.superstep, type(cause or exc).__name__, str(cause or exc), message
            )
            self.diverted.extend((target, failure) for target in targets)

    async def _invoke(self, eid: str, message: Any, index: int = 0) -> None:
        executor = self.executors[eid]
        found = executor.find_handler(message)
        step = self.state.superstep
        if found is None:
            accepts = ", ".join(type_name(t) for t in executor.input_types) or "nothing"
            raise UnhandledMessageError(
                f"executor {eid!r} has no handler for a message of type "
                f"{type_name(type(message))} in superstep {step} (it accepts: {accepts})",
                executor_id=eid,
                superstep=step,
            )
        emit = self.state.emit if self.detail else None
        if emit is not None:
            emit(ExecutorInvoked(eid, step))
        if self.policies and (policy := self.policies.get(eid)) is not None:
            await invoke_with_policy(
                self.state,
                eid,
                found.call,
                message,
                index,
                policy,
                emit=emit,
                native_asyncio=self.native_asyncio,
                on_retry=self.on_retry,
            )
        else:
            if self.concurrency and eid in self.concurrency:
                # concurrent messages of one executor each get a context of their own
                ctx = WorkflowContext(
                    self.state, eid, self.state.executor_state.setdefault(eid, {})
                )
            else:
                ctx = self.state.contexts.get(eid) or self.state.context(eid)
            ctx._index = index
            try:
                await found.call(message, ctx)
            except asyncio.CancelledError as exc:
                if not cancelled_from_inside(self.native_asyncio):
                    raise
                if emit is not None:
                    emit(ExecutorFailed(eid, step, exc))
                raise wrap_failure(eid, step, exc) from exc
            except WorkflowRunError as exc:
                if emit is not None and exc.executor_id == eid:
                    emit(ExecutorFailed(eid, step, exc))
                raise
            except Exception as exc:
                if emit is not None:
                    emit(ExecutorFailed(eid, step, exc))
                raise wrap_failure(eid, step, exc) from exc
        if emit is not None:
            emit(ExecutorCompleted(eid, step))

    async def _parallel(self, inbox: Inbox) -> None:
        jobs: list[Job] = []
        for eid, messages in inbox.items():
            if eid in self.concurrency and len(messages) > 1:
                limiter = anyio.CapacityLimiter(self.concurrency[eid])
                jobs.extend((eid, [message], limiter, i) for i, message in enumerate(messages))
            else:
                jobs.append((eid, messages, None, 0))
        if self.native_asyncio:
            await self._parallel_asyncio(jobs)
            return
        self.failures = []
        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(self._guarded, tg, job)
        if self.failures:
            raise _with_siblings(self.failures)

    async def _parallel_asyncio(self, jobs: list[Job]) -> None:
        """The same structured fan-out on plain asyncio tasks (a fifth of anyio's cost per
        task). Siblings are cancelled and awaited on the first failure and when the run is
        cancelled; every sibling that failed on its own is reported with the first."""
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._job(job)) for job in jobs]
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except BaseException:
            await _cancel_and_wait(tasks)
            raise
        if pending:
            await _cancel_and_wait(pending)
        failures: list[BaseException] = []
        for job, task in zip(jobs, tasks):
            if not task.cancelled():
                if (error := task.exception()) is not None:
                    failures.append(error)
            elif task in done:  # cancelled before we cancelled any: by its handler (3.10)
                failures.append(wrap_failure(job[0], self.state.superstep, CancelledError()))
        if failures:
            raise _with_siblings(failures)

    async def _job(self, job: Job) -> None:
        eid, messages, limiter, first = job
        for offset, message in enumerate(messages):
            if limiter is not None:
                async with limiter:
                    await self._limited(eid, message, first + offset)
            else:
                await self._limited(eid, message, first + offset)

    async def _guarded(self, tg: anyio.abc.TaskGroup, job: Job) -> None:
        try:
            await self._job(job)
        except Exception as exc:
            # the first failure cancels the siblings; later ones are kept as its siblings
            self.failures.append(exc)
            tg.cancel_scope.cancel()

    async def _limited(self, eid: str, message: Any, index: int) -> None:
        if self.global_limiter is None:
            await self._invoke(eid, message, index)
        else:
            async with self.global_limiter:
                await self._invoke(eid, message, index)

    # -- routing ---------------------------------------------------------------------

    def _route(self) -> Inbox:
        state = self.state
        outbox, state.outbox = state.outbox, []
        routes = self.graph.routes_from
        router_state = state.router_state
        inbox: Inbox = {}
        for source, message, target in outbox:
            runners = routes.get(source)
            if not runners:
                raise UnhandledMessageError(
                    f"executor {source!r} sent a message of type {type_name(type(message))} "
                    f"in superstep {state.superstep} but has no outgoing edges",
                    executor_id=source,
                    superstep=state.superstep,
                )
            delivered = False
            for gid, runner in runners:
                try:
                    deliveries = runner.route(source, message, target, router_state.get(gid))
                except WorkflowRunError:
                    raise
                except Exception as exc:
                    raise RoutingError(
                        f"edge group {gid!r} failed to route a {type_name(type(message))} "
                        f"from {source!r} in superstep {state.superstep}: "
                        f"{type(exc).__name__}: {exc}",
                        executor_id=source,
                        superstep=state.superstep,
                    ) from exc
                for tgt, data in deliveries:
                    delivered = True
                    box = inbox.get(tgt)
                    if box is None:
                        inbox[tgt] = [data]
                    else:
                        box.append(data)
            if target is not None and not delivered:
                self._check_target(source, target, runners)
        return inbox

    def _check_target(self, source: str, target: str, runners: Any) -> None:
        if not any(target in runner.group.targets for _, runner in runners):
            raise UnhandledMessageError(
                f"executor {source!r} sent a message to {target!r}, which none of its edge "
                f"groups reaches",
                executor_id=source,
                superstep=self.state.superstep,
            )

    def _flush(self, inbox: Inbox) -> None:
        reach = self.graph.reach
        active = set(inbox) | {p.executor_id for p in self.state.pending_requests.values()}

        def can_still_send(executor_id: str) -> bool:
            return any(executor_id in reach[a] for a in active)

        for gid, runner in self.graph.flushers:
            for tgt, data in runner.flush(self.state.router_state.get(gid), can_still_send):
                inbox.setdefault(tgt, []).append(data)


def _with_siblings(failures: list[BaseException]) -> BaseException:
    """A parallel superstep's first failure, with the others (``sibling_errors``; notes)."""
    first, others = failures[0], failures[1:]
    setattr(first, "sibling_errors", list(others))
    add_note = getattr(first, "add_note", None)
    if add_note is not None:
        for other in others:
            add_note(f"another branch of this superstep failed too: {other}")
    return first


async def _cancel_and_wait(tasks: Any) -> None:
    for task in tasks:
        task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.wait(tasks)


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
