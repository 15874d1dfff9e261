"""What one run changes: :class:`RunState` (messages in flight, outputs, per-executor and
shared state, router state, visits, pending requests), and what an invocation writes until
the barrier applies it: a write record (:class:`Effects`), applied by
:func:`apply_writes`. Workflows and executors stay untouched by runs.
"""

from __future__ import annotations

import hashlib
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._context import DELETED, WorkflowContext
from ._errors import (
    SharedStateConflictError,
    SharedStateRaceError,
    SharedStateRaceWarning,
    WorkflowRunError,
)
from ._events import CustomEvent, NestedEvent, OutputEvent, RequestInfoEvent, WorkflowEvent
from ._records import record_repr
from ._types import type_name

if TYPE_CHECKING:
    from ._observer import RunObserver

__all__ = [
    "Effects",
    "Inbox",
    "PendingRequest",
    "RunState",
    "apply_writes",
    "delivery_id",
    "new_run_id",
    "replay",
]

#: executor id -> the messages delivered to it in one superstep
Inbox = dict[str, list[Any]]

#: ``(executor id, key, value)``: one shared-state write, staged until the barrier
Write = tuple[str, str, Any]
#: ``(source executor id, message, explicit target or None)``: one message sent
Sent = tuple[str, Any, "str | None"]


def new_run_id() -> str:
    """A fresh run id (here, with the run's state: building a workflow never imports uuid)."""
    return uuid.uuid4().hex


def delivery_id(seed: str) -> str:
    """The id of one delivery to an executor that takes its messages on arrival
    (``max_concurrency`` above 1, or ``order="arrival"``): a digest of where the message
    comes from — ``sender/origin/k/group/d`` for a routed one (``origin``: the sender's own
    delivery id when it takes messages on arrival; ``k``: the ``k``-th send of that
    invocation, else of the sender's superstep), ``@n`` for the ``n``-th first delivery,
    ``^f/d`` for a fan-in's flush, ``!sender/origin/target`` for a failure an error edge
    takes. It is known when the message arrives and is the same in either schedule,
    whatever order handlers finish in; ``ctx.idempotency_key`` ends with it."""
    return hashlib.blake2b(seed.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@attrs.define(repr=False)
class PendingRequest:
    """A request for outside input that the run is waiting on (``executor_id``: the
    executor that asked, or :data:`~plait._observer.RUN_REQUEST` for the run's own)."""

    __repr__ = record_repr

    request_id: str
    executor_id: str
    request: Any
    response_type: Any
    superstep: int


class RunState:
    """Everything one run changes. Workflows and executors stay untouched."""

    __slots__ = (
        "answers",
        "attempt_executors",
        "attempts",
        "contexts",
        "cut",
        "delivery",
        "effects",
        "emit",
        "executor_state",
        "ids",
        "observed",
        "observer",
        "outputs",
        "pending_requests",
        "reads",
        "reducers",
        "router_state",
        "run_id",
        "shared",
        "strict",
        "superstep",
        "visits",
        "waiter",
    )

    def __init__(self, run_id: str, emit: Callable[[WorkflowEvent], None] | None) -> None:
        self.run_id = run_id
        self.superstep = 0
        self.outputs: list[Any] = []
        #: the shared state as committed at the last barrier (what every handler reads)
        self.shared: dict[str, Any] = {}
        #: shared-state key -> ``reducer(current, update)`` (the ``shared_reducers`` option)
        self.reducers: Mapping[str, Callable[[Any, Any], Any]] = {}
        self.executor_state: dict[str, dict[str, Any]] = {}
        self.contexts: dict[str, WorkflowContext[Any, Any]] = {}
        self.router_state: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        self.pending_requests: dict[str, PendingRequest] = {}
        #: answers to the run's own requests (``RUN_REQUEST``: an observer's, at a
        #: superstep boundary) that a resume delivers, for the run's observer to take
        self.answers: list[Any] = []
        #: failed attempts so far of invocations being retried, by invocation key
        #: ("superstep:executor:index", the form checkpoints keep)
        self.attempts: dict[str, int] = {}
        #: the executor of each invocation key in ``attempts``, recorded by the runner when
        #: the invocation runs again (what a live view reads instead of splitting the key)
        self.attempt_executors: dict[str, str] = {}
        self.emit = emit
        #: what a plugin observes this run with (:class:`plait.spi.RunObserver`), if any
        self.observer: RunObserver | None = None
        #: what the observers of the run this one resumes left with its checkpoint
        self.observed: Mapping[str, Any] | None = None
        #: the checkpoint this run resumes was taken at a schedule's cut: (the name of
        #: the schedule that took it, its section decoded by :meth:`Schedule.decode_cut`)
        self.cut: tuple[str, Any] | None = None
        #: the delivery ids of the pending messages of executors that take messages on
        #: arrival (see :func:`delivery_id`), as a checkpoint this run resumes holds them
        self.ids: dict[str, list[str]] | None = None
        #: the run's own invocations have no delivery id (an Effects' may)
        self.delivery: str | None = None
        #: superstep -> shared-state key -> the executors that read it in that superstep
        #: (what a write of it by another executor races with)
        self.reads: dict[int, dict[str, set[str]]] = {}
        #: a race on a shared-state key fails the run (the ``strict`` run option)
        self.strict = False
        #: waits until the shared-state writes of every superstep before the one given
        #: are committed (a schedule's without the barrier, while a branch may run ahead)
        self.waiter: Callable[[int], Awaitable[None]] | None = None
        #: the run's own write record: what the invocations that need none of their own
        #: (one job per executor, its messages in order) write, until the barrier applies it
        self.effects = Effects(self, self, immediate=True)

    def context(self, executor_id: str) -> WorkflowContext[Any, Any]:
        """The context of ``executor_id`` in this run (created on first use)."""
        ctx = self.contexts.get(executor_id)
        if ctx is None:
            state = self.executor_state.setdefault(executor_id, {})
            ctx = self.contexts[executor_id] = WorkflowContext(self.effects, executor_id, state)
        return ctx

    def emit_output(self, executor_id: str, data: Any) -> None:
        """Record a workflow output (and emit its event when someone listens)."""
        self.outputs.append(data)
        if self.emit is not None:
            self.emit(OutputEvent(executor_id, data, self.superstep))

    def emit_custom(self, executor_id: str, data: Any) -> None:
        """Emit a custom event, if someone listens; a nested run's event (forwarded by
        ``Workflow.run_nested`` as the nesting executor's) goes out as itself."""
        if self.emit is not None:
            nested = isinstance(data, NestedEvent)
            self.emit(data if nested else CustomEvent(executor_id, data, self.superstep))

    def note_read(self, executor_id: str, key: str, superstep: int | None = None) -> None:
        """``executor_id`` read shared-state ``key`` in ``superstep`` (default: the current
        one): :meth:`commit_shared` checks it against that superstep's writes."""
        step = self.superstep if superstep is None else superstep
        by_key = self.reads.get(step)
        if by_key is None:
            if self.waiter is None:  # in supersteps: the earlier ones' reads are checked
                for earlier in [t for t in self.reads if t < step]:
                    del self.reads[earlier]
            by_key = self.reads[step] = {}
        readers = by_key.get(key)
        if readers is None:
            by_key[key] = {executor_id}
        else:
            readers.add(executor_id)

    async def shared_ready(self, superstep: int | None = None) -> None:
        """Wait until what ``superstep`` (default: the current one) reads of the shared
        state is committed: every earlier superstep's writes (at once but in a
        pipelined run whose branch runs ahead)."""
        if self.waiter is not None:
            await self.waiter(self.superstep if superstep is None else superstep)

    def check_races(self, staged: list[Write]) -> None:
        """Warn (fail, under ``strict``) where an executor read, in this superstep, a key
        another executor writes in it: the read saw the value from before the write. (A
        schedule whose branches run ahead checks their reads of later supersteps.)"""
        reads = self.reads.pop(self.superstep, None)
        if not reads:
            return
        seen: set[tuple[str, str]] = set()
        for writer, key, _ in staged:
            others = sorted(reads.get(key, set()) - {writer})
            if not others or (writer, key) in seen:
                continue
            seen.add((writer, key))
            readers = ", ".join(map(repr, others))
            self._race(
                f"executor {writer!r} wrote shared-state key {key!r} in superstep "
                f"{self.superstep}, which executor(s) {readers} read in the same superstep: "
                f"they saw the value from before the write (a write is visible from the "
                f"next superstep); pass the value in a message, or read it a superstep "
                f"later",
                others[0],
            )

    def _race(self, text: str, reader: str) -> None:
        if self.strict:
            raise SharedStateRaceError(
                text + " (strict=True)", executor_id=reader, superstep=self.superstep
            )
        warnings.warn(text, SharedStateRaceWarning, stacklevel=3)

    def commit_shared(self, staged: list[Write]) -> None:
        """Apply the superstep's shared-state writes, in the order given (the canonical
        order: :func:`apply_writes` sorts them by the writer's rank, the index of its
        message, then the order of its writes).

        A key written by two executors is a :class:`SharedStateConflictError` naming both
        and the key, unless a reducer is declared for it: then every write is folded in,
        ``value = reducer(value, write)`` (a key not set yet takes the first write as is).
        """
        if self.reads:
            self.check_races(staged)
        shared, reducers = self.shared, self.reducers
        writers: dict[str, str] = {}
        for eid, key, value in staged:
            reducer = reducers.get(key)
            if reducer is None:
                other = writers.setdefault(key, eid)
                if other != eid:
                    raise SharedStateConflictError(
                        f"executors {other!r} and {eid!r} both wrote shared-state key "
                        f"{key!r} in superstep {self.superstep}; write it from one executor "
                        f"per superstep, or declare a reducer for it "
                        f"(shared_reducers={{{key!r}: ...}})",
                        executor_id=eid,
                        superstep=self.superstep,
                    )
                if value is DELETED:
                    shared.pop(key, None)
                else:
                    shared[key] = value
            elif value is DELETED:
                shared.pop(key, None)
            elif key not in shared:
                shared[key] = value
            else:
                try:
                    shared[key] = reducer(shared[key], value)
                except Exception as exc:
                    raise WorkflowRunError(
                        f"the reducer of shared-state key {key!r} failed on the write of "
                        f"executor {eid!r} in superstep {self.superstep}: "
                        f"{type(exc).__name__}: {exc}",
                        executor_id=eid,
                        superstep=self.superstep,
                    ) from exc

    def request_info(
        self,
        executor_id: str,
        request: Any,
        response_type: Any,
        *,
        request_id: str | None = None,
    ) -> str:
        """Record a pending request for outside input and announce it."""
        request_id = request_id or uuid.uuid4().hex
        self.pending_requests[request_id] = PendingRequest(
            request_id, executor_id, request, response_type, self.superstep
        )
        if self.emit is not None:
            self.emit(
                RequestInfoEvent(
                    request_id, executor_id, request, type_name(response_type), self.superstep
                )
            )
        if self.observer is not None:
            self.observer.request(executor_id, request_id, self.superstep)
        return request_id


class Effects:
    """One write record: what invocations did, held until the barrier applies it (or, for
    an attempt under a retry policy, until the attempt succeeds and :meth:`commit` hands it
    to the record it belongs to). A handler's context writes to one; :func:`apply_writes`
    is what applies them.

    The messages sent, the outputs, custom events and requests made, the shared-state
    writes and the failures error edges took are kept in the order they were made, each
    tagged with the executor that made it. The run has a record of its own
    (:attr:`RunState.effects`) for the invocations that need none: one job per executor,
    its messages in order. A message of an executor taking messages on arrival, and every
    invocation of an observed run, gets a record of its own, ordered by the ``index`` of
    its message.

    An ``immediate`` record makes outputs, custom events and requests at once (the
    invocations of a superstep with one job: the order they are made in is the canonical
    one, and a stream's consumer sees them as they come).
    """

    __slots__ = (
        "_parent",
        "_root",
        "delivery",
        "diverted",
        "events",
        "immediate",
        "index",
        "outbox",
        "sender",
        "writes",
    )

    #: the delivery id of the message these effects answer (see :func:`delivery_id`)
    delivery: str | None

    def __init__(
        self,
        parent: RunState | Effects,
        root: RunState,
        delivery: str | None = None,
        *,
        index: int = 0,
        immediate: bool = False,
    ) -> None:
        """:param parent: what the superstep is read from, and where :meth:`commit` hands
            these effects (the record an attempt belongs to).
        :param root: the run's state.
        :param delivery: the delivery id of the message these effects answer, when its
            executor takes messages on arrival (else the parent's, if any).
        :param index: the index of the message these effects answer (what they sort by
            after the sender's rank).
        :param immediate: make outputs, custom events and requests at once.
        """
        self._parent = parent
        self._root = root
        self.delivery = delivery if delivery is not None else parent.delivery
        self.index = index
        self.immediate = immediate
        self.outbox: list[Sent] = []
        #: (executor id, "output" | "custom" | "request", data...) in the order made
        self.events: list[tuple[Any, ...]] | None = None
        #: shared-state writes in the order made
        self.writes: list[Write] | None = None
        #: failures error edges took: (sender's rank, message index, target, failure, the
        #: delivery id of the failed message if any)
        self.diverted: list[tuple[int, int, str, Any, str | None]] | None = None
        #: the handle the run's observer gave the invocation that wrote these effects
        self.sender: Any = None

    @property
    def run_id(self) -> str:
        return self._root.run_id

    @property
    def superstep(self) -> int:
        # the parent's: a pipelined run's effects carry the logical time they belong to
        return self._parent.superstep

    @property
    def shared(self) -> dict[str, Any]:
        """The committed shared state (writes are staged: visible from the next superstep)."""
        return self._root.shared

    def note_read(self, executor_id: str, key: str) -> None:
        self._root.note_read(executor_id, key, self.superstep)

    async def shared_ready(self) -> None:
        await self._root.shared_ready(self.superstep)

    def context(self, executor_id: str) -> WorkflowContext[Any, Any]:
        """A context of ``executor_id`` writing to these effects."""
        state = self._root.executor_state.setdefault(executor_id, {})
        return WorkflowContext(self, executor_id, state)

    def _event(self, event: tuple[Any, ...]) -> None:
        if self.events is None:
            self.events = [event]
        else:
            self.events.append(event)

    def emit_output(self, executor_id: str, data: Any) -> None:
        if self.immediate:
            self._root.emit_output(executor_id, data)
        else:
            self._event((executor_id, "output", data))

    def emit_custom(self, executor_id: str, data: Any) -> None:
        if self.immediate:
            self._root.emit_custom(executor_id, data)
        else:
            self._event((executor_id, "custom", data))

    def write_shared(self, executor_id: str, key: str, value: Any) -> None:
        if self.writes is None:
            self.writes = [(executor_id, key, value)]
        else:
            self.writes.append((executor_id, key, value))

    def request_info(
        self, executor_id: str, request: Any, response_type: Any, *, request_id: str | None = None
    ) -> str:
        request_id = request_id or uuid.uuid4().hex
        if self.immediate:
            self._root.request_info(executor_id, request, response_type, request_id=request_id)
        else:
            self._event((executor_id, "request", request, response_type, request_id))
        return request_id

    def commit(self) -> None:
        """Hand these effects to the parent record, in the order they were made."""
        parent = self._parent
        assert isinstance(parent, Effects)  # (an attempt's record commits to its invocation's)
        if self.outbox:
            parent.outbox.extend(self.outbox)
        if self.events is not None:
            replay(parent, self.events)
        if self.writes is not None:
            for eid, key, value in self.writes:
                parent.write_shared(eid, key, value)


def replay(target: RunState | Effects, events: Iterable[tuple[Any, ...]]) -> None:
    """Make the outputs, custom events and requests ``events`` hold (``(executor id, kind,
    data...)``, as a record keeps them) on ``target``, in order: the run's state applies
    them, a record keeps them."""
    for event in events:
        eid, kind = event[0], event[1]
        if kind == "output":
            target.emit_output(eid, event[2])
        elif kind == "custom":
            target.emit_custom(eid, event[2])
        else:
            target.request_info(eid, event[2], event[3], request_id=event[4])


def _in_order(
    records: list[Effects], field: str, rank: Mapping[str, int]
) -> tuple[list[Any], list[Effects] | None]:
    """The entries of ``field`` of every record, sorted once by (the rank of the executor
    that made it, the record's index, the order it was made in), with each one's record
    (``None`` when there is one record: then they are sorted in place, by rank)."""
    if len(records) == 1:
        entries = getattr(records[0], field) or []
        if len(entries) > 1:
            entries.sort(key=lambda entry: rank[entry[0]])
        return entries, None
    keyed: list[tuple[int, int, int, Any, Effects]] = []
    for record in records:
        index = record.index
        for seq, entry in enumerate(getattr(record, field) or ()):
            keyed.append((rank[entry[0]], index, seq, entry, record))
    keyed.sort(key=lambda item: item[:3])
    return [item[3] for item in keyed], [item[4] for item in keyed]


def apply_writes(
    state: RunState, records: list[Effects], rank: Mapping[str, int]
) -> tuple[list[Sent], list[Effects] | None]:
    """The barrier: apply what a superstep's invocations wrote to ``records``, in the
    canonical order — sorted once by the writer's ``rank`` in the graph, the index of its
    message, then the order it wrote in; never the order invocations finished in.

    Outputs, custom events and requests are made, then the shared-state writes committed
    (:meth:`RunState.commit_shared`: conflicts, reducers, races). The records are emptied.

    :return: the messages sent, in the canonical order, for the runner to route — with
        the record of each (``None``: all of them are the one record's).
    """
    events, _ = _in_order(records, "events", rank)
    writes, _ = _in_order(records, "writes", rank)
    sends, owners = _in_order(records, "outbox", rank)
    for record in records:
        record.outbox, record.events, record.writes = [], None, None
    if events:
        replay(state, events)
    if writes:
        state.commit_shared(writes)
    return sends, owners
