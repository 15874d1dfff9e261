"""The superstep engine.

A run is a loop of supersteps, and each reads as prepare / run / apply:

- prepare: the pending deliveries (target executor -> messages), the limits and visits,
  the observer told the superstep begins;
- run: every target's handlers — concurrently (:func:`fan_out`) when there is more than
  one job, inline when there is one — each invocation writing what it does (messages
  sent, outputs, custom events, requests, shared-state writes, failures an error edge
  takes) to a write record (:class:`~plait._state.Effects`);
- apply: the barrier (:func:`~plait._state.apply_writes`) sorts the records' writes
  once, by the writer's rank in the graph, the index of its message and the order it
  wrote in, and applies them; the messages are routed through the edge groups into the
  next superstep's deliveries.

The barrier is real: a superstep ends when its slowest executor ends; wrap a slow branch
as a nested workflow to let it run at its own pace.

Hot path: dispatch by message type is cached per executor; a superstep with one delivery
spawns no task and writes to the run's own record, whose messages need no sorting, and its
invocation runs inline in the loop; a message along its sender's one edge group, when that
group passes every message on to one target (:attr:`EdgeRunner.passthrough`), is
delivered without asking the router; no event is built unless someone consumes it;
messages are never copied.

A run may ask for another schedule by name (``RunOptions.schedule``): a plugin registers
it (``plait_register_schedules``, a :class:`Schedule`), and the superstep loop hands it
the supersteps it would run better without the barrier, taking the run back once it is in
lockstep again (``plait-pipeline``'s ``pipelined``). A run asking for none pays one test
of a local per superstep.

Every invocation goes one way (:meth:`RunnerView.run_invocation`), and its failure means one
thing (:func:`failure`). Executors without a policy pay nothing for one: the handler
writes straight to its record. Under a retry policy or a timeout
(:func:`invoke_with_policy`), an attempt runs against a record of its own and a deep copy
of the executor's state; only a successful attempt's record is committed to its
invocation's.

What a run's :class:`~plait.spi.RunObserver` is told (the interface, in
:mod:`plait._observer`), and when, is this module's too: the runner tells it at the
loop's points (a superstep begins, an invocation starts and ends, the supersteps end), in
the task that does the work, and links each delivery to the invocations that sent it —
an observed run's invocations write to records of their own, which routing reads —
without copying or changing the message. Nobody listening costs one test per superstep
and per invocation.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import sys
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import anyio.lowlevel

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

from ._context import InvocationFailure, WorkflowContext
from ._errors import (
    ExecutorFailedError,
    ExecutorTimeoutError,
    SuperstepLimitError,
    UnhandledMessageError,
    VisitLimitError,
    WorkflowRunError,
)
from ._events import (
    RunStatus,
)
from ._graph import resolve_limits
from ._observer import RUN_REQUEST, AskFirst, Invocation, RunObserver
from ._options import Policy, RunOptions
from ._routing import flush_buffers, route_outbox
from ._state import Effects, Inbox, PendingRequest, RunState, Sent, apply_writes, delivery_id
from ._types import type_name

if TYPE_CHECKING:
    from ._graph import CompiledGraph

__all__ = [
    "SCHEDULES",
    "SUPERSTEP",
    "PendingRequest",
    "RunCommit",
    "RunOptions",
    "RunState",
    "RunWatch",
    "Runner",
    "RunnerView",
    "Schedule",
    "ScheduleRun",
    "fan_out",
    "make_runner",
    "on_asyncio",
    "schedule_named",
    "note_attempt",
    "note_retry",
]


# -- observation: what the runner tells a run's observer, and when -------------------------


class _Current:
    """The invocation running in this task (a context variable holds it)."""

    __slots__ = ("attempt", "handle", "observer", "state", "token")

    def __init__(self, state: RunState, observer: RunObserver, handle: Any) -> None:
        self.state = state
        self.observer = observer
        self.handle = handle
        self.attempt = 1
        self.token: contextvars.Token[_Current | None] | None = None


_CURRENT: contextvars.ContextVar[_Current | None] = contextvars.ContextVar(
    "plait_invocation", default=None
)


def note_attempt(state: RunState, attempt: int) -> None:
    """A resumed invocation starts at ``attempt`` (its earlier attempts failed before)."""
    current = _CURRENT.get()
    if current is not None and current.state is state:
        current.attempt = attempt


def note_retry(state: RunState, attempt: int, delay: float, error: BaseException) -> None:
    """Attempt ``attempt`` of the running invocation failed and is retried after ``delay``."""
    current = _CURRENT.get()
    if current is not None and current.state is state:
        current.observer.invocation_retrying(current.handle, attempt, delay, error)
        current.attempt = attempt + 1


def _handles(earlier: list[Any] | None, sender: Any) -> tuple[Any, ...]:
    found = [*(earlier or ()), sender]
    return tuple(h for h in found if h is not None)


# -- the runner ----------------------------------------------------------------------------

#: The kernel's own schedule: a barrier per superstep (``RunOptions.schedule``'s default).
SUPERSTEP = "superstep"
#: The registry kind of the schedules plugins register (``plait_register_schedules``).
SCHEDULES = "schedule"


#: (executor id, its messages, a limiter for concurrent messages, index of the first, the
#: record of each message — ``None``: they all write to the run's own record)
Job = tuple[str, list[Any], "anyio.CapacityLimiter | None", int, "list[Effects] | None"]
_T = TypeVar("_T")
# yield to the event loop (a cancellation point too) at least this often on inline
# supersteps, so other runs, stream consumers and cancel scopes get their turn even when
# every handler completes without awaiting anything; a turn of the loop (a poll of the
# selector) costs several inline supersteps of trivial handlers, and 128 of those take
# about a quarter of a millisecond
_YIELD_EVERY = 128


class RunnerView(Protocol):
    """What a schedule (:class:`Schedule`) or a checkpointer (:class:`RunCommit`) may read
    of a running run and call on it: the one seam between the runner and the plugins that
    run stretches of a run or make it durable (:data:`make_runner` makes a runner). They
    read these and change none of them.
    """

    #: the compiled workflow it runs, the run's options (``options.stop`` is asked at each
    #: superstep boundary) and everything the run changes
    graph: CompiledGraph
    options: RunOptions
    state: RunState
    #: a consumer watches the run as it goes: yield to it at every superstep
    live: bool
    #: the run's observer (told through :meth:`begin_superstep`), if any
    observer: RunObserver | None
    #: executor id -> how many of its messages may run at once (only those above 1)
    concurrency: dict[str, int]
    #: the executors that take their messages on arrival (see :func:`delivery_id`)
    arrival: frozenset[str]
    #: executor id -> how many supersteps it may run in (only bounded ones)
    visit_limits: dict[str, int]
    #: writes a schedule's consistent cut (:meth:`RunCommit.after_cut`); ``None``: the run
    #: is not checkpointed as it goes
    on_cut: Callable[[ScheduleRun, str], Awaitable[bool]] | None
    #: the deliveries of the running superstep (what a failed one re-runs), of the one
    #: that just committed, and those left when the superstep loop stopped
    current: Inbox
    last_ran: Inbox
    remaining: Inbox
    #: the stretch of the run in a :class:`Schedule`, when it is (or was) in one
    scheduled: ScheduleRun | None
    #: the stretch a stop or a failure ended mid-way when no cut was written then: its
    #: cut is the run's checkpoint (``exit`` durability)
    stopped_cut: ScheduleRun | None

    async def run(self, inbox: Inbox) -> RunStatus:
        """Run from ``inbox`` to the end (or a stop); the final status."""
        ...

    async def run_invocation(self, eid: str, message: Any, index: int, effects: Effects) -> None:
        """Invoke ``eid`` on ``message``, its ``index``-th delivery of its superstep, its
        effects written to ``effects``: the one invocation path (policies, observers,
        error edges and the run's concurrency limit included)."""
        ...

    def begin_superstep(self, step: int, executor_ids: tuple[str, ...]) -> None:
        """Tell the run's observer, if any, that superstep ``step`` starts."""
        ...


class RunCommit(Protocol):
    """The runner's commit seam: what a durable run (``plait-durable``'s checkpointer) is
    told at each barrier, so that it can make the run's progress durable. The runner calls
    it; it never replaces a method of the runner.
    """

    async def after_superstep(self, runner: RunnerView, inbox: Inbox) -> None:
        """A superstep committed: its effects are applied and ``inbox`` holds the next
        superstep's deliveries (``runner.last_ran`` the deliveries that just ran)."""

    async def after_cut(self, cut: ScheduleRun, status: str) -> bool:
        """A schedule running the run without the barrier reached a consistent cut (see
        :class:`ScheduleRun`); ``True`` when a checkpoint of it was taken."""

    async def before_retry(self, key: str, attempt: int) -> None:
        """An invocation (``key``) is about to be retried after ``attempt`` failed."""


class Schedule(Protocol):
    """A schedule that runs supersteps without the barrier, with the superstep schedule's
    results: what a plugin registers by name (``plait_register_schedules``) and
    ``RunOptions.schedule`` names (``"pipelined"`` comes with ``plait-pipeline``). The
    kernel's own is ``"superstep"``, a barrier per superstep.

    The superstep loop runs the run; at a superstep with more than one executor's
    messages (or an executor taking several on arrival) it asks :meth:`pays`, and if so
    hands the run over (:meth:`start`, then :meth:`ScheduleRun.run`) until the schedule
    hands it back in lockstep. A run resumed from a cut this schedule took starts in it.
    """

    def pays(self, runner: RunnerView, inbox: Inbox) -> bool:
        """Would the superstep of ``inbox`` run better in this schedule (could work after
        it start before it ends), with the run's options (its own, which the schedule's
        plugin declares: ``runner.options.of(...)``)? ``False`` leaves it to the
        superstep loop, at its own, lower cost."""
        ...

    def start(self, runner: RunnerView, barrier: bool) -> ScheduleRun:
        """A stretch of ``runner``'s run in this schedule, as the run's options say; with
        ``barrier``, in the barrier's order (a resumed cut of this schedule when the run
        asks for another). It uses the run only through ``runner``: it invokes executors
        through :meth:`RunnerView.run_invocation`, asks ``runner.options.stop``, reports
        its cuts to ``runner.on_cut`` (a durable run's :meth:`RunCommit.after_cut`), and
        resumes ``runner.state.cut`` when it is one of its own."""
        ...

    def decode_cut(self, section: Any, decode: Callable[[Any], Any]) -> Any:
        """A checkpoint's section written at one of this schedule's cuts
        (:meth:`ScheduleRun.cut`), its messages and values decoded by ``decode``: what
        ``RunState.cut`` holds for a resumed run."""
        ...


class ScheduleRun(Protocol):
    """One stretch of a run in a :class:`Schedule` (made by :meth:`Schedule.start`), and the
    consistent cut a checkpointer takes of it (:meth:`RunCommit.after_cut`).
    """

    #: the run's state
    state: RunState
    #: the supersteps whose barrier work is done (a cut's superstep number)
    done_through: int
    #: the run is in this schedule now (what a :class:`~plait.spi.RunWatch` reads)
    active: bool

    async def run(self, inbox: Inbox) -> RunStatus | Inbox:
        """Run from ``inbox`` until nothing can run — the final status, or the error the
        superstep schedule raises — or until the run is in lockstep again: then the
        superstep loop's next inbox."""
        ...

    def watched(self) -> tuple[int, dict[str, int]]:
        """The lowest superstep with work, and each running executor with how many
        messages it handles now (safe to read from another thread)."""
        ...

    def cut(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, list[Any]], list[str], dict[str, Any]]:
        """What a checkpoint of this moment holds beyond a superstep's: ``(pending,
        changed, section)`` — every delivered but uncommitted message by executor, the
        executors whose state changed since the last cut, and the schedule's own state as
        JSON-ready data (messages and values through ``encode``), which
        :meth:`Schedule.decode_cut` takes back."""
        ...

    def uncommitted(self) -> tuple[dict[str, int], dict[str, Any]]:
        """What a cut must not count: the visits of what runs now, and the state as of its
        last commit of each running executor that changed since the last cut."""
        ...


def schedule_named(graph: CompiledGraph, name: str, what: str | None = None) -> Schedule:
    """The schedule a plugin registered as ``name``, for ``what`` (default: the run option
    ``schedule``).

    :raises UnknownNameError: listing the installed schedules, and the distribution a
        first-party one comes with (``pipelined``: ``plait-pipeline``).
    """
    if what is None:
        what = f"run option schedule; {SUPERSTEP!r} is the kernel's own"
    found: Schedule = graph.plugin_manager.registry(SCHEDULES).get(name, what=what)
    return found


class Runner:
    """Runs one run of a compiled graph to the end (or the first failure); plugins make
    one with :data:`make_runner` and see it as a :class:`RunnerView`.

    :param live: yield to a consumer that watches the run at every superstep.
    :param commit: the commit seam of a durable run (:class:`RunCommit`), called at each
        superstep's barrier, at each consistent cut and before each retry.
    :raises UnknownNameError: ``options.schedule`` names a schedule no plugin registered.
    """

    def __init__(
        self,
        graph: CompiledGraph,
        options: RunOptions,
        state: RunState,
        *,
        live: bool,
        commit: RunCommit | None = None,
    ) -> None:
        self.graph = graph
        self.options = options
        self.state = state
        self.live = live  # yield to the consumer every superstep
        self.on_superstep: Callable[[Runner, Inbox], Awaitable[None]] | None = None
        self.stop = options.stop  # asked at each superstep boundary (see RunOptions.stop)
        self.remaining: Inbox = {}  # the deliveries left when a stop was asked for
        #: the run's own write record, and the contexts writing to it (one per executor)
        self.main = state.effects
        self.contexts = state.contexts
        #: the run's observer; ``None`` when nobody observes the run (it pays one test per
        #: superstep and per invocation)
        self.observer: RunObserver | None = state.observer
        #: the superstep whose span is open for the observer (0: none)
        self.observed = 0
        #: an observed run's senders of each delivery of this superstep, and of the next
        self.links: dict[str, list[tuple[Any, ...]]] = {}
        self.next_links: dict[str, list[tuple[Any, ...]]] = {}
        #: senders whose messages a stateful router (a fan-in) buffers, by its targets
        self.pending: dict[str, list[Any]] = {}
        self.buffering: dict[str, list[str]] = {}
        if self.observer is not None:
            for _gid, edge_runner in graph.stateful:
                for source in edge_runner.group.sources:
                    self.buffering.setdefault(source, []).extend(edge_runner.group.targets)
        self.executors = graph.run_executors  # placed ones resolved when it compiled
        #: called before a retry's backoff (durable runs record the attempt count)
        self.on_retry: Callable[[str, int], Awaitable[None]] | None = None
        self.native_asyncio = on_asyncio()
        #: the schedule the run asked for, when it is a plugin's (``None``: the kernel's
        #: superstep loop); it takes the supersteps with several executors it says it pays
        #: for (with its options, none: a lead of 0 leaves them to the superstep loop)
        self.schedule: Schedule | None = None
        if options.schedule != SUPERSTEP:
            self.schedule = schedule_named(graph, options.schedule)
        #: the stretch of the run in the schedule, when it is (or was) in one
        self.scheduled: ScheduleRun | None = None
        #: writes the cuts of a stretch in a schedule (set by a checkpointed run)
        self.on_cut: Callable[[ScheduleRun, str], Awaitable[bool]] | None = None
        #: the stretch a stop or a failure ended mid-way, when no cut was written then
        #: (``exit`` durability): its cut, with each message's time, is the run's checkpoint
        self.stopped_cut: ScheduleRun | None = None
        if commit is not None:  # the seams a durable run commits at
            self.on_superstep = commit.after_superstep
            self.on_retry = commit.before_retry
            self.on_cut = commit.after_cut
        self.current: Inbox = {}  # the deliveries of the running superstep
        self.last_ran: Inbox = {}  # the deliveries of the superstep that just finished
        self.global_limiter = (
            anyio.CapacityLimiter(options.max_concurrency) if options.max_concurrency else None
        )
        limits = graph.limits
        if options.executor_concurrency or options.executor_max_visits or options.max_visits:
            limits = resolve_limits(graph, options)
        self.concurrency = limits.concurrency
        #: executors that take their messages on arrival (``max_concurrency`` above 1, or
        #: ``order="arrival"``): their messages are named by delivery ids, not by index
        self.arrival = frozenset(limits.concurrency) | graph.arrival
        self.next_ids: dict[str, list[str]] = {}
        #: sender -> the position of each of its edge groups among them (what a delivery
        #: id names a group by), for a run with executors taking messages on arrival
        self.group_positions: dict[str, dict[str, int]] = {}
        if self.arrival:
            for source, groups in graph.routes_from.items():
                self.group_positions[source] = {gid: j for j, (gid, _) in enumerate(groups)}
        self.visit_limits = limits.visits
        self.policies = limits.policies
        self.rank = graph.rank
        state.reducers = options.shared_reducers
        state.strict = options.strict
        for gid, runner in graph.stateful:
            if gid not in state.router_state:
                state.router_state[gid] = runner.initial_state()

    # -- the loop --------------------------------------------------------------------

    async def run(self, inbox: Inbox) -> RunStatus:
        """Run supersteps until nothing is pending; return the final status. A display
        that looks at the run at its own pace (the ``watch`` option) gets its view first."""
        if self.options.watch is not None:
            self.options.watch(RunWatch(self, self.graph.spec.name))
        loop = self._supersteps if self.state.cut is None else self._from_cut
        if self.arrival:
            self.state.ids = self.first_ids(inbox, self.state.ids)
        if self.observer is None:
            return await loop(inbox)
        try:
            status = await loop(inbox)
        except BaseException as exc:
            self._end_supersteps(exc)
            raise
        self._end_supersteps(None)
        return status

    def first_ids(self, inbox: Inbox, known: dict[str, list[str]] | None) -> dict[str, list[str]]:
        """The delivery ids of ``inbox``'s messages to executors that take messages on
        arrival: those a checkpoint ``known``, then ``@n`` for the ``n``-th message."""
        ids: dict[str, list[str]] = {}
        for eid, messages in inbox.items():
            if eid in self.arrival:
                have = list((known or {}).get(eid, ()))[: len(messages)]
                have.extend(delivery_id(f"@{n}") for n in range(len(have), len(messages)))
                ids[eid] = have
        return ids

    async def _supersteps(self, inbox: Inbox) -> RunStatus:
        """The superstep loop: prepare a superstep (limits, visits, the observer told it
        begins), run its invocations (each writing to a record), apply the records at the
        barrier (:meth:`_apply`), then hand the barrier to the commit seam."""
        state, stop = self.state, self.stop
        limit = self.options.max_supersteps
        routes, router_state = self.graph.routes_from, state.router_state
        schedule = self.schedule  # (None unless a plugin's schedule takes supersteps)
        pays = None if schedule is None else schedule.pays  # (looked up once per loop)
        arrival = self.arrival
        named = bool(arrival)
        main, observer, flushers = self.main, self.observer, self.graph.flushers
        executors, policies, contexts = self.executors, self.policies, self.contexts
        passthrough, live, native = self.graph.passthrough, self.live, self.native_asyncio
        # no delivery to name, no invocation to observe (a bool: the cheapest test)
        plain = not named and observer is None
        lean = plain and not self.graph.error_targets  # (and no failure to divert)
        while inbox:
            # -- prepare
            if (
                pays is not None
                and (len(inbox) > 1 or (named and self._arriving(inbox)))
                and pays(self, inbox)
            ):
                # several executors run in this superstep: the schedule takes over until
                # the run is in lockstep again (one executor, nothing ahead)
                assert schedule is not None
                found = await self._scheduled(schedule, False, inbox)
                if isinstance(found, RunStatus):
                    return found
                inbox = found
            if state.superstep >= limit:
                raise SuperstepLimitError(
                    f"run exceeded max_supersteps={limit}; still pending for "
                    f"executor(s) {', '.join(inbox)} (raise the limit: --max-supersteps N "
                    "on the command line, max_supersteps=N in Python; or fix the cycle)",
                    executor_id=next(iter(inbox)),
                    superstep=state.superstep + 1,
                )
            state.superstep += 1
            step = state.superstep
            self.current = inbox
            if self.visit_limits:
                self._count_visits(inbox)
            # (unless a schedule began it; an observer may have the run wait first)
            if observer is not None and self.observed != step and self._begin_or_wait(step, inbox):
                return RunStatus.IDLE_WITH_PENDING_REQUESTS
            # -- run: every invocation writes to a record; then apply: the barrier
            ran = inbox
            # (not in an observed run: its invocations write to records of their own)
            if len(inbox) == 1 and (plain or (observer is None and inbox.keys() - arrival)):
                # the hot path: one job, inline, writing to the run's own record
                ((eid, messages),) = inbox.items()
                if len(messages) == 1:
                    # one message: :meth:`_invoke`'s path without a policy, inline
                    message = messages[0]
                    handler = executors[eid].find_handler(message)
                    if handler is None or eid in policies:
                        await self._invoke(eid, message, 0, main)
                    else:
                        ctx = contexts.get(eid) or state.context(eid)
                        ctx._index = 0
                        try:
                            await handler.call(message, ctx)
                        except BaseException as exc:
                            self._failed(eid, message, 0, main, exc)
                else:
                    for index, message in enumerate(messages):
                        await self._invoke(eid, message, index, main)
                if live or step % _YIELD_EVERY == 0:
                    await (asyncio.sleep(0) if native else anyio.lowlevel.checkpoint())
                if lean and main.writes is None:
                    # one job's messages and nothing else: in the canonical order already
                    sent = main.outbox
                    to = passthrough.get(sent[0][0]) if len(sent) == 1 else None
                    if to is not None and sent[0][2] in (None, to):
                        # one message along the one edge group of its sender, which
                        # passes every message on to one target: known when it was built
                        inbox = {to: [sent[0][1]]}
                        sent.clear()
                    elif sent:
                        main.outbox = []
                        inbox = route_outbox(sent, routes, router_state, step)
                    else:
                        inbox = {}
                    if flushers:
                        self._flush(inbox)
                else:
                    inbox = self._apply([main])
            else:
                inbox = self._apply(await self._parallel(inbox))
            if self.on_superstep is not None:
                self.last_ran = ran
                await self.on_superstep(self, inbox)
            if stop is not None and inbox and stop.is_set():
                self.remaining = inbox
                return RunStatus.RUNNING
        if state.pending_requests:
            return RunStatus.IDLE_WITH_PENDING_REQUESTS
        return RunStatus.IDLE

    async def _scheduled(
        self, schedule: Schedule, barrier: bool, inbox: Inbox
    ) -> RunStatus | Inbox:
        """Run in ``schedule`` from ``inbox`` (in the barrier's order with ``barrier``): the
        same results, no barrier. The final status, or the superstep loop's next inbox
        once the run is in lockstep again (one executor at the lowest superstep, nothing
        ahead of it)."""
        scheduled = self.scheduled = schedule.start(self, barrier)
        # ended mid-way by a failure or a stop: under ``exit`` durability (no cut written
        # as it goes), the run's one checkpoint is the stretch's cut
        midway = self.on_cut is None
        try:
            found = await scheduled.run(inbox)
        except WorkflowRunError:
            if midway:
                self.stopped_cut = scheduled
            raise
        if midway and found is RunStatus.RUNNING:
            self.stopped_cut = scheduled
        return found

    async def _from_cut(self, inbox: Inbox) -> RunStatus:
        """A resumed cut holds messages of several logical times: the schedule that took
        it runs them — in the barrier's order when the run asks for another schedule —
        then the superstep loop goes on from the lockstep."""
        name = self.state.cut[0]  # type: ignore[index]
        schedule = schedule_named(
            self.graph, name, f"run {self.state.run_id!r}, resumed from a cut it took"
        )
        found = await self._scheduled(schedule, name != self.options.schedule, inbox)
        if isinstance(found, RunStatus):
            return found
        return await self._supersteps(found)

    def _arriving(self, inbox: Inbox) -> bool:
        """Does an executor taking messages on arrival have several in ``inbox`` (so a
        schedule without the barrier may start what one sends before its others end)?"""
        arrival = self.arrival
        return bool(arrival) and any(
            len(messages) > 1 for eid, messages in inbox.items() if eid in arrival
        )

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

    # -- the observer, told at the loop's points ----------------------------------------

    def begin_superstep(self, step: int, executor_ids: tuple[str, ...]) -> None:
        """Tell the run's observer, if any, that superstep ``step`` starts (the last one, if
        any, ended well): the superstep loop as it prepares one, a :class:`Schedule` once
        every delivery of ``step`` is known."""
        observer = self.observer
        if observer is None:
            return
        if self.observed:
            observer.superstep_finished(self.observed, None)
        self.observed = step
        self.links, self.next_links = self.next_links, {}
        observer.superstep_started(step, executor_ids)

    def _begin_or_wait(self, step: int, inbox: Inbox) -> bool:
        """:meth:`begin_superstep`; or, when the observer asks for outside input before it
        (:class:`AskFirst`), the superstep does not run (the run stays at the superstep
        before, ``inbox`` pending for a checkpoint to keep) and the run waits with the
        observer's request, its own: then ``True``."""
        try:
            self.begin_superstep(step, tuple(inbox))
            return False
        except AskFirst as asked:
            waiting = asked
        state, observer = self.state, self.observer
        assert observer is not None
        observer.superstep_finished(state.superstep, waiting)
        self.observed = 0
        state.superstep -= 1
        if self.visit_limits:
            for eid in inbox:
                state.visits[eid] -= 1
        request_id = waiting.request_id
        state.pending_requests[request_id] = PendingRequest(
            request_id, RUN_REQUEST, waiting.request, waiting.response_type, state.superstep
        )
        observer.request(RUN_REQUEST, request_id, state.superstep)
        self.remaining = inbox
        return True

    def _end_supersteps(self, error: BaseException | None) -> None:
        """Tell the observer the run's supersteps are over (``error``: what ended them)."""
        if self.observed and self.observer is not None:
            # an error before the next superstep began (a visit limit) belongs to the
            # run, not to the superstep that ended well
            failed = error is not None and self.state.superstep == self.observed
            self.observer.superstep_finished(self.observed, error if failed else None)
            self.observed = 0

    async def _observed(self, eid: str, message: Any, index: int, run: Effects) -> None:
        """:meth:`_invoke`, the observer told as it starts (with the invocations that sent
        its message; what it writes to ``run`` is linked to it) and as it ends."""
        state, observer = self.state, self.observer
        assert observer is not None
        links = self.links.get(eid)
        senders = links[index] if links is not None and index < len(links) else ()
        invocation = Invocation(eid, state.superstep, index, message, senders)
        current = _Current(state, observer, observer.invocation_started(invocation))
        run.sender = current.handle
        current.token = _CURRENT.set(current)
        try:
            await self._invoke(eid, message, index, run)
        except BaseException as exc:
            if current.token is not None:  # (else told already, by _invoke)
                self._finished(exc)
            raise
        if current.token is not None:  # (else a failure an error edge took, told as failed)
            self._finished(None)

    @staticmethod
    def _finished(error: BaseException | None) -> None:
        """Tell the observer the running invocation ended (``error``: how it failed)."""
        current = _CURRENT.get()
        assert current is not None and current.token is not None
        _CURRENT.reset(current.token)
        current.token = None
        if error is None:
            current.observer.invocation_finished(current.handle, current.attempt, "ok", None)
            return
        cancelled = isinstance(error, anyio.get_cancelled_exc_class())
        status = "cancelled" if cancelled else "failed"
        current.observer.invocation_finished(current.handle, current.attempt, status, error)

    # -- invocations ---------------------------------------------------------------------

    async def _invoke(self, eid: str, message: Any, index: int, run: Effects) -> None:
        """Invoke ``eid`` on ``message``, its ``index``-th delivery of this superstep, with
        its effects going to the record ``run``; an error edge of ``eid``, if any, takes
        its failure (the run goes on), after the run's observer, if any, is told of it."""
        try:
            executor = self.executors[eid]
            found = executor.find_handler(message)
            if found is None:
                step = run.superstep
                accepts = ", ".join(type_name(t) for t in executor.input_types) or "nothing"
                raise UnhandledMessageError(
                    f"executor {eid!r} has no handler for a message of type "
                    f"{type_name(type(message))} in superstep {step} (it accepts: {accepts})",
                    executor_id=eid,
                    superstep=step,
                )
            policy = self.policies.get(eid) if self.policies else None
            if policy is None:
                # the hot path: one attempt, straight to the record; failures read as
                # under a policy
                if run is self.main:
                    ctx = self.contexts.get(eid) or self.state.context(eid)
                else:
                    ctx = run.context(eid)
                ctx._index = index
                try:
                    await found.call(message, ctx)
                except BaseException as exc:
                    error = failure(eid, run.superstep, exc, self.native_asyncio)
                    raise error from error.__cause__
            else:
                await invoke_with_policy(
                    run,
                    eid,
                    found.call,
                    message,
                    index,
                    policy,
                    native_asyncio=self.native_asyncio,
                    on_retry=self.on_retry,
                )
        except BaseException as exc:
            if self.observer is not None:
                self._finished(exc)
            if not self.graph.error_targets or not self._diverted(eid, message, index, run, exc):
                raise

    def _failed(self, eid: str, message: Any, index: int, run: Effects, exc: BaseException) -> None:
        """An invocation without a policy raised ``exc``: raise its run error
        (:func:`failure`), unless an error edge of ``eid`` takes it."""
        error = failure(eid, run.superstep, exc, self.native_asyncio)
        if not self.graph.error_targets or not self._diverted(eid, message, index, run, error):
            raise error from error.__cause__

    def _diverted(
        self, eid: str, message: Any, index: int, run: Effects, exc: BaseException
    ) -> bool:
        """Does an error edge of ``eid`` take this failure of it? Then it is written to
        ``run`` (delivered at the barrier) and the run goes on."""
        targets = self.graph.error_targets.get(eid)
        if not targets or not isinstance(exc, WorkflowRunError) or exc.executor_id != eid:
            return False
        cause = exc.__cause__ if isinstance(exc, ExecutorFailedError) else None
        taken = InvocationFailure(
            eid, run.superstep, type(cause or exc).__name__, str(cause or exc), message
        )
        rank = self.rank[eid]
        entries = [(rank, index, target, taken, run.delivery) for target in targets]
        if run.diverted is None:
            run.diverted = entries
        else:
            run.diverted.extend(entries)
        return True

    async def _parallel(self, inbox: Inbox) -> list[Effects]:
        """Run a superstep's jobs — one per executor, its messages in order; one per message
        of an executor taking messages on arrival — and return the records they wrote to.

        An executor's messages write to the run's own record; a message of an executor
        taking messages on arrival, and any message of an observed run (whose sends are
        linked to the invocation that sent them), to a record of its own, ordered by its
        index. A lone job runs inline, its records immediate; several run concurrently
        (:func:`fan_out`), and :func:`~plait._state.apply_writes` puts what they did in
        the canonical order, never the order they finished in.
        """
        state, main = self.state, self.main
        observed = self.observer is not None
        jobs: list[Job] = []
        records: list[Effects] = []
        shared = False  # some job writes to the run's own record
        for eid, messages in inbox.items():
            if eid in self.arrival:
                # each message with a record of its own, named by its delivery id
                limiter = anyio.CapacityLimiter(self.concurrency.get(eid, 1))
                ids = state.ids[eid]  # type: ignore[index]
                for i, message in enumerate(messages):
                    record = Effects(state, state, ids[i], index=i)
                    records.append(record)
                    jobs.append((eid, [message], limiter, i, [record]))
            elif observed:
                own = [Effects(state, state, index=i) for i in range(len(messages))]
                records.extend(own)
                jobs.append((eid, messages, None, 0, own))
            else:
                shared = True
                jobs.append((eid, messages, None, 0, None))
        if shared:
            records.append(main)
        inline = len(jobs) == 1 and jobs[0][2] is None
        for record in records:
            record.immediate = inline
        try:
            if inline:
                await self._job(jobs[0])
                if self.live or state.superstep % _YIELD_EVERY == 0:
                    await anyio.lowlevel.checkpoint()
            else:
                await fan_out(self._job, jobs, self.native_asyncio)
        finally:
            main.immediate = True  # (what the inline path writes to it with)
        return records

    async def _job(self, job: Job) -> None:
        eid, messages, limiter, first, records = job
        if records is None:  # its messages in order, to the run's own record
            main = self.main
            for offset, message in enumerate(messages):
                await self.run_invocation(eid, message, first + offset, main)
            return
        for offset, message in enumerate(messages):
            if limiter is not None:
                async with limiter:
                    await self.run_invocation(eid, message, first + offset, records[offset])
            else:
                await self.run_invocation(eid, message, first + offset, records[offset])

    async def run_invocation(self, eid: str, message: Any, index: int, effects: Effects) -> None:
        """Invoke ``eid`` on ``message``, its ``index``-th delivery of its superstep, under
        the run's concurrency limit, its effects going to the record ``effects``: the one
        invocation path, for the superstep loop and a :class:`Schedule` alike (policies,
        observers and error edges included)."""
        if self.observer is None and self.global_limiter is None:
            await self._invoke(eid, message, index, effects)
            return
        invoke = self._invoke if self.observer is None else self._observed
        if self.global_limiter is None:
            await invoke(eid, message, index, effects)
        else:
            async with self.global_limiter:
                await invoke(eid, message, index, effects)

    # -- the barrier -----------------------------------------------------------------

    def _apply(self, records: list[Effects]) -> Inbox:
        """The barrier: apply the superstep's records (:func:`~plait._state.apply_writes`:
        outputs, events, requests and shared state, in the canonical order), route the
        messages they sent, deliver the failures error edges took, and flush the fan-ins
        whose silent sources can no longer send."""
        state = self.state
        sends, owners = apply_writes(state, records, self.rank)
        diverted: list[tuple[int, int, str, Any, str | None]] = []
        for record in records:
            if record.diverted is not None:
                diverted.extend(record.diverted)
                record.diverted = None
        if self.arrival or self.observer is not None:
            inbox = self._route_tracked(sends, owners, records[0])
        elif sends:
            routes = self.graph.routes_from
            inbox = route_outbox(sends, routes, state.router_state, state.superstep)
        else:
            inbox = {}
        if diverted:
            diverted.sort(key=itemgetter(0, 1))  # the canonical order, as messages
            for _, index, target, taken, delivery in diverted:
                inbox.setdefault(target, []).append(taken)
                if target in self.arrival:
                    origin = delivery if delivery is not None else index
                    seed = f"!{taken.executor_id}/{origin}/{target}"
                    self.next_ids.setdefault(target, []).append(delivery_id(seed))
        if self.graph.flushers:
            self._flush(inbox)
        return inbox

    def _route_tracked(
        self, sends: list[Sent], owners: list[Effects] | None, only: Effects
    ) -> Inbox:
        """Route the superstep's messages (``owners``: the record of each, ``None`` when
        all are ``only``'s), naming each delivery to an executor that takes messages on
        arrival (the next superstep's ``state.ids``, see :func:`delivery_id`) and, in an
        observed run, keeping which invocation sent what each delivery carries."""
        state, arrival = self.state, self.arrival
        routes, router_state, step = self.graph.routes_from, state.router_state, state.superstep
        name: Callable[[str, str, list[tuple[str, Any]]], None] | None = None
        if arrival:
            ids = state.ids = self.next_ids = {}
            positions, counts = self.group_positions, dict[Any, int]()
            # the message being routed: its position in ``sends``, its origin (the delivery
            # id of the invocation that sent it when its sender takes messages on arrival)
            # and ``k``: that invocation's sends before it (else its sender's, this step)
            at: list[Any] = [-1, "", 0]

            def name(source: str, gid: str, deliveries: list[tuple[str, Any]]) -> None:
                j = positions[source][gid]
                if j == 0:  # a message starts (it is routed through all its sender's groups)
                    position = at[0] = at[0] + 1
                    key: Any = source  # what ``k`` counts by
                    origin = ""
                    if source in arrival:
                        key = only if owners is None else owners[position]
                        origin = key.delivery or ""
                    k = counts.get(key, 0)
                    counts[key], at[1], at[2] = k + 1, origin, k
                for d, (target, _) in enumerate(deliveries):
                    if target in arrival:
                        seed = f"{source}/{at[1]}/{at[2]}/{j}/{d}"
                        ids.setdefault(target, []).append(delivery_id(seed))

        if self.observer is None:
            return route_outbox(sends, routes, router_state, step, name)
        # message by message, each delivery linked to the invocations that sent it
        inbox: Inbox = {}
        links: dict[str, list[tuple[Any, ...]]] = {}
        pending = self.pending
        for position, entry in enumerate(sends):
            sender = (only if owners is None else owners[position]).sender
            part = route_outbox((entry,), routes, router_state, step, name)
            for target, messages in part.items():
                inbox.setdefault(target, []).extend(messages)
                handles = _handles(pending.pop(target, None), sender)
                links.setdefault(target, []).extend([handles] * len(messages))
            for target in self.buffering.get(entry[0], ()):
                if target not in part:
                    pending.setdefault(target, []).append(sender)
        self.next_links = links
        return inbox

    def _flush(self, inbox: Inbox) -> None:
        """Add what the fan-ins whose silent sources can no longer send deliver now (in an
        observed run, linked to the senders their buffers held)."""
        pending = self.state.pending_requests.values()
        active = set(inbox) | {request.executor_id for request in pending}
        name = None
        if self.arrival:
            arrival, ids = self.arrival, self.next_ids

            def name(f: int, d: int, target: str) -> None:
                if target in arrival:
                    ids.setdefault(target, []).append(delivery_id(f"^{f}/{d}"))

        flushers, can_still_send = self.graph.flushers, self.graph.reaching(active)
        if self.observer is None:
            flush_buffers(flushers, self.state.router_state, can_still_send, inbox, name)
            return
        before = {target: len(messages) for target, messages in inbox.items()}
        flush_buffers(flushers, self.state.router_state, can_still_send, inbox, name)
        for target, messages in inbox.items():
            had = before.get(target, 0)
            if len(messages) > had:
                links = self.next_links.setdefault(target, [])
                links.extend([()] * (had - len(links)))
                handles = _handles(self.pending.pop(target, None), None)
                links.extend([handles] * (len(messages) - had))


class RunWatch:
    """What a run is doing now. Every property reads the run's live state.

    ``workflow.run(msg, watch=callback)`` calls ``callback(RunWatch)`` once, as the run
    starts; a progress display keeps the view and reads it a few times a second (from a
    task or a thread of its own). Nothing is built or called per superstep for it, so
    watching a run costs the run nothing. Read from another thread, a value may be a
    superstep behind; it is never torn.
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


#: A runner for one run of a compiled graph, what a durability plugin runs a run with:
#: ``make_runner(graph, options, state, *, live, commit=None)`` (:class:`Runner`'s
#: arguments), seen as a :class:`RunnerView`; :meth:`RunnerView.run` runs it.
make_runner: Callable[..., RunnerView] = Runner


#: asyncio's own structured task group (Python 3.11+); on 3.10 an anyio task group is used
_AsyncioTaskGroup = getattr(asyncio, "TaskGroup", None)


def on_asyncio() -> bool:
    """Is the running event loop asyncio's (not trio's, and not none)? What the runner,
    and a placement plugin, choose asyncio's own faster paths by."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def fan_out(
    call: Callable[[_T], Coroutine[Any, Any, None]], items: Iterable[_T], native_asyncio: bool
) -> None:
    """Run ``call(item)`` for each of ``items`` concurrently and wait for them all: the
    one fan-out of the runner. Every call starts, in the order of ``items``; the first
    failure cancels those still waiting, a cancellation of the caller cancels them all
    and waits for them, and the first failure is raised with the others as its siblings
    (:func:`with_siblings`); a ``BaseException`` that is not an ``Exception`` is raised as
    itself.

    On asyncio, a call that never waits needs no task of its own: one task runs the
    calls one after another, each to its end (:func:`_eagerly`, in a copy of the caller's
    context variables, as a task would), until one of them waits for something. That task
    stays with it, as its own, and every call not started yet gets a task, which asyncio
    starts before the waiting call can resume. A superstep whose handlers never wait (most
    of them) pays for one task, not one per job. (Trio runs the tasks it wakes together
    in a random order, so the call that waited might resume before the others start:
    there every call has a task from the start.)

    On asyncio (``native_asyncio``), an :class:`asyncio.TaskGroup` holds the tasks
    (Python 3.11+), at a fifth of anyio's cost per task; else an anyio task group, with the
    same structure.
    """
    failures: list[BaseException] = []
    waiting = iter(items)  # the calls not started yet
    #: run a coroutine in a task of the task group (whose first failure cancels the others)
    spawn: Callable[[Coroutine[Any, Any, None]], object]

    async def stop() -> None:
        raise _Failed  # (started after every call has started, as a failing task would)

    async def in_turn() -> None:
        # the calls, one after another, until one waits; a failure is kept, the others
        # still start (as the tasks of a task group would)
        failed = handed_on = False

        def hand_on() -> None:
            nonlocal handed_on
            handed_on = True
            for item in waiting:
                spawn(call(item))
            if failed:
                spawn(stop())  # the call that waits is cancelled with the others

        for item in waiting:
            try:
                await _eagerly(call(item), contextvars.copy_context(), hand_on)
            except Exception as exc:
                failures.append(exc)
                if handed_on:
                    raise _Failed from None
                failed = True
            if handed_on:
                return
        if failed:
            raise _Failed

    try:
        if native_asyncio and _AsyncioTaskGroup is not None:
            async with _AsyncioTaskGroup() as native:
                spawn = native.create_task
                spawn(in_turn())
        else:
            async with anyio.create_task_group() as tg:
                if native_asyncio:  # (Python 3.10)

                    def spawn(coro: Coroutine[Any, Any, None]) -> None:
                        tg.start_soon(_awaited, coro)

                    spawn(in_turn())
                else:
                    for item in waiting:
                        tg.start_soon(call, item)
    except BaseExceptionGroup as group:
        # a BaseException that is not an Exception (not caught above) is raised as itself
        failures.extend(exc for exc in group.exceptions if not isinstance(exc, _Failed))
    if failures:  # raised here, not in the handler above: the errors keep their causes
        raise with_siblings(failures)


async def _awaited(coro: Coroutine[Any, Any, None]) -> None:
    """Await ``coro`` (what an anyio task group, which starts functions, runs it as)."""
    await coro


class _Failed(Exception):
    """A call of :func:`fan_out` failed (the failure is in its list): raised to the task
    group, which cancels the calls still waiting."""


@types.coroutine
def _eagerly(
    coro: Coroutine[Any, Any, None], context: contextvars.Context, started: Callable[[], None]
) -> Generator[Any, Any, None]:
    """Run the coroutine ``coro`` to its end in the running task and in ``context``,
    calling ``started()`` the first time it waits for something (before the task waits
    for it): what ``yield from`` does, with the moment it first suspends made known."""
    send, throw = coro.send, coro.throw
    try:
        waited = context.run(send, None)
    except StopIteration:
        return
    started()
    while True:
        try:
            value = yield waited
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation, or what the awaited raised
            try:
                waited = context.run(throw, exc)
            except StopIteration:
                return
        else:
            try:
                waited = context.run(send, value)
            except StopIteration:
                return


# -- invocations: what a failure means, and attempts under a policy ------------------


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
    run: Effects,
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
    that takes its failures): every attempt runs against a record
    (:class:`~plait._state.Effects`) of its own and a deep copy of the executor's state,
    and only the attempt that succeeds is committed to ``run``. Failures are read by
    :func:`failure`, as every invocation's are.

    :raises WorkflowRunError: the last attempt's failure, naming ``eid`` and the superstep.
    """
    root = run._root
    step = run.superstep  # (a schedule's effects may carry their own logical time)
    retry, timeout = policy
    key = f"{step}:{eid}:{run.delivery if run.delivery is not None else index}"
    attempt = root.attempts.get(key, 0) + 1  # a resumed run keeps its count
    if attempt > 1:
        root.attempt_executors[key] = eid
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
            root.attempt_executors.pop(key, None)
            return
        cause = error.__cause__ if isinstance(error, ExecutorFailedError) else error
        if retry is None or attempt > retry.max_attempts or not retry.retries(cause or error):
            raise error
        delay = retry.delay_before(attempt)
        note_retry(root, attempt, delay, cause or error)
        root.attempts[key] = attempt
        root.attempt_executors[key] = eid
        if on_retry is not None:
            await on_retry(key, attempt)  # a crash during the backoff keeps the count
        await anyio.sleep(delay)
        attempt += 1
