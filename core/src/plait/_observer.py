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

An observer may have the run wait for outside input at a superstep boundary: its
``superstep_started`` raises :class:`AskFirst`; the superstep does not run, the request is
the run's own (``executor_id`` :data:`RUN_REQUEST`), and its answer, on
resume, goes to the observer (:meth:`RunObserver.answered`), not to an executor.

This is the one observation API (``plait_observe_run`` the one observation hook).
This module is the interface (what a plugin implements, in the kernel's base layer); the
runner calls the observer explicitly at the points of its loop (a superstep begins, an
invocation starts and ends, the supersteps end), and when nobody observes a run, none of
that happens and the run pays one test per superstep for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["RUN_REQUEST", "AskFirst", "Invocation", "RunObserver", "combine"]

#: the ``executor_id`` of a request no executor owns: the run's own, asked by its observer
#: at a superstep boundary (:class:`AskFirst`); its answer goes to the observer
RUN_REQUEST = "(run)"


class AskFirst(Exception):
    """Raised by :meth:`RunObserver.superstep_started` to have the run wait for outside
    input before that superstep: the superstep does not run (its deliveries stay pending,
    nothing of it is counted), the run ends ``idle_with_pending_requests`` with
    ``request`` pending under ``request_id`` (owned by no executor), and a durable run's
    checkpoint holds both. A resume's answer (of ``response_type``) reaches the observer
    (:meth:`RunObserver.answered`), and the run goes on from that boundary.

    :param request: the request (a checkpoint keeps it: register its type).
    :param response_type: the answer's type.
    :param request_id: the request's id: the same for the same run at the same point.
    """

    def __init__(self, request: Any, response_type: Any, request_id: str) -> None:
        super().__init__(f"waiting for an answer to request {request_id}")
        self.request = request
        self.response_type = response_type
        self.request_id = request_id


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
    """

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        """Superstep ``superstep`` starts, with deliveries for ``executor_ids`` (raise
        :class:`AskFirst` to wait for outside input before it; any other error fails the
        run, checkpointed at the superstep before)."""
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
        """
        return None

    def answered(self, response: Any) -> bool:
        """A resume answered a request this run's observers asked (:class:`AskFirst`), with
        ``response`` (a :class:`plait.RequestResponse`), before its first superstep. Return
        ``True`` to take it (the request is no longer pending); an observer that did not
        ask it returns ``False``, and one that takes it but keeps it pending (a refusal the
        run fails on) too."""
        return False

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        """A durable run handed checkpoint ``checkpoint_id`` of ``superstep`` (run status
        ``status``) to its store (in ``async`` durability, queued for the writer).
        """
        return None

    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        """JSON-ready data to keep with a durable run's checkpoints (under their
        ``metadata["observers"]``), asked at each checkpoint: a tracer's trace context, a
        budget's ledger as of that checkpoint. A run resumed from those checkpoints gets it
        back as ``resumed`` in ``plait_observe_run`` — read back from a store, so
        untrusted: check it."""
        return None

    def usage(self) -> Mapping[str, Any] | None:
        """What the run spent, asked once as it ends, for
        :attr:`plait.WorkflowRunResult.usage` (``None``: this observer meters nothing)."""
        return None

    def checkpoint_section(self) -> Mapping[str, Any] | None:
        """JSON-ready data to keep in the checkpoint a durable run takes now (under its
        state's ``observed`` section; large values content-addressed, so a value kept
        before costs a reference), asked as each checkpoint is taken: what the observer
        saw since the last one — a recorder's outside calls, say. Return ``None`` when
        there is nothing new."""
        return None

    def status(self) -> Mapping[str, str] | None:
        """A few words each about the run as it is now, for a live display
        (:attr:`plait.spi.RunWatch.status`): ``{"spend": "$0.12/$2.00"}``. Asked a few
        times a second while the run goes, from the display's thread: it only reads (plain
        attributes, never a collection another thread changes) and must be quick. ``None``
        (the default): nothing to show."""
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

    def answered(self, response: Any) -> bool:
        taken = False
        for observer in self.observers:
            said = getattr(observer, "answered", None)  # (one that asks nothing need not)
            taken = (said is not None and said(response)) or taken
        return taken

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        for observer in self.observers:
            observer.checkpoint_written(checkpoint_id, superstep, status)

    def usage(self) -> Mapping[str, Any] | None:
        return self._merged("usage")

    def checkpoint_metadata(self) -> Mapping[str, Any] | None:
        return self._merged("checkpoint_metadata")

    def checkpoint_section(self) -> Mapping[str, Any] | None:
        return self._merged("checkpoint_section")

    def status(self) -> Mapping[str, str] | None:
        return self._merged("status")

    def _merged(self, asked: str) -> dict[str, Any] | None:
        """What the observers answer to ``asked()``, one mapping (an observer without the
        method, older than it, says nothing)."""
        merged: dict[str, Any] = {}
        for observer in self.observers:
            said = getattr(observer, asked, None)
            merged.update((said() if said is not None else None) or {})
        return merged or None
