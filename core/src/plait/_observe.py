"""Observing runs: the per-invocation interface tracing and metrics plugins implement.

A plugin that wants to see inside runs implements the ``plait_observe_run`` hook and
returns a :class:`RunObserver` for each run it cares about (or ``None``). The runner then
tells that observer, in the task that does the work:

- when each superstep starts and ends (:meth:`RunObserver.superstep_started`,
  :meth:`RunObserver.superstep_finished`) — a superstep lasts from its first invocation
  until the next superstep starts or the run ends, so routing and the superstep's
  checkpoint are part of it;
- when each executor invocation starts (:meth:`RunObserver.invocation_started`, with an
  :class:`Invocation` record), is retried (:meth:`RunObserver.invocation_retrying`) and
  ends (:meth:`RunObserver.invocation_finished`, with the last attempt and a status);
- when the run ends (:meth:`RunObserver.run_finished`).

Messages are never copied or changed for observation: what an invocation sent is tracked
beside the messages, through routing, so :attr:`Invocation.senders` holds the handles the
observer returned for the invocations whose messages make up this delivery (several for a
fan-in). A tracing plugin turns them into span links.

- when a handler asks for outside input (:meth:`RunObserver.request`) and when a durable
  run writes a checkpoint (:meth:`RunObserver.checkpoint_written`).

This is the one observation API: the ``plait_superstep_finished`` and
``plait_run_finished`` hooks are told through it too (:class:`plait.facade.HookObserver`).
The runner calls the observer at its seams through an :class:`Observation`; when nobody
observes a run, none of this exists and the run pays nothing for it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio

if TYPE_CHECKING:
    from ._graph import CompiledGraph
    from ._runner import Inbox
    from ._state import RunState

__all__ = ["Invocation", "Observation", "RunObserver"]


class Invocation:
    """One executor invocation, as :meth:`RunObserver.invocation_started` sees it.

    :param executor_id: the executor invoked.
    :param superstep: the superstep it runs in (1-based).
    :param index: the position of its message among the executor's deliveries of that
        superstep (0 for the first; what ``ctx.idempotency_key`` ends with).
    :param message: the message delivered (the object itself: never copy or change it).
    :param senders: the handles this observer returned from ``invocation_started`` for the
        invocations that sent the message — one, several for a merged fan-in, none for the
        run's input, an answer to a request or the first superstep of a resumed run.

    .. versionadded:: 0.1
    """

    __slots__ = ("executor_id", "index", "message", "senders", "superstep")

    def __init__(
        self,
        executor_id: str,
        superstep: int,
        index: int,
        message: Any,
        senders: tuple[Any, ...],
    ) -> None:
        self.executor_id = executor_id
        self.superstep = superstep
        self.index = index
        self.message = message
        self.senders = senders

    def __repr__(self) -> str:
        return (
            f"Invocation(executor_id={self.executor_id!r}, superstep={self.superstep}, "
            f"index={self.index}, senders={len(self.senders)})"
        )


class RunObserver(Protocol):
    """What the runner tells an observer about one run.

    Subclass it to inherit no-op methods and override what you need. Every method is
    called synchronously, in the event loop's thread, in the task doing the work (so
    context variables set in ``invocation_started`` are visible to the handler and are
    reset by ``invocation_finished``): it must be quick, must not block and must not
    raise — an exception from an observer fails the run.

    Statuses of an invocation: ``"ok"``, ``"failed"`` (its last attempt raised; an error
    edge may still take the failure) or ``"cancelled"`` (a sibling failed, or the run was
    cancelled). Statuses of a run: those of :class:`plait.RunStatus`.

    .. versionadded:: 0.1
    """

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        """Superstep ``superstep`` starts, with deliveries for ``executor_ids``."""
        return None

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        """Superstep ``superstep`` ended: the next one starts, or the run ends (``error``
        is what ended the run in this superstep, if anything did)."""
        return None

    def invocation_started(self, invocation: Invocation) -> Any:
        """An invocation starts; return a handle (anything) for the calls below and for
        later :attr:`Invocation.senders`."""
        return None

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        """Attempt ``attempt`` failed with ``error``; the next starts in ``delay`` seconds."""
        return None

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        """The invocation ended after ``attempt`` attempts with ``status``; ``error`` is
        the run error it raised (its ``__cause__`` is the handler's own exception)."""
        return None

    def run_finished(self, status: str, error: BaseException | None) -> None:
        """The run ended with ``status``; ``error`` is its error (``None`` when it was
        cancelled or interrupted: its status is then ``failed``)."""
        return None

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        """Executor ``executor_id`` asked for outside input (``ctx.request_info``): the
        request ``request_id`` is pending from ``superstep`` on.

        .. versionadded:: 0.1
        """
        return None

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        """A durable run handed checkpoint ``checkpoint_id`` of ``superstep`` (run status
        ``status``) to its store (in ``async`` durability, queued for the writer).

        .. versionadded:: 0.1
        """
        return None

    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        """JSON-ready data to keep with a durable run's checkpoints (under their
        ``metadata["observers"]``), asked once as the run starts: a tracer's trace context,
        say. A run resumed from those checkpoints gets it back as ``resumed`` in
        ``plait_observe_run`` — read back from a store, so untrusted: check it."""
        return None


def combine(observers: Sequence[RunObserver]) -> RunObserver | None:
    """One observer for what the ``plait_observe_run`` implementations returned."""
    if not observers:
        return None
    if len(observers) == 1:
        return observers[0]
    return _ObserverGroup(tuple(observers))


class _ObserverGroup(RunObserver):
    """Several observers of one run: each gets its own handles back."""

    def __init__(self, observers: tuple[RunObserver, ...]) -> None:
        self.observers = observers

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        for observer in self.observers:
            observer.superstep_started(superstep, executor_ids)

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        for observer in self.observers:
            observer.superstep_finished(superstep, error)

    def invocation_started(self, invocation: Invocation) -> Any:
        inv = invocation
        return tuple(
            observer.invocation_started(
                Invocation(
                    inv.executor_id,
                    inv.superstep,
                    inv.index,
                    inv.message,
                    tuple(handles[i] for handles in inv.senders),
                )
            )
            for i, observer in enumerate(self.observers)
        )

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        for observer, own in zip(self.observers, handle):
            observer.invocation_retrying(own, attempt, delay, error)

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        # last started, first finished: context variables they set unwind in order
        for observer, own in reversed(list(zip(self.observers, handle))):
            observer.invocation_finished(own, attempt, status, error)

    def run_finished(self, status: str, error: BaseException | None) -> None:
        for observer in self.observers:
            observer.run_finished(status, error)

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        for observer in self.observers:
            observer.request(executor_id, request_id, superstep)

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        for observer in self.observers:
            observer.checkpoint_written(checkpoint_id, superstep, status)

    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        merged: dict[str, Any] = {}
        for observer in self.observers:
            merged.update(observer.checkpoint_metadata() or {})
        return merged or None


# -- inside the kernel: the runner's seam -------------------------------------------------


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

    :param invoke: the runner's plain invocation, which :meth:`invoke` wraps.
    """

    def __init__(
        self,
        graph: CompiledGraph,
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
        for _gid, edge_runner in graph.stateful:
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
