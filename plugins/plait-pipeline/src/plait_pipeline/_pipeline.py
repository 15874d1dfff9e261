"""The pipelined schedule: branches that do not wait for the barrier, with the results of
the superstep schedule.

Every message carries its logical time ``t``: the superstep in which the superstep
schedule would deliver it. An executor's deliveries of one ``t`` (a *group*) run together,
as they would in that superstep, once nothing still active could send the executor
another message for ``t`` (its input frontier, from graph distances, has passed ``t``) and
``t`` is at most ``max_lead`` ahead of the global frontier (the lowest ``t`` with work).

Each group runs against effects of its own (:class:`TimedEffects`); when it ends, its
effects are committed at once on the event loop, in an order that never changes what any
group sees:

- a message crossing a stateless edge group is routed at once, with the key the superstep
  schedule's barrier would sort it by (``(0, sender rank, k-th send, group, delivery)``);
  a group's deliveries are sorted by key when it fires, so its executor sees them in the
  canonical order whatever the completion order was;
- a message entering a stateful edge group (a fan-in) waits until every source of the
  group is past its ``t``; the group then routes that ``t``'s messages in key order, as
  the barrier does, so its buffers hold what they would hold in the superstep schedule;
- the buffers a ``when="available"`` fan-in flushes are decided for ``t`` once the
  global frontier has passed ``t``, with the executors that have deliveries at ``t + 1``
  as the active ones — exactly the barrier's decision; while they hold a message, the
  next barrier's flush may deliver it, so it counts as work for the fan-in's target at
  that barrier's ``t + 1``;
- shared-state writes of ``t`` are committed when the global frontier passes ``t``, in
  the canonical order;
- outputs are kept in the canonical order ``(t, sender rank, order of the sender's
  yields)``, whatever order the groups committed in;
- an executor taking messages on arrival (``max_concurrency`` above 1, or
  ``order="arrival"``) may start its group of ``t`` before every message of ``t`` is
  known, though never while active work could still send it one of an earlier ``t``
  (that group runs first); it starts each message as it arrives, up to its concurrency,
  and commits each as it ends, its effects keyed by the message's index when its group
  was complete as it fired, else by the message's own key (which sorts as the index
  would); its messages are named by delivery ids (:func:`~plait.spi.delivery_id`), known
  on arrival and the same in the superstep schedule;
- a read of shared state with ``get_shared_state`` at ``t`` waits until the writes of
  every ``t' < t`` are committed.

A limit or a failure at ``t`` stops work at ``t`` and later (running groups there are
cancelled) but lets earlier work finish, which may fail earlier still; the error raised
is the one the superstep schedule raises: the earliest ``t``, a superstep limit before a
visit limit (in the order of that ``t``'s deliveries) before a handler's failure before
a failure at the barrier.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import math
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
from plait import (
    OutputEvent,
    RoutingError,
    RunStatus,
    SharedStateRaceError,
    SharedStateRaceWarning,
    SuperstepLimitError,
    UnhandledMessageError,
    VisitLimitError,
    WorkflowRunError,
)
from plait.spi import Effects, RunState, delivery_id, on_asyncio, type_name

from ._options import PipelineOptions

if TYPE_CHECKING:
    from plait.spi import CompiledGraph, RunnerView


__all__ = ["NAME", "Pipeline", "Pipelined", "TimedEffects", "decode_cut", "pays"]

#: the name the schedule is registered under (``RunOptions.schedule``)
NAME = "pipelined"

#: the sort key of a delivery: routed ``(0, rank, k, group, d)``, diverted ``(1, rank,
#: index, j)``, flushed ``(2, flusher, d)``, first deliveries ``(-1, position)``; what an
#: executor taking messages on arrival sends as its message of key ``K`` arrives (before
#: its index is known) puts ``K`` before ``k`` (``(0, rank, K, k, group, d)``: ``K``
#: sorts as the index would); a delivery to an executor taking messages on arrival ends
#: with its delivery id (:func:`~plait.spi.delivery_id`)
Key = tuple[Any, ...]
#: a phase of a failure at one ``t``: the order the superstep schedule meets them in
_LIMIT, _VISITS, _HANDLER, _BARRIER = 0, 1, 2, 3
_YIELD_EVERY = 32
#: how many active items a speculative decision looks through at most
_LOOK_AHEAD = 64
#: how deep the keys of messages sent on arrival may nest before their receiver waits
#: for its superstep's messages instead (whose keys are then its flat indexes)
_MAX_NESTING = 16


class TimedEffects(Effects):
    """The effects of one group: what an executor's invocations at logical time ``t`` did,
    held until the group commits. Handlers see ``ctx.superstep == t``."""

    __slots__ = ("t",)

    def __init__(
        self, parent: RunState | Effects, root: RunState, t: int, delivery: str | None = None
    ) -> None:
        super().__init__(parent, root, delivery)
        self.t = t

    @property
    def superstep(self) -> int:
        return self.t


class _Group:
    """One executor's deliveries of one ``t``, running or about to run."""

    __slots__ = (
        "cancelled",
        "closed",
        "effects",
        "eid",
        "entries",
        "feed",
        "indexes",
        "messages",
        "pending",
        "scope",
        "signal",
        "t",
    )

    def __init__(
        self, eid: str, t: int, entries: list[tuple[Key, Any]], effects: TimedEffects
    ) -> None:
        self.eid, self.t, self.entries, self.effects = eid, t, entries, effects
        self.messages = [message for _, message in entries]
        #: what cancels it: its cancel scope, or its asyncio task
        self.scope: Any = None
        self.cancelled = False
        # -- an executor taking messages on arrival: each commits as it ends --------------
        #: its messages not committed yet, by key
        self.pending: dict[Key, Any] = {}
        #: messages to start
        self.feed: deque[tuple[Key, Any]] = deque()
        #: no message of its ``t`` can come any more
        self.closed = True
        self.signal = anyio.Event()
        #: key -> index, when every message was known as it fired (else the keys order)
        self.indexes: dict[Key, int] | None = None

    def arrive(self, indexed: bool) -> None:
        """Take its messages one by one, each committed as it ends: all known (``indexed``:
        each is ordered by its index) or more to come (ordered by key; :meth:`add`)."""
        self.pending = dict(self.entries)
        self.feed = deque(self.entries)
        self.closed = indexed
        if indexed:
            self.indexes = {key: i for i, (key, _) in enumerate(self.entries)}

    def add(self, key: Key, message: Any) -> None:
        """A message of its ``t`` arrived while it runs."""
        self.pending[key] = message
        self.feed.append((key, message))
        self.signal.set()

    def close(self) -> None:
        """No message of its ``t`` can come any more: it ends when its messages have."""
        self.closed = True
        self.signal.set()

    def order(self, key: Key) -> Any:
        """Where what the message of ``key`` did goes in the canonical order."""
        return key if self.indexes is None else self.indexes[key]


class Pipeline:
    """Runs one run in the pipelined schedule, with the runner's invocation path, limits
    and state (see the module's docstring for the rules)."""

    def __init__(self, runner: RunnerView, max_lead: int | None) -> None:
        graph = runner.graph
        self.runner = runner
        self.graph = graph
        self.state = runner.state
        #: how far work may run ahead of the global frontier (``None``: unbounded)
        self.max_lead = max_lead
        self.limit = runner.options.max_supersteps
        self.rank = graph.rank
        self.routes = graph.routes_from
        self.stateful_ids = {gid for gid, _ in graph.stateful}
        #: executors that take their messages on arrival; deliveries to them are named
        self.arrival = runner.arrival
        #: executor -> its group taking messages of its ``t`` as they arrive
        self.open: dict[str, _Group] = {}
        self.flush_targets = {t for _, er in graph.flushers for t in er.group.targets}
        self.flushing = {gid for gid, _ in graph.flushers}
        #: flushing edge groups whose buffers may hold a message (a barrier not done yet
        #: may flush it to their targets): any of them as the schedule takes over, and each
        #: one routed into since (:meth:`could_send` drops those it finds empty)
        self.holding = dict.fromkeys(self.flushing)
        #: flushing edge group -> the snapshot of its empty buffers
        self.empty: dict[str, Any] = {}
        self.group_targets = {gid: er.group.targets for gid, er in graph.edge_runners.items()}
        successors: dict[str, set[str]] = {nid: set() for nid in graph.spec.node_ids}
        for group in graph.spec.edge_groups:
            for source in group.sources:
                successors.setdefault(source, set()).update(group.targets)
        self.successors = successors
        self.distances: dict[str, dict[str, int]] = {}
        # -- what is pending ----------------------------------------------------------
        #: executor -> t -> its deliveries at t, with their keys
        self.queue: dict[str, dict[int, list[tuple[Key, Any]]]] = {}
        #: t -> executors with queued or running work at t (the active items)
        self.at: dict[int, dict[str, None]] = {}
        #: executors with queued work and no running group
        self.waiting: dict[str, None] = {}
        #: t -> executor -> its smallest delivery key at t (the superstep's inbox order)
        self.first_key: dict[int, dict[str, Key]] = {}
        #: stateful edge group -> t -> messages from its sources at t, not routed yet
        self.staged_routes: dict[str, dict[int, list[tuple[Key, str, Any, str | None]]]] = {}
        #: t -> stateful edge groups with messages of t to route
        self.staged_at: dict[int, dict[str, None]] = {}
        #: t -> shared-state writes of t, with their keys
        self.staged_shared: dict[int, list[tuple[Key, tuple[str, str, Any]]]] = {}
        #: the canonical keys of ``state.outputs``, in the same order
        self.output_keys: list[tuple[int, ...]] = []
        self.running: dict[str, _Group] = {}
        #: groups a failure ended (failed or cancelled): they never commit, so a cut taken
        #: after the failure (``exit`` durability) puts their messages back, as running ones
        self.dropped: dict[str, _Group] = {}
        #: the times the barrier work (flushes, shared state) is done through
        self.done_through = self.state.superstep
        self.t_max = self.state.superstep
        #: (t, phase, order, error): failures, the earliest one raised
        self.errors: list[tuple[int, int, Key, BaseException]] = []
        self.fail_time = math.inf
        #: t -> executors that fired at t (their visits are counted)
        self.fired: dict[int, set[str]] = {}
        self.wakeup = anyio.Event()
        #: the run is in this schedule now (what a RunWatch reads)
        self.active = False
        #: set (and replaced) as the barrier work of a superstep is done
        self.passed = anyio.Event()
        #: a group runs inline: the loop that does the barrier work waits for it
        self.inline = False
        self.hops = 0
        self.commits = 0
        self.stopped = False
        # -- cuts (checkpoints) ---------------------------------------------------------
        #: writes a cut and says whether it did (``None``: the run is not checkpointed)
        self.on_cut: Callable[[Pipeline, str], Awaitable[bool]] | None = runner.on_cut
        #: something committed since the last cut
        self.dirty = False
        #: executors that committed since the last cut (a resumed run's: all of them)
        self.changed: set[str] = set(self.state.executor_state)
        #: the state as of its last commit of a running executor that committed since
        self.committed: dict[str, Any] = {}
        #: executor taking messages on arrival -> the index in its superstep of each of a
        #: cut's messages whose group was complete as it fired (what the messages of that
        #: group committed before the cut were ordered by; a resumed run goes on so)
        self.resumed_indexes: dict[str, dict[Key, int]] = {}

    # -- distances ------------------------------------------------------------------------

    def distance(self, source: str, target: str) -> float:
        """The fewest edges from ``source`` to ``target`` (0 to itself; inf: none)."""
        found = self.distances.get(source)
        if found is None:
            found = self.distances[source] = {source: 0}
            frontier = deque([source])
            successors = self.successors
            while frontier:
                node = frontier.popleft()
                step = found[node] + 1
                for nxt in successors.get(node, ()):
                    if nxt not in found:
                        found[nxt] = step
                        frontier.append(nxt)
        return found.get(target, math.inf)

    # -- queueing -------------------------------------------------------------------------

    def enqueue(self, eid: str, t: int, key: Key, message: Any) -> None:
        """Queue ``message`` for ``eid`` at logical time ``t`` with sort key ``key``."""
        if self.open:
            group = self.open.get(eid)
            if group is not None and group.t == t:  # it takes them as they arrive
                group.add(key, message)
                first = self.first_key[t]
                if key < first[eid]:
                    first[eid] = key
                return
        by_time = self.queue.get(eid)
        if by_time is None:
            by_time = self.queue[eid] = {}
        box = by_time.get(t)
        if box is None:
            by_time[t] = [(key, message)]
            self.at.setdefault(t, {})[eid] = None
            firsts = self.first_key.setdefault(t, {})
            if eid not in firsts or key < firsts[eid]:
                firsts[eid] = key
            if eid not in self.running:
                self.waiting[eid] = None
            if t > self.t_max:
                self.t_max = t
            if t > self.limit:
                self._fail(t, _LIMIT, (), None)
        else:
            box.append((key, message))
            first = self.first_key[t]
            if key < first[eid]:
                first[eid] = key

    def frontier(self) -> float:
        """The global frontier: the lowest ``t`` with work queued, running or staged."""
        low = math.inf
        if self.at:
            low = min(self.at)
        if self.staged_at:
            low = min(low, min(self.staged_at))
        return low

    def _crowded(self, t: int, low: float) -> bool:
        """Too much active work before ``t`` to look through for one decision: wait for the
        frontier instead (always exact, only less eager)."""
        count = 0
        for ta in range(int(low), t):
            count += len(self.at.get(ta, ())) + len(self.staged_at.get(ta, ()))
        return count > _LOOK_AHEAD

    def could_send(self, eid: str, t: int, low: float, *, exclude: str | None = None) -> bool:
        """Could work still active send ``eid`` a message for ``t`` (if ``exclude`` is
        set: could anything but ``exclude``'s own work at ``t``), or run ``eid`` at or
        before ``t``? ``low`` is the global frontier. A message a fan-in's buffers hold
        counts as work at the first barrier not done yet: its flush there delivers it to
        the fan-in's target at the next ``t``."""
        if low == math.inf:
            return False
        distance = self.distance
        for ta in range(int(low), t + 1):
            for a in self.at.get(ta, ()):
                if a == exclude and ta == t:
                    continue
                if ta + distance(a, eid) <= t:
                    return True
            for gid in self.staged_at.get(ta, ()):
                for y in self.group_targets[gid]:
                    if ta + 1 + distance(y, eid) <= t:
                        return True
        if self.holding:
            soonest = self.done_through + 2  # (flushed at the barrier of done_through + 1)
            for gid in list(self.holding):
                if all(soonest + distance(y, eid) > t for y in self.group_targets[gid]):
                    continue
                if self._holds(gid):
                    return True
                del self.holding[gid]  # (until a message is routed into it again)
        return False

    def _holds(self, gid: str) -> bool:
        """Do the buffers of the flushing edge group ``gid`` hold a message now (their
        snapshot is not that of a fresh state)? A flush at a later barrier may deliver it."""
        edge_runner = self.graph.edge_runners[gid]
        if gid not in self.empty:
            self.empty[gid] = edge_runner.snapshot(edge_runner.initial_state(), _held)
        held = edge_runner.snapshot(self.state.router_state.get(gid), _held)
        return bool(held != self.empty[gid])

    # -- the loop ------------------------------------------------------------------------

    async def run(self, inbox: dict[str, list[Any]]) -> RunStatus | dict[str, list[Any]]:
        """Run until nothing can run — the final status, or the superstep schedule's
        error — or until the run is in lockstep again: then the inbox of the superstep
        loop's next superstep (one executor's messages at the lowest ``t``, nothing else
        queued, running or staged), which runs it inline at no cost of this module's."""
        start = self.state.superstep + 1
        cut = self.state.cut
        placed: dict[str, list[tuple[int, Key]]] = {}
        # the outputs of a resumed superstep checkpoint come before any to come
        self.output_keys = [(-1, n) for n in range(len(self.state.outputs))]
        if cut is not None and cut[0] == NAME:  # a resumed cut of this schedule's
            self.state.cut = None
            placed = self._restore(cut[1])
        position = 0
        ids = self.state.ids or {}
        self.state.ids = None  # a cut's keys hold them from here on
        for eid, messages in inbox.items():
            times = placed.get(eid, [])
            named = ids.get(eid, ()) if eid in self.arrival else None
            for n, message in enumerate(messages):
                if n < len(times):  # a cut's message, at its time and with its key
                    t, key = times[n]
                    self.enqueue(eid, t, key, message)
                else:  # a first message, a pending superstep's, an answer to a request
                    key = (-1, position)
                    if named is not None:
                        key += (named[n] if n < len(named) else delivery_id(f"@{n}"),)
                    self.enqueue(eid, start, key, message)
                position += 1
        self._begin(start)
        self.state.waiter = self._shared_through
        self.active = True
        try:
            return await self._loop()
        finally:
            self.state.waiter = None
            self.active = False

    def watched(self) -> tuple[int, dict[str, int]]:
        """What a :class:`~plait.spi.RunWatch` shows while this schedule runs: the lowest
        superstep with work (where the superstep schedule would be), and each running
        executor with how many messages it handles now. Safe to read from another
        thread (copies taken under the GIL)."""
        running = list(self.running.values())
        times = list(self.at)
        low = min(times) if times else self.done_through + 1
        now = {g.eid: len(g.pending) if g.eid in self.arrival else len(g.entries) for g in running}
        return low, now

    async def _shared_through(self, t: int) -> None:
        """Wait until the shared-state writes of every superstep before ``t`` are
        committed (what a read at ``t`` sees in the superstep schedule)."""
        while (
            self.done_through < t - 1
            and t - 1 < self.fail_time
            and not self.stopped
            and not self.inline
        ):
            await self.passed.wait()

    def _begin(self, t: int) -> None:
        """Tell an observer superstep ``t`` begins (the last one ended): once every
        delivery of ``t`` is known, so after work of ``t`` may have run ahead of it."""
        order = self.first_key.get(t)
        if self.runner.observer is not None and order:
            step = self.state.superstep
            self.runner.begin_superstep(t, tuple(sorted(order, key=order.__getitem__)))
            self.state.superstep = step

    async def _loop(self) -> RunStatus | dict[str, list[Any]]:
        found: RunStatus | dict[str, list[Any]]
        if on_asyncio() and _AsyncioTaskGroup is not None:
            # asyncio's own task group: a fifth of anyio's cost per task (as the runner)
            async with _AsyncioTaskGroup() as native:
                found = await self._steps(lambda group: native.create_task(self._native(group)))
        else:
            async with anyio.create_task_group() as tg:
                found = await self._steps(lambda group: tg.start_soon(self._task, group))
        if isinstance(found, dict):
            return found
        if self.stopped:
            return await self._stop()
        return await self._finish()

    async def _stop(self) -> RunStatus:
        """``RunOptions.stop`` was set: nothing new fired and nothing runs now; the cut
        holds what is pending, for :meth:`~plait.Workflow.resume`."""
        if self.errors:
            raise self._first_error()
        if self.on_cut is not None:
            await self._cut("handback")
        # (else, under ``exit`` durability, the runner has the run's one checkpoint be
        # this cut, taken after)
        return RunStatus.RUNNING

    async def _steps(self, spawn: Callable[[_Group], Any]) -> RunStatus | dict[str, list[Any]]:
        """Fire what may fire, commit what ends, until nothing runs (or lockstep)."""
        while True:
            self._barrier_work()
            if self.open:
                self._close_open()
            commits = self.commits
            lockstep = self._lockstep()
            if lockstep is not None:  # nothing runs: no commit comes while it is cut
                if self.dirty and self.on_cut is not None:
                    await self._cut("handback")
                self._hand_back(lockstep)
                self.state.superstep = self.done_through
                return lockstep
            if (
                self.dirty
                and self.on_cut is not None
                and not self.errors
                and not self._concurrent_in_flight()
            ):
                await self._cut("running")
            stop = self.runner.options.stop
            if stop is not None and self.commits and stop.is_set():
                self.stopped = True  # asked to stop: what runs ends, nothing new starts
                self.passed.set()
            ready = [] if self.stopped else self._ready()
            if not ready:
                if not self.running:
                    if commits != self.commits:
                        continue  # groups committed while the cut was written
                    break
                await self.wakeup.wait()
                self.wakeup = anyio.Event()
                continue
            lone = ready[0]
            if len(ready) == 1 and not self.running and lone.closed and len(lone.feed) <= 1:
                # a lone runnable group (not one whose messages commit one by one as they
                # end: what they send may run meanwhile): today's inline path, no task
                # spawned
                group = ready[0]
                self.running[group.eid] = group
                self.inline = True
                try:
                    await self._run_group(group)
                finally:
                    self.inline = False
                self.hops += 1
                if self.runner.live or self.hops % _YIELD_EVERY == 0:
                    await anyio.lowlevel.checkpoint()
                continue
            for group in ready:
                self.running[group.eid] = group
                spawn(group)
        return RunStatus.RUNNING

    async def _finish(self) -> RunStatus:
        """The run's end: its error, or its status (after the last cut)."""
        state = self.state
        if self.errors:
            raise self._first_error()
        state.superstep = self.t_max
        status = RunStatus.IDLE
        if state.pending_requests:
            status = RunStatus.IDLE_WITH_PENDING_REQUESTS
        if self.on_cut is not None:
            self.done_through = self.t_max
            await self._cut(status.value)
        return status

    def _lockstep(self) -> dict[str, list[Any]] | None:
        """The superstep loop's next inbox, if the run is in lockstep: nothing running or
        staged, every queued message at one ``t`` for one executor, the barrier of
        ``t - 1`` done, nothing run ahead of ``t``."""
        if self.running or self.staged_at or self.staged_shared or self.errors:
            return None
        if len(self.at) != 1 or len(self.waiting) != 1:
            return None
        ((t, eids),) = self.at.items()
        if len(eids) != 1 or self.done_through != t - 1 or self.t_max != t or t in self.fired:
            return None  # work of t or later ran already: the superstep loop cannot follow
        (eid,) = eids
        entries = sorted(self.queue[eid][t], key=_first)
        if eid in self.arrival and (len(entries) > 1 or eid in self.resumed_indexes):
            return None  # its messages start one by one, each committed as it ends
        return {eid: [message for _, message in entries]}

    def _hand_back(self, inbox: dict[str, list[Any]]) -> None:
        """Take the lockstep superstep's messages off the queues (the superstep loop has
        them now), after the cut that still holds them."""
        ((eid, _),) = inbox.items()
        ((t, entries),) = self.queue[eid].items()
        del self.queue[eid], self.at[t], self.waiting[eid]
        if self.arrival:  # the delivery ids go with the messages
            named = eid in self.arrival
            self.state.ids = {eid: [key[-1] for key, _ in entries]} if named else {}

    def _ready(self) -> list[_Group]:
        """The groups that may fire now (taken off the queue, their visits counted)."""
        if not self.waiting:
            return []
        low = self.frontier()
        lead = self.max_lead
        ready: list[_Group] = []
        for eid in list(self.waiting):
            by_time = self.queue[eid]
            t = min(by_time)
            if t >= self.fail_time:
                continue
            if lead is not None and t > low + lead:
                continue
            complete = t == low or not (
                self._crowded(t, low) or self.could_send(eid, t, low, exclude=eid)
            )
            resumed = self.resumed_indexes.pop(eid, None) if self.resumed_indexes else None
            if resumed is not None:
                complete = True  # (its group was as it fired: nothing more comes for its t)
            if not complete and not self._may_open(eid, t, low, by_time[t]):
                continue
            if eid in self.flush_targets and self.done_through < t - 1:
                continue
            del self.waiting[eid]
            entries = by_time.pop(t)
            if len(entries) > 1:
                entries.sort(key=_first)
            if not self._visit(eid, t):
                by_time[t] = entries  # kept: the error names it
                continue
            if self.on_cut is not None and eid in self.changed:
                # the cut holds an executor's state as of its last commit, not mid-run
                self.committed[eid] = copy.deepcopy(self.state.executor_state.get(eid))
            group = _Group(eid, t, entries, TimedEffects(self.state, self.state, t))
            if eid in self.arrival:
                group.arrive(indexed=complete)
                if resumed is not None:  # ordered as the messages committed before the cut
                    group.indexes = resumed
                if not complete:
                    self.open[eid] = group
            ready.append(group)
        return ready

    def _may_open(self, eid: str, t: int, low: float, entries: list[tuple[Key, Any]]) -> bool:
        """May ``eid``'s group of ``t`` start before every message of ``t`` is known (and
        take the rest as they arrive)? Only if ``eid`` takes its messages on arrival, their
        keys do not nest too deep, and no active work can still send it a message for an
        earlier ``t`` (``low`` is the global frontier). That group must run first, and it
        could not while this one runs: the group of ``t`` would wait for it to close, and
        it for the group of ``t`` to end."""
        if eid not in self.arrival or _nesting(entries) > _MAX_NESTING:
            return False
        return not (self._crowded(t, low) or self.could_send(eid, t - 1, low))

    def _close_open(self) -> None:
        """Close the groups taking messages on arrival whose ``t`` no active work can still
        send a message for (or that a failure or a stop ends)."""
        low = self.frontier()
        for eid, group in list(self.open.items()):
            t = group.t
            if (
                self.stopped
                or t >= self.fail_time
                or t == low
                or not (self._crowded(t, low) or self.could_send(eid, t, low, exclude=eid))
            ):
                del self.open[eid]
                group.close()

    def _visit(self, eid: str, t: int) -> bool:
        """Count a visit of ``eid`` at ``t``; False when it passes its visit limit."""
        self.fired.setdefault(t, set()).add(eid)
        visits = self.state.visits
        count = visits[eid] = visits.get(eid, 0) + 1
        limit = self.runner.visit_limits.get(eid)
        if limit is not None and count > limit:
            self._fail(t, _VISITS, self.first_key[t][eid], _visit_error(eid, limit, t))
            return False
        return True

    async def _task(self, group: _Group) -> None:
        with anyio.CancelScope() as scope:
            group.scope = scope
            await self._run_group(group)
        if scope.cancelled_caught:
            self._drop(group)
        self.wakeup.set()

    async def _native(self, group: _Group) -> None:
        """:meth:`_task` as an asyncio task (cancelled through the task itself)."""
        task = asyncio.current_task()
        group.scope = task
        try:
            await self._run_group(group)
        except asyncio.CancelledError:
            if not group.cancelled or task is None:
                raise
            getattr(task, "uncancel")()  # noqa: B009 - 3.11+, as the task group it runs in
            self._drop(group)
        self.wakeup.set()

    async def _run_group(self, group: _Group) -> None:
        """Run one group's invocations, then commit it (or record its failure)."""
        runner, eid, t, effects = self.runner, group.eid, group.t, group.effects
        state = self.state
        try:
            if eid in self.arrival:
                await self._arrive(group)
            else:
                for index, message in enumerate(group.messages):
                    state.superstep = t  # what an observer reads as the invocation starts
                    await runner.run_invocation(eid, message, index, effects)
        except Exception as exc:
            self._drop(group)
            self._fail(t, _HANDLER, (len(self.errors),), exc)
            return
        self._commit(group)

    async def _arrive(self, group: _Group) -> None:
        """The messages of an executor taking them on arrival, up to its concurrency at
        once, each with effects of its own committed as it ends (in the canonical order
        of its index or key, whatever order they end in), until the group is closed."""
        runner, eid, t = self.runner, group.eid, group.t
        limiter = anyio.CapacityLimiter(runner.concurrency.get(eid, 1))
        failures: list[BaseException] = []

        async def one(key: Key, message: Any, index: int) -> None:
            async with limiter:
                part = TimedEffects(group.effects, self.state, t, key[-1])
                self.state.superstep = t
                try:
                    await runner.run_invocation(eid, message, index, part)
                except Exception as exc:
                    failures.append(exc)
                    tg.cancel_scope.cancel()
                    return
                self._commit_part(group, key, part)

        async with anyio.create_task_group() as tg:
            started = 0
            while True:
                while group.feed:
                    key, message = group.feed.popleft()
                    tg.start_soon(one, key, message, started)
                    started += 1
                if group.closed:
                    break
                await group.signal.wait()
                group.signal = anyio.Event()
        if failures:
            raise failures[0]

    def _concurrent_in_flight(self) -> bool:
        """Has an executor running several of its messages at once one not committed yet?
        Those invocations share its state, so a cut now would hold a change that runs
        again on resume: the cut waits until none of them is in flight."""
        concurrency = self.runner.concurrency
        return any(
            group.pending and concurrency.get(eid, 1) > 1
            for eid, group in self.running.items()
            if eid in self.arrival
        )

    def _commit_part(self, group: _Group, key: Key, part: TimedEffects) -> None:
        """Commit what one message of a group taking messages on arrival did."""
        state, eid, t = self.state, group.eid, group.t
        rank = self.rank[eid]
        order = group.order(key)
        del group.pending[key]
        state.superstep = t
        self.dirty = True
        self.commits += 1
        self.changed.add(eid)
        if self.on_cut is not None:
            # a cut taken while its group runs holds its state as of this commit (its
            # messages committed so far: not run again on resume), not as its group began
            self.committed[eid] = copy.deepcopy(state.executor_state.get(eid))
        try:
            if part.events is not None:
                self._replay(eid, t, rank, part.events, order)
            if part.writes is not None:
                staged = self.staged_shared.setdefault(t, [])
                staged.extend(((rank, order, k), write) for k, write in enumerate(part.writes))
            if part.outbox:
                self._route(eid, t, rank, part.outbox, order, part.delivery or "")
            if part.diverted:
                self._divert(t, part.diverted, order)
        except WorkflowRunError as exc:
            self._fail(t, _BARRIER, (rank,), exc)
        self.wakeup.set()

    def _drop(self, group: _Group) -> None:
        """A group that will not commit (failed or cancelled) leaves the active items."""
        if self.running.get(group.eid) is group:
            del self.running[group.eid]
            self.dropped[group.eid] = group
        self._settle(group.eid, group.t)

    def _settle(self, eid: str, t: int) -> None:
        active = self.at.get(t)
        if active is not None:
            active.pop(eid, None)
            if not active:
                del self.at[t]
        if self.queue.get(eid):
            self.waiting[eid] = None

    # -- committing -----------------------------------------------------------------------

    def _commit(self, group: _Group) -> None:
        """Commit what a group did: its outputs, events and requests, its messages (routed
        or staged for a stateful edge group), its failures taken by error edges, its
        shared-state writes (staged until the frontier passes its ``t``)."""
        state, eid, t, effects = self.state, group.eid, group.t, group.effects
        rank = self.rank[eid]
        del self.running[eid]
        state.superstep = t
        self.dirty = True
        self.commits += 1
        self.changed.add(eid)
        self.committed.pop(eid, None)
        try:
            if effects.events is not None:
                self._replay(eid, t, rank, effects.events)
            if effects.writes is not None:
                staged = self.staged_shared.setdefault(t, [])
                staged.extend(((rank, k), write) for k, write in enumerate(effects.writes))
            if effects.outbox:
                self._route(eid, t, rank, effects.outbox)
            if effects.diverted:
                self._divert(t, effects.diverted)
        except WorkflowRunError as exc:
            self._fail(t, _BARRIER, (rank,), exc)
        self._settle(eid, t)

    def _divert(
        self, t: int, diverted: list[tuple[int, int, str, Any, str | None]], order: Any = None
    ) -> None:
        """Deliver the failures error edges took (``order``: of a message taken on
        arrival, which sorts them in its sender's place instead of their index)."""
        diverted.sort(key=_by_rank_index)
        for j, (r, index, target, failure, delivery) in enumerate(diverted):
            key: Key = (1, r, index if order is None else order, j)
            if target in self.arrival:
                origin = delivery if delivery is not None else index
                key += (delivery_id(f"!{failure.executor_id}/{origin}/{target}"),)
            self.enqueue(target, t + 1, key, failure)

    def _replay(
        self, eid: str, t: int, rank: int, events: list[tuple[Any, ...]], order: Any = None
    ) -> None:
        state = self.state
        seq = 0
        for event in events:
            kind = event[1]
            if kind == "output":
                key: tuple[Any, ...] = (t, rank, seq) if order is None else (t, rank, order, seq)
                seq += 1
                where = bisect.bisect(self.output_keys, key)
                self.output_keys.insert(where, key)
                state.outputs.insert(where, event[2])
                if state.emit is not None:
                    state.emit(OutputEvent(eid, event[2], t))
            elif kind == "custom":
                state.emit_custom(eid, event[2])
            else:
                state.request_info(eid, event[2], event[3], request_id=event[4])

    def _route(
        self,
        eid: str,
        t: int,
        rank: int,
        outbox: Iterable[tuple[str, Any, str | None]],
        order: Any = None,
        origin: str = "",
    ) -> None:
        """Route what ``eid`` sent at ``t`` (``order``: the place of the message taken on
        arrival that sent it, whose delivery id is ``origin``)."""
        router_state = self.state.router_state
        arrival = self.arrival
        prefix = ""
        for k, (source, message, target) in enumerate(outbox):
            base: Key = (0, rank, k) if order is None else (0, rank, order, k)
            if arrival:  # (what the delivery ids of its deliveries derive from)
                prefix = f"{source}/{origin}/{k}"
            runners = self.routes.get(source)
            if not runners:
                raise UnhandledMessageError(
                    f"executor {source!r} sent a message of type {type_name(type(message))} "
                    f"in superstep {t} but has no outgoing edges",
                    executor_id=source,
                    superstep=t,
                )
            delivered = False
            for j, (gid, edge_runner) in enumerate(runners):
                if gid in self.stateful_ids:
                    if target is None or target in edge_runner.group.targets:
                        delivered = True
                    times = self.staged_routes.setdefault(gid, {})
                    # (with the prefix of the delivery ids its deliveries will get)
                    staged: Key = (*base, j, prefix) if arrival else (*base, j)
                    times.setdefault(t, []).append((staged, source, message, target))
                    self.staged_at.setdefault(t, {})[gid] = None
                    continue
                deliveries = _routed(gid, edge_runner, source, message, target, router_state, t)
                for d, (tgt, data) in enumerate(deliveries):
                    delivered = True
                    if tgt in arrival:
                        key: Key = (*base, j, d, delivery_id(f"{prefix}/{j}/{d}"))
                    elif order is None:
                        key = (0, rank, k, j, d)
                    else:
                        key = (*base, j, d)
                    self.enqueue(tgt, t + 1, key, data)
            reaches = delivered or target is None
            if not reaches and not any(target in er.group.targets for _, er in runners):
                raise UnhandledMessageError(
                    f"executor {source!r} sent a message to {target!r}, which none of "
                    f"its edge groups reaches",
                    executor_id=source,
                    superstep=t,
                )

    # -- barrier work: stateful routing, flushes, shared state ------------------------------

    def _barrier_work(self) -> None:
        """Route what stateful edge groups hold for a ``t`` all their sources have passed;
        flush and commit shared state for each ``t`` the global frontier has passed."""
        changed = True
        while changed:
            changed = False
            low = self.frontier()
            for ts in sorted(self.staged_at):
                if ts >= self.fail_time:
                    break
                for gid in list(self.staged_at[ts]):
                    if self._route_staged(gid, ts, low):
                        changed = True
            if changed:
                continue
            low = self.frontier()
            end = min(low - 1, self.t_max, self.fail_time - 1)
            while self.done_through < end:
                t = self.done_through + 1
                self._barrier(t)
                self.done_through = t
                self.passed.set()
                self.passed = anyio.Event()
                self.dirty = True
                changed = True
                self._begin(t + 1)
                break

    def _route_staged(self, gid: str, ts: int, low: float) -> bool:
        times = self.staged_routes[gid]
        if min(times) != ts:
            return False  # an earlier t of this group goes first
        if gid in self.flushing and self.done_through < ts - 1:
            return False  # the flush of ts - 1 sees the buffers as they were before ts
        edge_runner = self.graph.edge_runners[gid]
        if low <= ts:  # something active at or before ts: could it reach a source?
            if self._crowded(ts + 1, low):
                return False
            for source in edge_runner.group.sources:
                if self.could_send(source, ts, low):
                    return False
        entries = times.pop(ts)
        if not times:
            del self.staged_routes[gid]
        staged = self.staged_at[ts]
        del staged[gid]
        if not staged:
            del self.staged_at[ts]
        entries.sort(key=_first)
        router_state = self.state.router_state
        self.state.superstep = ts
        try:
            naming, arrival = bool(self.arrival), self.arrival
            for key, source, message, target in entries:
                found = _routed(gid, edge_runner, source, message, target, router_state, ts)
                for d, (tgt, data) in enumerate(found):
                    if not naming:
                        self.enqueue(tgt, ts + 1, (*key, d), data)
                        continue
                    *head, j, prefix = key
                    delivered: Key = (*head, j, d)
                    if tgt in arrival:
                        delivered += (delivery_id(f"{prefix}/{j}/{d}"),)
                    self.enqueue(tgt, ts + 1, delivered, data)
        except WorkflowRunError as exc:
            self._fail(ts, _BARRIER, key, exc)
        if gid in self.flushing:
            self.holding[gid] = None
        return True

    def _barrier(self, t: int) -> None:
        """What the superstep schedule does at the barrier of ``t`` once every group of
        ``t`` committed: commit the shared-state writes of ``t``, then flush the fan-ins
        whose silent sources nothing active at ``t + 1`` can reach."""
        state = self.state
        state.superstep = t
        writes = self.staged_shared.pop(t, None)
        if writes:
            writes.sort(key=_first)
            try:
                if state.reads:
                    _check_ahead(state, [write for _, write in writes])
                state.commit_shared([write for _, write in writes])
            except WorkflowRunError as exc:
                self._fail(t, _BARRIER, (), exc)
                return
        if state.reads:  # (read, and nothing written: no race)
            state.reads.pop(t, None)
        flushers = self.graph.flushers
        if not flushers:
            return
        active = set(self.first_key.get(t + 1, ()))
        active.update(r.executor_id for r in state.pending_requests.values() if r.superstep <= t)
        can_still_send = self.graph.reaching(active)
        router_state = state.router_state
        for f, (gid, edge_runner) in enumerate(flushers):
            flushed = edge_runner.flush(router_state.get(gid), can_still_send)
            for d, (tgt, data) in enumerate(flushed):
                key: Key = (2, f, d)
                if tgt in self.arrival:
                    key += (delivery_id(f"^{f}/{d}"),)
                self.enqueue(tgt, t + 1, key, data)

    # -- cuts -----------------------------------------------------------------------------

    async def _cut(self, status: str) -> None:
        """Have the checkpointer write a cut (a consistent one: taken between commits)."""
        assert self.on_cut is not None
        await self.on_cut(self, status)

    def cut(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, list[Any]], list[str], dict[str, Any]]:
        """What a checkpoint of this moment holds beyond a superstep's: ``(pending,
        changed, section)`` — every delivered but uncommitted message by executor (a running
        group's first: it goes back to the head of its queue), the executors whose state
        changed since the last cut and are not running, and the schedule's own state as
        JSON-ready data (each pending message's time and key; what stateful edge groups
        and shared state hold for a time not yet passed; outputs' keys; each open time's
        delivery order and what fired in it)."""
        pending: dict[str, list[Any]] = {}
        times: dict[str, list[Any]] = {}

        def add(
            eid: str, t: int, entries: list[tuple[Key, Any]], indexes: dict[Key, int] | None = None
        ) -> None:
            for key, message in entries:
                pending.setdefault(eid, []).append(message)
                where: list[Any] = [t, list(key)]
                if indexes is not None:  # (its index in its superstep: see resumed_indexes)
                    where.append(indexes[key])
                times.setdefault(eid, []).append(where)

        unfinished = {**self.dropped, **self.running}
        for eid, group in unfinished.items():
            if eid in self.arrival:  # what it has not committed yet, in the canonical order
                add(eid, group.t, sorted(group.pending.items(), key=_first), group.indexes)
            else:
                add(eid, group.t, group.entries)
        for eid, by_time in self.queue.items():
            for t in sorted(by_time):
                add(eid, t, sorted(by_time[t], key=_first))
        fired = {t: sorted(eids) for t, eids in self.fired.items() if t > self.done_through}
        for group in unfinished.values():
            fired[group.t] = [e for e in fired.get(group.t, []) if e != group.eid]
        section = {
            "times": times,
            "routes": [
                [gid, t, list(key), source, encode(message), target]
                for gid, by_time in self.staged_routes.items()
                for t, entries in sorted(by_time.items())
                for key, source, message, target in entries
            ],
            "shared": [
                [t, list(key), eid, name, encode(value)]
                for t, writes in sorted(self.staged_shared.items())
                for key, (eid, name, value) in writes
            ],
            "output_keys": [list(key) for key in self.output_keys],
            "order": [
                [t, eid, list(key)]
                for t, firsts in sorted(self.first_key.items())
                if t > self.done_through
                for eid, key in firsts.items()
            ],
            "fired": [[t, eids] for t, eids in sorted(fired.items())],
            "t_max": self.t_max,
        }
        changed = [eid for eid in self.changed if eid not in unfinished]
        # what commits while the cut is written goes in the next one
        self.dirty = False
        self.changed = {eid for eid in self.changed if eid in unfinished}
        return pending, changed, section

    def uncommitted(self) -> tuple[dict[str, int], dict[str, Any]]:
        """What a cut must not count: a visit per running group, and the state as of its
        last commit of each running executor that changed since the last cut."""
        unfinished = {**self.dropped, **self.running}
        visits = {eid: self.state.visits.get(eid, 0) - 1 for eid in unfinished}
        return visits, {eid: self.committed[eid] for eid in unfinished if eid in self.committed}

    def _restore(self, cut: dict[str, Any]) -> dict[str, list[tuple[int, Key]]]:
        """Take back a cut's schedule state; each pending message's (time, key)."""
        for gid, t, key, source, message, target in cut["routes"]:
            by_time = self.staged_routes.setdefault(gid, {})
            by_time.setdefault(t, []).append((_tuples(key), source, message, target))
            self.staged_at.setdefault(t, {})[gid] = None
        for t, key, eid, name, value in cut["shared"]:
            self.staged_shared.setdefault(t, []).append((_tuples(key), (eid, name, value)))
        self.output_keys = [_tuples(key) for key in cut["output_keys"]]
        for t, eid, key in cut["order"]:
            self.first_key.setdefault(t, {})[eid] = _tuples(key)
        for t, eids in cut["fired"]:
            self.fired[t] = set(eids)
        self.t_max = max(self.t_max, cut["t_max"])
        placed: dict[str, list[tuple[int, Key]]] = {}
        for eid, entries in cut["times"].items():
            places = placed[eid] = []
            for t, key, *index in entries:
                places.append((t, _tuples(key)))
                if index:
                    self.resumed_indexes.setdefault(eid, {})[places[-1][1]] = index[0]
        return placed

    # -- failures -------------------------------------------------------------------------

    def _fail(self, t: int, phase: int, order: Key, error: BaseException | None) -> None:
        """Record a failure at ``t``; work at ``t`` and later stops (running groups there
        are cancelled), earlier work goes on."""
        self.errors.append((t, phase, order, error))  # type: ignore[arg-type]
        if t < self.fail_time:
            self.fail_time = t
            for group in list(self.running.values()):
                if group.t >= t and group.scope is not None:
                    group.cancelled = True
                    group.scope.cancel()

    def _first_error(self) -> BaseException:
        """The error the superstep schedule raises: the earliest ``t``, then its phase."""
        t = min(entry[0] for entry in self.errors)
        self.state.superstep = t
        order = self.first_key.get(t, {})
        inbox = sorted(order, key=order.__getitem__)
        if t > self.limit:
            return SuperstepLimitError(
                f"run exceeded max_supersteps={self.limit}; still pending for "
                f"executor(s) {', '.join(inbox)} (raise the limit: --max-supersteps N "
                "on the command line, max_supersteps=N in Python; or fix the cycle)",
                executor_id=inbox[0] if inbox else None,
                superstep=t,
            )
        fired = self.fired.get(t, set())
        for eid in inbox:  # the visits of what never fired at t, in the superstep's order
            if eid in fired:
                continue
            limit = self.runner.visit_limits.get(eid)
            visits = self.state.visits
            count = visits[eid] = visits.get(eid, 0) + 1
            if limit is not None and count > limit:
                self.errors.append((t, _VISITS, order[eid], _visit_error(eid, limit, t)))
                break
        at_t = [entry for entry in self.errors if entry[0] == t and entry[3] is not None]
        at_t.sort(key=lambda entry: (entry[1], entry[2]))
        return at_t[0][3]


#: asyncio's own structured task group (Python 3.11+); on 3.10 an anyio task group is used
_AsyncioTaskGroup = getattr(asyncio, "TaskGroup", None)


def pays(graph: CompiledGraph, inbox: dict[str, list[Any]]) -> bool:
    """Could work after this superstep start before it ends? Only if one of its executors
    sends along a stateless edge group (or an error edge), or into a fan-in some of whose
    sources are not in it: else the next superstep waits for all of them anyway (a
    fan-out into one fan-in), and the superstep loop runs it at its own, lower cost."""
    seen: set[str] = set()
    routes, errors = graph.routes_from, graph.error_targets
    for eid in inbox:
        if eid in errors:
            return True
        for gid, edge_runner in routes.get(eid, ()):
            if not edge_runner.stateful:
                return True
            if edge_runner.needs_flush or gid in seen:
                continue
            seen.add(gid)
            if any(source not in inbox for source in edge_runner.group.sources):
                return True
    return False


def _check_ahead(state: RunState, writes: list[tuple[str, str, Any]]) -> None:
    """Warn (fail, under ``strict``) where an executor running ahead read, in a later
    superstep, a key written in this one (``state.superstep``) before the write was
    committed: it saw the value from before the write, where the superstep schedule
    shows it the write. (``RunState.commit_shared`` checks the reads of the same
    superstep.)"""
    step = state.superstep
    for later in sorted(t for t in state.reads if t > step):
        ahead = state.reads[later]
        for writer, key, _ in writes:
            others = sorted(ahead.get(key, set()) - {writer})
            if not others:
                continue
            text = (
                f"executor(s) {', '.join(map(repr, others))} read shared-state key "
                f"{key!r} in superstep {later}, running ahead of the write of it "
                f"by executor {writer!r} in superstep {step}, so they saw the "
                f"value from before it (the superstep schedule shows them the "
                f"write); read it with `await ctx.get_shared_state(...)`, which "
                f"waits for earlier supersteps' writes"
            )
            if state.strict:
                raise SharedStateRaceError(
                    text + " (strict=True)", executor_id=others[0], superstep=step
                )
            warnings.warn(text, SharedStateRaceWarning, stacklevel=2)
            ahead[key] = ahead[key] & {writer}


def _visit_error(eid: str, limit: int, t: int) -> VisitLimitError:
    return VisitLimitError(
        f"executor {eid!r} exceeded its visit limit max_visits={limit} in superstep {t}",
        executor_id=eid,
        superstep=t,
    )


def _routed(
    gid: str,
    edge_runner: Any,
    source: str,
    message: Any,
    target: str | None,
    router_state: dict[str, Any],
    t: int,
) -> list[tuple[str, Any]]:
    """``edge_runner.route``, its failures named as the barrier's routing names them."""
    try:
        deliveries: list[tuple[str, Any]] = edge_runner.route(
            source, message, target, router_state.get(gid)
        )
    except WorkflowRunError:
        raise
    except Exception as exc:
        raise RoutingError(
            f"edge group {gid!r} failed to route a {type_name(type(message))} "
            f"from {source!r} in superstep {t}: {type(exc).__name__}: {exc}",
            executor_id=source,
            superstep=t,
        ) from exc
    return deliveries


def _first(entry: tuple[Any, ...]) -> Any:
    return entry[0]


#: what :meth:`Pipeline._holds` encodes every held message as (no fresh state holds it)
_HELD = object()


def _held(message: Any) -> Any:
    """``message`` as :meth:`Pipeline._holds` encodes it in a snapshot: :data:`_HELD`."""
    return _HELD


def _tuples(key: list[Any]) -> Key:
    """A key as a checkpoint holds it (JSON lists) back as a key (nested tuples)."""
    return tuple(_tuples(part) if isinstance(part, list) else part for part in key)


def _nesting(entries: list[tuple[Key, Any]]) -> int:
    """How deep the keys of ``entries`` nest (messages sent on arrival hold the key of
    the message that sent them), up to one past :data:`_MAX_NESTING`."""
    deepest = 0
    for key, _ in entries:
        depth = 0
        while depth <= _MAX_NESTING and len(key) > 2 and isinstance(key[2], tuple):
            key, depth = key[2], depth + 1
        deepest = max(deepest, depth)
    return deepest


def _by_rank_index(entry: tuple[Any, ...]) -> tuple[int, int]:
    return entry[0], entry[1]


def decode_cut(section: Any, decode: Callable[[Any], Any]) -> dict[str, Any]:
    """A checkpoint's pipelined-schedule section with its messages and values decoded."""
    cut = dict(section)
    cut["routes"] = [[*entry[:4], decode(entry[4]), entry[5]] for entry in section["routes"]]
    cut["shared"] = [[*entry[:4], decode(entry[4])] for entry in section["shared"]]
    return cut


class Pipelined:
    """The pipelined schedule as the runner calls it (:class:`plait.spi.Schedule`),
    registered as ``"pipelined"``."""

    def pays(self, runner: RunnerView, inbox: dict[str, list[Any]]) -> bool:
        """:func:`pays`, unless the run's ``max_lead`` is 0 (the superstep schedule: the
        superstep loop runs it at its own, lower cost)."""
        return runner.options.of(PipelineOptions).max_lead != 0 and pays(runner.graph, inbox)

    def start(self, runner: RunnerView, barrier: bool) -> Pipeline:
        """A :class:`Pipeline` for ``runner``'s run, with the run's ``max_lead``
        (:class:`PipelineOptions`), or 0 with ``barrier`` (a cut of this schedule resumed
        by a run that asks for another)."""
        return Pipeline(runner, 0 if barrier else runner.options.of(PipelineOptions).max_lead)

    def decode_cut(self, section: Any, decode: Callable[[Any], Any]) -> dict[str, Any]:
        """:func:`decode_cut`."""
        return decode_cut(section, decode)
