"""The runner's observation seam: what it tells a run's :class:`~plait.spi.RunObserver`
(the interface, in :mod:`plait._observer`), when, and how a message's senders are tracked
through routing without copying or changing it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ._observer import Invocation, RunObserver

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._routing import EdgeRunner
    from ._state import Inbox, RunState

__all__ = ["Observation", "note_attempt", "note_retry"]


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
