"""``WorkflowContext``: what a handler can do during a run.

One context exists per executor per run, so ``ctx.state`` is that executor's state in
that run, and two concurrent runs of one workflow never see each other's state.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol

import attrs
import typing_extensions

from ._errors import PatchError
from ._records import record_repr

if TYPE_CHECKING:
    import datetime

    from ._events import ContextSnapshot

__all__ = [
    "DELETED",
    "InvocationFailure",
    "OutsideCalls",
    "RequestResponse",
    "RunScope",
    "WorkflowContext",
    "add_answerer",
    "outside_call",
    "outside_calls",
    "remove_answerer",
]


#: The key of an executor's state under which :meth:`WorkflowContext.patched` records its
#: answers (patch name -> bool).
PATCHES_KEY = "__plait_patches__"


class _Deleted:
    """The value of a staged write that deletes its key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETED"


#: Stage this as a key's value to delete the key at the barrier (``ctx.delete_shared_state``).
DELETED: Any = _Deleted()


class RunScope(Protocol):
    """Where a context's effects go: the run's state itself, or the effects held back for
    an attempt or a concurrent delivery until they commit — or a plugin's scope, such as
    the recorder a placement runs a handler against on a worker. The context depends on
    this interface only, so the run state can build contexts without a cycle, and calls
    every member unconditionally: a scope that keeps no shared-state reads or never waits
    implements :meth:`note_read` and :meth:`shared_ready` as no-ops.
    """

    @property
    def run_id(self) -> str: ...

    @property
    def superstep(self) -> int: ...

    @property
    def shared(self) -> dict[str, Any]: ...

    #: The delivery id of the message being handled, when its executor takes messages on
    #: arrival (it names the invocation in ``ctx.idempotency_key`` and request ids);
    #: ``None`` when the message's index among the superstep's deliveries names it.
    delivery: str | None

    outbox: list[tuple[str, Any, str | None]]

    def note_read(self, executor_id: str, key: str) -> None:
        """``executor_id`` read shared-state ``key`` in this superstep (what a write of it
        by another executor in the same superstep races with)."""
        ...

    async def shared_ready(self) -> None:
        """Return once the shared state this superstep reads is committed (at once, but
        for a branch running ahead in the pipelined schedule)."""
        ...

    def emit_output(self, executor_id: str, data: Any) -> None: ...

    def emit_custom(self, executor_id: str, data: Any) -> None: ...

    def write_shared(self, executor_id: str, key: str, value: Any) -> None: ...

    def request_info(
        self, executor_id: str, request: Any, response_type: Any, *, request_id: str | None = None
    ) -> str: ...


@attrs.frozen(repr=False)
class RequestResponse:
    """An answer to ``ctx.request_info``, for executors that want to know which request
    it answers: an executor with a handler for ``RequestResponse`` gets this record;
    any other gets the bare value at its handler for the response type, unless the
    request's class sets ``respond_with_request = True`` (a plugin's request made in an
    executor's name, such as a budget's: the executor gets this record).
    """

    __repr__ = record_repr

    request_id: str
    request: Any
    value: Any


@attrs.frozen(repr=False)
class InvocationFailure:
    """What an error edge delivers: executor ``executor_id`` failed (after its retries) on
    ``message`` in ``superstep``, and the run goes on. ``error_type`` is the failure's class
    name (the cause's, for a handler that raised), ``error`` its message.
    """

    __repr__ = record_repr

    executor_id: str
    superstep: int
    error_type: str
    error: str
    message: Any = None


class OutsideCalls(Protocol):
    """What answers the calls a handler makes outside the process, for the invocation
    running in this task: a budget that reserves a model call's worst case, a tracer's
    span around it, a recorder that keeps each answer, a replayer that gives back the
    recorded one. Several answer one call, each around the next (:data:`outside_calls`);
    a plugin adds its own with :func:`add_answerer` (from its run observer's
    ``invocation_started``) and takes it away with :func:`remove_answerer` (in
    ``invocation_finished``). Executors that reach outside go through
    :func:`outside_call`, and :meth:`WorkflowContext.now` and :meth:`WorkflowContext.random`
    through :meth:`value`.

    An answerer may say where it sits among the others with a ``place`` attribute (read
    by :func:`add_answerer`; ``"watch"`` when it has none): ``"decide"`` for what may
    refuse a call or change its request before it is made (a budget), outermost;
    ``"watch"`` for what sees the request and the answer (a tracer); ``"answer"`` for what
    may answer without making the call (a recorder, a replay), so that what decides and
    what watches see a replayed call too; ``"make"`` for what makes the call in the real
    one's stead (a test's cassette standing in for a model), innermost of all, so that a
    recorder records what it gives.
    """

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Answer the outside call ``request`` (JSON-ready: everything its answer depends
        on) of ``kind`` (``"llm.prompt"``, ``"http"``, ``"shell"``): ``await
        invoke(request)`` passes it on to the next answerer, and the last one makes it for
        real; an answerer may pass on a changed request (a new dict: a ``degrade`` budget
        changes ``request["model"]``). The answer must be JSON-ready."""
        ...

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        """Answer a value the process makes itself (``"now"``, ``"random"``):
        ``produce()`` passes it on to the next answerer, and the last one makes it
        (JSON-ready)."""
        ...


#: The :class:`OutsideCalls` answering the calls of the invocation running in this task,
#: outermost first; empty: every outside call is made for real (what a run nobody
#: answers pays: one look-up per call). Change it with :func:`add_answerer` and
#: :func:`remove_answerer`.
outside_calls: contextvars.ContextVar[tuple[OutsideCalls, ...]] = contextvars.ContextVar(
    "plait.outside_calls", default=()
)

#: the places of answerers among those of one invocation, outermost first
_PLACES = ("decide", "watch", "answer", "make")


def _place(answerer: OutsideCalls) -> int:
    place = getattr(answerer, "place", "watch")
    try:
        return _PLACES.index(place)
    except ValueError:
        raise ValueError(
            f"{type(answerer).__name__}.place must be one of {', '.join(_PLACES)}, got {place!r}"
        ) from None


def add_answerer(answerer: OutsideCalls) -> None:
    """Let ``answerer`` answer the outside calls made in this task (and the tasks it
    starts) from now on: after those of its place or an outer one (its ``place``
    attribute, see :class:`OutsideCalls`), before those of an inner one. Which plugin
    adds its answerer first does not matter: a budget is asked before a tracer, and both
    before a recorder.

    :raises ValueError: the answerer's ``place`` is not one of ``decide``, ``watch``,
    ``answer``, ``make``.
    """
    place = _place(answerer)
    chain = outside_calls.get()
    at = len(chain)
    while at and _place(chain[at - 1]) > place:
        at -= 1
    outside_calls.set((*chain[:at], answerer, *chain[at:]))


def remove_answerer(answerer: OutsideCalls) -> None:
    """Stop ``answerer`` answering the outside calls of this task; the others keep their
    order. It does not depend on the order answerers were added in (observers that add
    theirs in ``invocation_started`` may remove them in any order); an answerer that is
    not there is left alone."""
    chain = outside_calls.get()
    if any(one is answerer for one in chain):
        outside_calls.set(tuple(one for one in chain if one is not answerer))


async def outside_call(
    kind: str,
    request: Mapping[str, Any],
    invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
) -> Any:
    """Make a call that leaves the process (a model call, an HTTP request, a program run):
    ``await invoke(request)``, unless plugins answer calls for the invocation running in
    this task (:data:`outside_calls`): the call is passed through each, outermost first
    (each may reserve it, trace it, record its answer or give back a recorded one, or
    pass on a changed request), and the innermost ``invoke`` makes it.

    :param kind: what sort of call it is (``"llm.prompt"``, ``"http"``, ``"shell"``).
    :param request: JSON-ready, everything the answer depends on (the record's key).
    :param invoke: makes the call for the request it is given (the one passed on by the
        answerers: use its fields that an answerer may change, such as an
        ``llm.prompt`` call's ``model``); its answer must be JSON-ready.
    :raises Exception: what ``invoke`` or an answerer raised. An answerer that refuses a
        call (a spent budget) raises an error whose class sets ``refuses_call = True``:
        a caller that wraps the errors of its call in its own lets that one through.
    """
    return await _call_through(outside_calls.get(), 0, kind, request, invoke)


async def _call_through(
    chain: tuple[OutsideCalls, ...],
    at: int,
    kind: str,
    request: Mapping[str, Any],
    invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
) -> Any:
    """The call passed to ``chain[at]``, whose ``invoke`` passes it on to the next."""
    if at == len(chain):
        return await invoke(request)

    async def inner(passed: Mapping[str, Any]) -> Any:
        return await _call_through(chain, at + 1, kind, passed, invoke)

    return await chain[at].call(kind, request, inner)


def _value_through(chain: tuple[OutsideCalls, ...], kind: str, produce: Callable[[], Any]) -> Any:
    """The value asked of each answerer of ``chain`` in turn, the innermost ``produce``
    (``produce()`` itself when nobody answers)."""
    for answerer in reversed(chain):
        produce = functools.partial(answerer.value, kind, produce)
    return produce()


class _SharedView(Mapping[str, Any]):
    """``ctx.shared``: the committed shared state, read-only, noting which keys are read."""

    __slots__ = ("_eid", "_note", "_shared")

    def __init__(self, shared: dict[str, Any], eid: str, note: Callable[[str, str], None]) -> None:
        self._shared, self._eid, self._note = shared, eid, note

    def __getitem__(self, key: str) -> Any:
        self._note(self._eid, key)
        return self._shared[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._note(self._eid, key)
        return key in self._shared

    def __iter__(self) -> Iterator[str]:
        return iter(self._shared)

    def __len__(self) -> int:
        return len(self._shared)

    def __repr__(self) -> str:
        return f"<shared state {self._shared!r}>"


OutT = typing_extensions.TypeVar("OutT", default=Any)
WorkflowOutT = typing_extensions.TypeVar("WorkflowOutT", default=typing_extensions.Never)


class WorkflowContext(Generic[OutT, WorkflowOutT]):
    """The handle a handler gets: ``WorkflowContext[Out, WorkflowOut]``.

    ``Out`` is the type of messages it sends, ``WorkflowOut`` the type of workflow
    outputs it yields (``Never`` when it yields none). The builder reads both to check
    the edges at build time.
    """

    __slots__ = ("_asked", "_attempt", "_drawn", "_index", "_run", "executor_id", "state")

    def __init__(self, run: RunScope, executor_id: str, state: dict[str, Any]) -> None:
        self._run = run
        self.executor_id = executor_id
        #: This executor's state in this run (JSON-ready values, checkpointed).
        self.state = state
        self._attempt = 1
        self._index = 0
        #: (superstep, message index or delivery id, requests made so far) of the
        #: invocation asking
        self._asked: tuple[int, int | str, int] = (0, 0, 0)
        #: (idempotency key, attempt, numbers drawn so far) of the invocation drawing
        self._drawn: tuple[str, int, int] = ("", 0, 0)

    @property
    def attempt(self) -> int:
        """Which attempt of this invocation is running (1-based; above 1 under a retry
        policy).
        """
        return self._attempt

    @property
    def idempotency_key(self) -> str:
        """A key naming this invocation — run, superstep, executor and the index of the
        message among the executor's deliveries of the superstep; for an executor that
        takes its messages on arrival (``max_concurrency`` above 1, or ``order="arrival"``),
        whose index is not known when a message arrives in the pipelined schedule, the
        message's delivery id instead (a digest of its sender, the sender's own message and
        the order of its sends). It is the same in either schedule, on every attempt and
        after a crash and resume (the superstep is re-run from its checkpoint), so an
        executor with side effects can use it to de-duplicate them.
        """
        run = self._run
        delivery = run.delivery
        last = delivery if delivery is not None else self._index
        return f"{run.run_id}:{run.superstep}:{self.executor_id}:{last}"

    @property
    def run_id(self) -> str:
        """The id of the run this handler is part of."""
        return self._run.run_id

    def patched(self, name: str) -> bool:
        """Whether this run takes the new branch of patch ``name`` (Temporal's and DBOS's
        ``patched``): deploy new code as ``if ctx.patched("new-ranker"): new() else: old()``
        while runs started on the old code are still in flight.

        True when this executor reaches the patch before it has run in this run (its state
        holds nothing else), false when it ran before, on code without the patch (its
        state holds something, but no answer for ``name``). The answer is recorded in the
        executor's state (under ``"__plait_patches__"``), which every checkpoint keeps:
        the run always takes the same branch, across retries, resumes and processes. An
        executor whose ``snapshot_state`` drops that key forgets its answers.
        """
        record = self.state.get(PATCHES_KEY)
        if isinstance(record, dict) and name in record:
            return bool(record[name])
        answer = all(key == PATCHES_KEY for key in self.state)
        self.state[PATCHES_KEY] = {**(record if isinstance(record, dict) else {}), name: answer}
        return answer

    def deprecate_patch(self, name: str) -> None:
        """Patch ``name``'s old branch is gone: this run takes the new one (recorded as
        :meth:`patched` records it).

        :raises PatchError: this run answered ``False`` to :meth:`patched` for ``name``:
            it took the old branch and needs the code that still has it.
        """
        record = self.state.get(PATCHES_KEY)
        if isinstance(record, dict) and record.get(name) is False:
            raise PatchError(
                f"patch {name!r} is deprecated, but run {self.run_id} took its old branch in "
                f"executor {self.executor_id!r}: resume it with code that still has "
                f"ctx.patched({name!r})"
            )
        self.state[PATCHES_KEY] = {**(record if isinstance(record, dict) else {}), name: True}

    @property
    def superstep(self) -> int:
        """The current superstep (1-based)."""
        return self._run.superstep

    @property
    def shared(self) -> Mapping[str, Any]:
        """State shared by every executor of this run, as committed at the end of the last
        superstep: a read-only view. Write with :meth:`set_shared_state`, whose writes are
        staged and visible from the next superstep.

        Reading a key another executor writes in the same superstep warns
        (:class:`~plait.SharedStateRaceWarning`; an error under ``strict=True``).
        """
        return _SharedView(self._run.shared, self.executor_id, self._run.note_read)

    async def send_message(self, message: OutT, target: str | None = None) -> None:
        """Send ``message`` along this executor's outgoing edges (routed next superstep).

        :param target: deliver only to this executor id, which must be a target of one of
            this executor's edge groups.
        """
        self._run.outbox.append((self.executor_id, message, target))

    async def yield_output(self, output: WorkflowOutT) -> None:
        """Yield ``output`` as an output of the whole workflow."""
        self._run.emit_output(self.executor_id, output)

    async def add_event(self, data: Any) -> None:
        """Emit a :class:`~plait.CustomEvent` carrying ``data``."""
        self._run.emit_custom(self.executor_id, data)

    async def get_shared_state(self, key: str, default: Any = None) -> Any:
        """Read a shared-state key, as committed at the end of the last superstep (a key
        another executor writes in this superstep warns: see :attr:`shared`). In the
        pipelined schedule, a branch running ahead waits here until the earlier
        supersteps' writes are committed, so it reads what the superstep schedule would.
        """
        run = self._run
        await run.shared_ready()
        run.note_read(self.executor_id, key)
        return run.shared.get(key, default)

    async def set_shared_state(self, key: str, value: Any) -> None:
        """Write a shared-state key. The write is staged: every executor (this one too)
        sees it from the next superstep, whatever order this superstep's handlers finish
        in. Two executors writing one key in one superstep fail the run with a
        :class:`~plait.SharedStateConflictError`, unless the run declares a reducer
        for the key (``shared_reducers={key: reducer}``), which folds every write in, in
        the canonical order.
        """
        self._run.write_shared(self.executor_id, key, value)

    async def delete_shared_state(self, key: str) -> None:
        """Delete a shared-state key, staged like :meth:`set_shared_state`: the key is gone
        from the next superstep on (a write and a delete of one key by two executors in
        one superstep conflict as two writes do).
        """
        self._run.write_shared(self.executor_id, key, DELETED)

    async def request_info(self, request: Any, response_type: Any) -> str:
        """Ask the outside world for input; the run ends ``idle_with_pending_requests``.

        The answer arrives later (``Workflow.resume(..., responses={request_id: value})``)
        as a message of ``response_type`` to this executor's handler for that type — or as
        a :class:`RequestResponse` when the executor has a handler for that.

        :return: the request id. It derives from the run, the superstep, this executor,
            the message's index among its deliveries (its delivery id, for an executor
            that takes messages on arrival) and the number of requests the invocation
            made before, so it is the same whatever order handlers finish in,
            on every attempt and after a resume.
        """
        run = self._run
        step, index, made = self._asked
        delivery = run.delivery
        current = delivery if delivery is not None else self._index
        if (step, index) != (run.superstep, current):
            step, index, made = run.superstep, current, 0
        self._asked = (step, index, made + 1)
        seed = f"{run.run_id}:{step}:{self.executor_id}:{index}:{made}"
        import hashlib  # here: OpenSSL's start-up is paid by runs that ask, not by `import plait`

        request_id = hashlib.sha256(seed.encode()).hexdigest()[:32]
        return run.request_info(self.executor_id, request, response_type, request_id=request_id)

    def now(self) -> datetime.datetime:
        """The current time, an aware :class:`datetime.datetime` in UTC: use it instead of
        the clock. A recorded run keeps it, and a replay of the run gets it back, so
        code that reads the time replays identically.
        """
        import datetime  # here: a handler that never asks the time never imports it

        stamp = _value_through(outside_calls.get(), "now", _clock)
        return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)

    def random(self) -> float:
        """A number in ``[0, 1)``: use it instead of :mod:`random`. The numbers are drawn
        from the invocation (its idempotency key, its attempt and how many it drew
        before), so they are the same on every run of it and after a resume; a recorded
        run keeps them too, and a replay gets them back.
        """
        key, attempt, drawn = self._drawn
        current = self.idempotency_key
        if (key, attempt) != (current, self._attempt):
            key, attempt, drawn = current, self._attempt, 0
        self._drawn = (key, attempt, drawn + 1)
        seed = f"{key}:{attempt}:{drawn}"

        def draw() -> float:
            import hashlib  # here: OpenSSL's start-up is paid by runs that draw

            digest = hashlib.blake2b(seed.encode(), digest_size=8).digest()
            return int.from_bytes(digest, "big") / 2**64

        return float(_value_through(outside_calls.get(), "random", draw))

    def snapshot(self) -> ContextSnapshot:
        """What this context tells a handler about the invocation it runs (its run,
        superstep, attempt and the message's index or delivery id), to build the same
        context elsewhere with :meth:`from_snapshot`: what a placement that runs handlers
        in another process sends with the message.
        """
        from ._events import ContextSnapshot  # a run-time record: not made by a build

        run = self._run
        return ContextSnapshot(
            executor_id=self.executor_id,
            run_id=run.run_id,
            superstep=run.superstep,
            attempt=self._attempt,
            index=self._index,
            delivery=run.delivery,
        )

    @classmethod
    def from_snapshot(
        cls, snapshot: ContextSnapshot, scope: RunScope, state: dict[str, Any]
    ) -> WorkflowContext[Any, Any]:
        """A context for the invocation ``snapshot`` describes, writing to ``scope``, with
        ``state`` as the executor's state: its attempt, idempotency key and request ids
        are those of the context the snapshot was taken of.

        :param scope: where the handler's effects go (a plugin's recorder); its
            ``run_id``, ``superstep`` and ``delivery`` must be the snapshot's.
        :raises ValueError: the scope is not the snapshot's run, superstep or delivery.
        """
        seen = (scope.run_id, scope.superstep, scope.delivery)
        wanted = (snapshot.run_id, snapshot.superstep, snapshot.delivery)
        if seen != wanted:
            raise ValueError(
                f"the scope of executor {snapshot.executor_id!r} is run, superstep and "
                f"delivery {seen!r}, but the snapshot's are {wanted!r}"
            )
        ctx: WorkflowContext[Any, Any] = cls(scope, snapshot.executor_id, state)
        ctx._attempt = snapshot.attempt
        ctx._index = snapshot.index
        return ctx

    def __repr__(self) -> str:
        return f"<WorkflowContext {self.executor_id!r} run={self._run.run_id}>"


def _clock() -> float:
    """Seconds since the epoch (what :meth:`WorkflowContext.now` reads)."""
    import time

    return time.time()
