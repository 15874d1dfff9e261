"""The superstep engine.

A run is a loop of supersteps. Each superstep takes the pending deliveries (target
executor -> messages), runs every target's handlers — concurrently in one anyio task
group when there is more than one delivery, inline when there is exactly one — then routes
what the handlers sent through the edge groups into the next superstep's deliveries.

The barrier is real: a superstep ends when its slowest executor ends; wrap a slow branch
as a nested workflow to let it run at its own pace.

Hot path: dispatch by message type is cached per executor; a superstep with one delivery
spawns no task; no event is built unless someone consumes it; messages are never copied.

A run may ask for another schedule by name (``RunOptions.schedule``): a plugin registers
it (``plait_register_schedules``, a :class:`Schedule`), and the superstep loop hands it
the supersteps it would run better without the barrier, taking the run back once it is in
lockstep again (``plait-pipeline``'s ``pipelined``). A run asking for none pays one test
of a local per superstep.

Every invocation goes one way (:meth:`Runner._invoke`), and its failure means one thing
(:func:`failure`). Executors without a policy pay nothing for one: the handler writes
straight to the run. Under a retry policy or a timeout (:func:`invoke_with_policy`), an
attempt runs against :class:`~plait._state.Effects` — a stand-in for the run's state that
buffers what the handler sends, yields, emits, asks and shares — and a deep copy of the
executor's state; only a successful attempt's effects are committed.

What a run's :class:`~plait.spi.RunObserver` is told (the interface, in
:mod:`plait._observer`), and when, is this module's too (:class:`Observation`): the runner
tells it in the task that does the work, and tracks a message's senders through routing
without copying or changing the message. Nobody listening costs one test per superstep.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import sys
from collections.abc import Awaitable, Callable, Iterable
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol

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
from ._observer import Invocation, RunObserver
from ._options import Policy, RunOptions
from ._routing import EdgeRunner, flush_buffers, route_outbox, route_outbox_named
from ._state import Effects, Inbox, PendingRequest, RunState, delivery_id
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
    "Runner",
    "Schedule",
    "ScheduleRun",
    "schedule_named",
    "Observation",
    "note_attempt",
    "note_retry",
]


# -- observation: what the runner tells a run's observer, and when -------------------------


class _Current:
    """The invocation running in this task (a context variable holds it)."""

    __slots__ = ("attempt", "handle", "observer", "state")

    def __init__(self, state: RunState, observer: RunObserver, handle: Any) -> None:
        self.state = state
        self.observer = observer
        self.handle = handle
        self.attempt = 1


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


class _TaggedOutbox(list[tuple[str, Any, "str | None"]]):
    """An observed run's outbox: beside each message, the handle of the invocation that
    sent it (the messages themselves stay untouched)."""

    __slots__ = ("senders", "state")

    def __init__(self, state: RunState) -> None:
        super().__init__()
        self.state = state
        self.senders: list[Any] = []

    def _sender(self) -> Any:
        current = _CURRENT.get()
        return current.handle if current is not None and current.state is self.state else None

    def append(self, entry: tuple[str, Any, str | None]) -> None:
        super().append(entry)
        self.senders.append(self._sender())

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        """Sort the messages (stably) and their senders with them."""
        order = sorted(range(len(self)), key=lambda i: key(self[i]), reverse=reverse)
        entries, senders = list(self), self.senders
        self[:] = [entries[i] for i in order]
        self.senders = [senders[i] for i in order]

    def extend(self, entries: Any) -> None:
        if isinstance(entries, _TaggedOutbox):  # a buffered invocation's, committed
            super().extend(entries)
            self.senders.extend(entries.senders)
            return
        entries = list(entries)
        super().extend(entries)
        self.senders.extend([self._sender()] * len(entries))


def _handles(earlier: list[Any] | None, sender: Any) -> tuple[Any, ...]:
    found = [*(earlier or ()), sender]
    return tuple(h for h in found if h is not None)


class Observation:
    """The runner's seam to the observer of one run (made only for an observed run: an
    unobserved one has none, and pays nothing). The runner calls it as the run goes —
    :meth:`begin` and :meth:`finish` a superstep, :meth:`invoke` each invocation,
    :meth:`route` and :meth:`flush` the messages — and it tells the observer, keeping
    which invocation sent what each delivery carries.

    :param stateful: the graph's stateful edge groups (fan-ins), ``(group id, runner)``.
    :param invoke: the runner's plain invocation, which :meth:`invoke` wraps.
    """

    def __init__(
        self,
        stateful: Iterable[tuple[str, EdgeRunner]],
        state: RunState,
        observer: RunObserver,
        invoke: Callable[[str, Any, int, Any], Awaitable[None]],
    ) -> None:
        self.state = state
        self.observer = observer
        self.plain_invoke = invoke
        self.step = 0  # the superstep whose span is open (0: none)
        self.links: dict[str, list[tuple[Any, ...]]] = {}  # senders per delivery, this step
        self.next_links: dict[str, list[tuple[Any, ...]]] = {}  # ... of the next step
        # senders whose messages a stateful router (a fan-in) buffers, by its targets
        self.pending: dict[str, list[Any]] = {}
        self.buffering: dict[str, list[str]] = {}
        for _gid, edge_runner in stateful:
            for source in edge_runner.group.sources:
                self.buffering.setdefault(source, []).extend(edge_runner.group.targets)
        state.outbox = _TaggedOutbox(state)
        state.outbox_factory = self._outbox

    def _outbox(self) -> list[tuple[str, Any, str | None]]:
        return _TaggedOutbox(self.state)

    def begin(self, step: int, executor_ids: tuple[str, ...]) -> None:
        """Superstep ``step`` starts (the last one, if any, ended well)."""
        if self.step:
            self.observer.superstep_finished(self.step, None)
        self.step = step
        self.links, self.next_links = self.next_links, {}
        self.observer.superstep_started(step, executor_ids)

    def finish(self, error: BaseException | None) -> None:
        """The run's supersteps are over (``error``: what ended them, if anything)."""
        if self.step:
            # an error before the next superstep began (a visit limit) belongs to the
            # run, not to the superstep that ended well
            failed = error is not None and self.state.superstep == self.step
            self.observer.superstep_finished(self.step, error if failed else None)
            self.step = 0

    async def invoke(self, eid: str, message: Any, index: int, run: Any) -> None:
        """The runner's invocation, with its seams: started, retried, finished."""
        state = self.state
        step = state.superstep
        links = self.links.get(eid)
        senders = links[index] if links is not None and index < len(links) else ()
        observer = self.observer
        handle = observer.invocation_started(Invocation(eid, step, index, message, senders))
        current = _Current(state, observer, handle)
        token = _CURRENT.set(current)
        try:
            await self.plain_invoke(eid, message, index, run)
        except BaseException as exc:
            _CURRENT.reset(token)
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            status = "cancelled" if cancelled else "failed"
            observer.invocation_finished(handle, current.attempt, status, exc)
            raise
        _CURRENT.reset(token)
        observer.invocation_finished(handle, current.attempt, "ok", None)

    def route(self, plain_route: Callable[[], Inbox]) -> Inbox:
        """Route message by message (the plain routing, one entry at a time), keeping
        which invocation sent what each delivery carries."""
        state = self.state
        outbox = state.outbox
        senders: list[Any] = getattr(outbox, "senders", [])
        inbox: Inbox = {}
        links: dict[str, list[tuple[Any, ...]]] = {}
        pending = self.pending
        try:
            for position, entry in enumerate(outbox):
                sender = senders[position] if position < len(senders) else None
                state.outbox = [entry]
                part = plain_route()
                for target, messages in part.items():
                    inbox.setdefault(target, []).extend(messages)
                    handles = _handles(pending.pop(target, None), sender)
                    links.setdefault(target, []).extend([handles] * len(messages))
                for target in self.buffering.get(entry[0], ()):
                    if target not in part:
                        pending.setdefault(target, []).append(sender)
        finally:
            state.outbox = _TaggedOutbox(state)
        self.next_links = links
        return inbox

    def flush(self, plain_flush: Callable[[Inbox], None], inbox: Inbox) -> None:
        """The plain flush; what it delivers links to the senders the routers buffered."""
        before = {target: len(messages) for target, messages in inbox.items()}
        plain_flush(inbox)
        for target, messages in inbox.items():
            had = before.get(target, 0)
            if len(messages) > had:
                links = self.next_links.setdefault(target, [])
                links.extend([()] * (had - len(links)))
                handles = _handles(self.pending.pop(target, None), None)
                links.extend([handles] * (len(messages) - had))


# -- the runner ----------------------------------------------------------------------------

#: The kernel's own schedule: a barrier per superstep (``RunOptions.schedule``'s default).
SUPERSTEP = "superstep"
#: The registry kind of the schedules plugins register (``plait_register_schedules``).
SCHEDULES = "schedule"


#: (executor id, its messages, a limiter for concurrent messages, index of the first,
#: where its effects go: the run, or effects of its own for a concurrent message)
Job = tuple[str, list[Any], "anyio.CapacityLimiter | None", int, "RunState | Effects"]
# yield to the event loop (a cancellation point too) at least this often on inline
# supersteps, so other runs, stream consumers and cancel scopes get their turn even when
# every handler completes without awaiting anything
_YIELD_EVERY = 32


class RunCommit(Protocol):
    """The runner's commit seam: what a durable run (``plait-durable``'s checkpointer) is
    told at each barrier, so that it can make the run's progress durable. The runner calls
    it; it never replaces a method of the runner.
    """

    async def after_superstep(self, runner: Runner, inbox: Inbox) -> None:
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

    def pays(self, graph: CompiledGraph, inbox: Inbox) -> bool:
        """Would the superstep of ``inbox`` run better in this schedule (could work after
        it start before it ends)? ``False`` leaves it to the superstep loop, at its own,
        lower cost."""
        ...

    def start(self, runner: Runner, max_lead: int | None) -> ScheduleRun:
        """A stretch of ``runner``'s run in this schedule, with work at most ``max_lead``
        supersteps ahead of the lowest one with work (``0``: the barrier's order, which
        a resumed cut runs in when the run asks for another schedule; ``None``:
        unbounded). It invokes executors through :meth:`Runner.run_invocation`, asks
        ``runner.stop``, reports its cuts to ``runner.on_cut`` (a durable run's
        :meth:`RunCommit.after_cut`), and resumes ``runner.state.cut`` when it is one of
        its own."""
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
    """Runs one run of a compiled graph to the end (or the first failure).

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
        self.failures: list[BaseException] = []
        #: failures taken by error edges: (sender's rank, message index, target, failure)
        self.diverted: list[tuple[int, int, str, Any, str | None]] = []
        #: the seam to the run's observer; ``None`` when nobody observes the run
        self.observation: Observation | None = None
        # the invocation, as this run needs it: plain, observed, diverting failures
        self._undiverted = self._invoke
        if state.observer is not None:
            self.observation = Observation(graph.stateful, state, state.observer, self._invoke)
            self._undiverted = self.observation.invoke
            self._invoke = self._undiverted  # type: ignore[method-assign]
        if graph.error_targets:
            self._invoke = self._invoke_diverting  # type: ignore[method-assign]
        self.executors = graph.run_executors  # placed ones resolved when it compiled
        #: called before a retry's backoff (durable runs record the attempt count)
        self.on_retry: Callable[[str, int], Awaitable[None]] | None = None
        self.native_asyncio = _on_asyncio()
        #: the schedule the run asked for, when it is a plugin's (``None``: the kernel's
        #: superstep loop); it takes the supersteps with several executors unless its lead
        #: is 0 (the barrier's order, which the superstep loop keeps at its own cost)
        self.schedule: Schedule | None = None
        if options.schedule != SUPERSTEP:
            schedule = schedule_named(graph, options.schedule)
            if options.max_lead != 0:
                self.schedule = schedule
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
        #: per sender taking messages on arrival, this superstep: (delivery id of each of
        #: its invocations, how many messages it sent), in the order of their index
        self.segments: dict[str, list[tuple[str, int]]] = {}
        #: (sender, origin, k) of each entry of the superstep's outbox (see delivery_id)
        self.origins: list[tuple[str, str, int]] = []
        self.routed = 0  # entries of ``origins`` routed so far
        self.next_ids: dict[str, list[str]] = {}
        self.visit_limits = limits.visits
        self.policies = limits.policies
        self.rank = rank = graph.rank

        def by_rank(entry: tuple[Any, ...]) -> int:
            return rank[entry[0]]  # what a superstep's effects are sorted by: the sender's

        self.by_rank = by_rank
        state.reducers = options.shared_reducers
        state.strict = options.strict
        for gid, runner in graph.stateful:
            if gid not in state.router_state:
                state.router_state[gid] = runner.initial_state()

    # -- the loop --------------------------------------------------------------------

    async def run(self, inbox: Inbox) -> RunStatus:
        """Run supersteps until nothing is pending; return the final status."""
        observation = self.observation
        loop = self._supersteps if self.state.cut is None else self._from_cut
        if self.arrival:
            self.state.ids = self.first_ids(inbox, self.state.ids)
        if observation is None:
            return await loop(inbox, None)
        try:
            status = await loop(inbox, observation)
        except BaseException as exc:
            observation.finish(exc)
            raise
        observation.finish(None)
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

    async def _supersteps(self, inbox: Inbox, observation: Observation | None) -> RunStatus:
        state, stop = self.state, self.stop
        limit = self.options.max_supersteps
        routes, router_state = self.graph.routes_from, state.router_state
        schedule = self.schedule  # (None unless a plugin's schedule takes supersteps)
        pays = None if schedule is None else schedule.pays  # (looked up once per loop)
        arrival = self.arrival
        named = bool(arrival)  # (a bool: the cheapest test on the hot path)
        while inbox:
            if (
                pays is not None
                and (len(inbox) > 1 or (named and self._arriving(inbox)))
                and pays(self.graph, inbox)
            ):
                # several executors run in this superstep: the schedule takes over until
                # the run is in lockstep again (one executor, nothing ahead)
                assert schedule is not None
                found = await self._scheduled(schedule, self.options.max_lead, inbox)
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
            if observation is not None and observation.step != step:  # (a schedule began it)
                observation.begin(step, tuple(inbox))
            if len(inbox) == 1:
                ((eid, messages),) = inbox.items()
                if not named or eid not in arrival:
                    if len(messages) == 1:
                        await self._invoke(eid, messages[0], 0, state)
                    else:
                        for index, message in enumerate(messages):
                            await self._invoke(eid, message, index, state)
                    if self.live or step % _YIELD_EVERY == 0:
                        await anyio.lowlevel.checkpoint()
                else:
                    await self._parallel(inbox)
            else:
                await self._parallel(inbox)
            if state.staged:
                state.commit_shared()
            ran = inbox
            if named:  # deliveries to executors taking messages on arrival are named
                inbox = self._route_superstep(observation)
            elif not state.outbox:
                inbox = {}
            elif observation is None:
                outbox, state.outbox = state.outbox, []
                inbox = route_outbox(outbox, routes, router_state, step)
            else:
                inbox = observation.route(self._route)
            if self.diverted:
                self.diverted.sort(key=itemgetter(0, 1))  # the canonical order, as messages
                for _, index, target, diverted, delivery in self.diverted:
                    inbox.setdefault(target, []).append(diverted)
                    if target in self.arrival:
                        origin = delivery if delivery is not None else index
                        seed = f"!{diverted.executor_id}/{origin}/{target}"
                        self.next_ids.setdefault(target, []).append(delivery_id(seed))
                self.diverted = []
            if self.graph.flushers:
                if observation is None:
                    self._flush(inbox)
                else:
                    observation.flush(self._flush, inbox)
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
        self, schedule: Schedule, max_lead: int | None, inbox: Inbox
    ) -> RunStatus | Inbox:
        """Run in ``schedule`` from ``inbox``: the same results, no barrier. The final
        status, or the superstep loop's next inbox once the run is in lockstep again (one
        executor at the lowest superstep, nothing ahead of it)."""
        scheduled = self.scheduled = schedule.start(self, max_lead)
        try:
            return await scheduled.run(inbox)
        except WorkflowRunError:
            if self.on_cut is None:  # (``exit`` durability) its one checkpoint is this cut
                self.stopped_cut = scheduled
            raise

    async def _from_cut(self, inbox: Inbox, observation: Observation | None) -> RunStatus:
        """A resumed cut holds messages of several logical times: the schedule that took
        it runs them — with ``max_lead=0``, the barrier's order, when the run asks for
        another schedule — then the superstep loop goes on from the lockstep."""
        name = self.state.cut[0]  # type: ignore[index]
        schedule = schedule_named(
            self.graph, name, f"run {self.state.run_id!r}, resumed from a cut it took"
        )
        lead = self.options.max_lead if name == self.options.schedule else 0
        found = await self._scheduled(schedule, lead, inbox)
        if isinstance(found, RunStatus):
            return found
        return await self._supersteps(found, observation)

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

    async def _invoke_diverting(
        self, eid: str, message: Any, index: int, run: RunState | Effects
    ) -> None:
        """:meth:`_invoke` for graphs with error edges (installed per run only for them)."""
        try:
            await self._undiverted(eid, message, index, run)
        except WorkflowRunError as exc:
            targets = self.graph.error_targets.get(eid)
            if not targets or exc.executor_id != eid:
                raise
            # an error edge takes the failure: the run goes on
            cause = exc.__cause__ if isinstance(exc, ExecutorFailedError) else None
            failure = InvocationFailure(
                eid, run.superstep, type(cause or exc).__name__, str(cause or exc), message
            )
            rank = self.rank[eid]
            # effects of a schedule without the barrier keep their own (committed with
            # their group)
            sink = getattr(run, "diverted", self.diverted)
            sink.extend((rank, index, target, failure, run.delivery) for target in targets)

    async def _invoke(self, eid: str, message: Any, index: int, run: RunState | Effects) -> None:
        """Invoke ``eid`` on ``message``, its ``index``-th delivery of this superstep, with
        its effects going to ``run`` (the run itself, or the effects of its job in a
        superstep with several deliveries)."""
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
            # the hot path: one attempt, straight to ``run``; failures read as under a policy
            if type(run) is RunState:
                ctx = run.contexts.get(eid) or run.context(eid)
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

    async def _parallel(self, inbox: Inbox) -> None:
        """Run a superstep with several deliveries concurrently, then put what the jobs did
        in the canonical order — the sender's rank in the graph, then the index of its
        message, then the order of its calls — never the order jobs finished in.

        Jobs write to the run as they go; the run defers outputs, events and requests
        until the barrier, and the outbox and the staged shared-state writes are sorted
        there, stably, by the sender's rank (one job handles an executor's messages in
        order). Only the messages of an executor handled concurrently need effects of
        their own, committed in the order of their index.
        """
        jobs: list[Job] = []
        state = self.state
        for eid, messages in inbox.items():
            if eid in self.arrival:
                # each message with effects of its own, named by its delivery id
                limiter = anyio.CapacityLimiter(self.concurrency.get(eid, 1))
                ids = state.ids[eid]  # type: ignore[index]
                for i, message in enumerate(messages):
                    jobs.append((eid, [message], limiter, i, Effects(state, state, ids[i])))
            else:
                jobs.append((eid, messages, None, 0, state))
        state.deferred = []
        try:
            if self.native_asyncio and _AsyncioTaskGroup is not None:
                await self._run_jobs_asyncio(jobs)
            else:
                self.failures = []
                try:
                    async with anyio.create_task_group() as tg:
                        for job in jobs:
                            tg.start_soon(self._guarded, tg, job)
                except BaseExceptionGroup as group:
                    # a BaseException that is not an Exception (caught in _guarded) leaves
                    # the group wrapped in one: raised as itself, as on asyncio
                    self.failures.extend(group.exceptions)
                if self.failures:
                    raise with_siblings(self.failures)
            segments = self.segments
            for job in jobs:
                if job[2] is not None:  # an executor's concurrent messages, by index
                    part: Effects = job[4]  # type: ignore[assignment]
                    segments.setdefault(job[0], []).append((part.delivery, len(part.outbox)))  # type: ignore[arg-type]
                    part.commit()
        finally:
            deferred, state.deferred = state.deferred, None
        by_rank = self.by_rank
        if len(state.outbox) > 1:
            state.outbox.sort(key=by_rank)
        if len(state.staged) > 1:
            state.staged.sort(key=by_rank)
        if deferred:
            deferred.sort(key=by_rank)
            state.replay(deferred)

    async def _run_jobs_asyncio(self, jobs: list[Job]) -> None:
        """The jobs in an :class:`asyncio.TaskGroup` (Python 3.11+): the same structure as
        an anyio task group — no job outlives the block, the first failure cancels its
        siblings, a cancellation of the run cancels them all and waits for them — at a
        fifth of anyio's cost per task on asyncio, which a wide superstep pays per job."""
        failures: list[BaseException] = []
        try:
            async with _AsyncioTaskGroup() as tg:  # type: ignore[misc]
                for job in jobs:
                    tg.create_task(self._job(job))
        except BaseExceptionGroup as group:
            failures.extend(group.exceptions)
        if failures:  # raised here, not in the handler above: the errors keep their causes
            raise with_siblings(failures)

    async def _job(self, job: Job) -> None:
        eid, messages, limiter, first, effects = job
        for offset, message in enumerate(messages):
            if limiter is not None:
                async with limiter:
                    await self.run_invocation(eid, message, first + offset, effects)
            else:
                await self.run_invocation(eid, message, first + offset, effects)

    async def _guarded(self, tg: anyio.abc.TaskGroup, job: Job) -> None:
        try:
            await self._job(job)
        except Exception as exc:
            # the first failure cancels the siblings; later ones are kept as its siblings
            self.failures.append(exc)
            tg.cancel_scope.cancel()

    async def run_invocation(
        self, eid: str, message: Any, index: int, effects: RunState | Effects
    ) -> None:
        """Invoke ``eid`` on ``message``, its ``index``-th delivery of its superstep, under
        the run's concurrency limit, its effects going to ``effects``: the one invocation
        path, for the superstep loop and a :class:`Schedule` alike (policies, observers
        and error edges included)."""
        if self.global_limiter is None:
            await self._invoke(eid, message, index, effects)
        else:
            async with self.global_limiter:
                await self._invoke(eid, message, index, effects)

    # -- routing ---------------------------------------------------------------------

    def _route(self) -> Inbox:
        state = self.state
        outbox, state.outbox = state.outbox, []
        if self.arrival:
            return self._route_named(outbox)
        return route_outbox(outbox, self.graph.routes_from, state.router_state, state.superstep)

    def _route_superstep(self, observation: Observation | None) -> Inbox:
        """Route the superstep's outbox, naming each delivery to an executor that takes
        messages on arrival; the ids (with those of the failures and flushes to come) are
        the next superstep's (``state.ids``)."""
        state = self.state
        state.ids = self.next_ids = {}
        self.origins, self.routed = self._origins(state.outbox), 0
        self.segments = {}
        if not state.outbox:
            return {}
        if observation is None:
            outbox, state.outbox = state.outbox, []
            return self._route_named(outbox)
        return observation.route(self._route)

    def _origins(self, outbox: list[tuple[str, Any, str | None]]) -> list[tuple[str, str, int]]:
        """``(sender, origin, k)`` of each message of a superstep's outbox (in the canonical
        order): ``origin`` is the delivery id of the invocation that sent it when its
        sender takes messages on arrival, and ``k`` counts that invocation's sends (else
        ``origin`` is empty and ``k`` counts the sender's sends of the superstep)."""
        origins: list[tuple[str, str, int]] = []
        counts: dict[str, list[int]] = {}
        segments, arrival = self.segments, self.arrival
        for source, _, _ in outbox:
            at = counts.get(source)
            if at is None:
                at = counts[source] = [0, 0]  # segment, k
            if source in arrival:
                segment = segments[source]
                while at[1] >= segment[at[0]][1]:
                    at[0], at[1] = at[0] + 1, 0
                origins.append((source, segment[at[0]][0], at[1]))
            else:
                origins.append((source, "", at[1]))
            at[1] += 1
        return origins

    def _route_named(self, outbox: list[tuple[str, Any, str | None]]) -> Inbox:
        """Route ``outbox`` (the next entries of the superstep's), naming each delivery to
        an executor that takes messages on arrival (see :func:`~plait._state.delivery_id`)."""
        state, arrival, origins, base = self.state, self.arrival, self.origins, self.routed
        ids = self.next_ids

        def name(position: int, j: int, d: int, target: str) -> None:
            if target in arrival:
                source, origin, k = origins[base + position]
                ids.setdefault(target, []).append(delivery_id(f"{source}/{origin}/{k}/{j}/{d}"))

        self.routed += len(outbox)
        routes = self.graph.routes_from
        return route_outbox_named(outbox, routes, state.router_state, state.superstep, name)

    def _flush(self, inbox: Inbox) -> None:
        pending = self.state.pending_requests.values()
        active = set(inbox) | {request.executor_id for request in pending}
        name = None
        if self.arrival:
            arrival, ids = self.arrival, self.next_ids

            def name(f: int, d: int, target: str) -> None:
                if target in arrival:
                    ids.setdefault(target, []).append(delivery_id(f"^{f}/{d}"))

        flushers, reach = self.graph.flushers, self.graph.reach
        flush_buffers(flushers, self.state.router_state, reach, active, inbox, name)


#: asyncio's own structured task group (Python 3.11+); on 3.10 an anyio task group is used
_AsyncioTaskGroup = getattr(asyncio, "TaskGroup", None)


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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
    that takes its failures): every attempt runs against :class:`~plait._state.Effects` of
    its own and a deep copy of the executor's state, and only the attempt that succeeds is
    committed to ``run``. Failures are read by :func:`failure`, as every invocation's are.

    :raises WorkflowRunError: the last attempt's failure, naming ``eid`` and the superstep.
    """
    root = run if isinstance(run, RunState) else run._root
    step = run.superstep  # (a schedule's effects may carry their own logical time)
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
