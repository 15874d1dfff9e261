"""Durable runs: writing checkpoints during a run, and rebuilding a run from them.

``Checkpoint.state`` is the run's whole state (:mod:`plait_durable._layout` types its
layout, format version 1). In a store that keeps blobs its values are content-addressed
(:mod:`plait_durable._blobs`): a value an earlier checkpoint of the run holds costs a
reference, and the sections that grow (shared state, outputs, executor state, long lists
and strings) are trees whose unchanged parts are shared, so a checkpoint's size follows
what the run changed, not everything it holds. Resuming reads the checkpoint and the
blobs it names (:mod:`plait_durable._resume`, imported by the first resume or read of a
stored run). (Deltas an earlier Plait wrote are read too: :mod:`plait_durable._legacy`.)

Write order: a checkpoint is written with its new blobs, never before them (``sync``
awaits each save before the next superstep; ``async`` saves in order from one background
writer), so no checkpoint ever points at missing data.

A failed run (:class:`~plait.WorkflowRunError`) ends with a checkpoint of status
``failed`` in every durability mode, whose ``metadata["error"]`` records
``{"executor", "type", "message", "superstep"}`` (:func:`failure_record`). Its pending
state is that of the last good superstep, so resuming it re-runs the superstep that
failed: in ``sync`` and ``async`` modes it is a copy of the last checkpoint written, in
``exit`` mode the only checkpoint of the run.

One writer per run: a durable run takes its run's lease (:class:`~plait_durable.Lease`) before it
writes anything, renews it every third of ``lease_ttl`` while it lives, saves every
checkpoint with the lease's fencing token, and releases it at the end. A second worker
running or resuming the same live run fails at once with
:class:`~plait_durable.RunLeaseError`.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import attrs
from plait import CheckpointError, ExecutorFailedError, RunStatus, WorkflowRunError
from plait.spi import RunnerView, RunOptions, RunState, combine, make_runner

from ._checkpointer import Checkpointer
from ._errors import RunLeaseError
from ._fingerprint import fingerprint_of
from ._options import DurableOptions
from .checkpoint import Checkpoint, CheckpointStore, Lease, open_store

if TYPE_CHECKING:
    from plait.spi import CompiledGraph, PendingRequest

    from ._journal import RunJournal
    from ._resume import Resumable

__all__ = [
    "Checkpointer",
    "Checkpoints",
    "failure_record",
    "opened_store",
    "run_checkpointed",
]

#: The longest error message a failed checkpoint records (characters).
_MAX_ERROR_MESSAGE = 2000
#: The most of a traceback a failed checkpoint records (characters, its end kept).
_MAX_TRACEBACK = 8000


@asynccontextmanager
async def opened_store(store: str | CheckpointStore) -> AsyncIterator[CheckpointStore]:
    """The store ``store`` is, or the one its URL names, for the block: a URL is opened
    (:func:`~plait_durable.checkpoint.open_store`) on entering and closed on leaving,
    however the block ends; a store object is neither opened nor closed (its owner's).
    The one place a store URL is opened for a run, a resume or a read of a stored run."""
    if not isinstance(store, str):
        yield store
        return
    opened = open_store(store)
    try:
        yield opened
    finally:
        with anyio.CancelScope(shield=True):
            await opened.aclose()


# -- running with checkpoints -----------------------------------------------------------------


async def run_checkpointed(
    graph: CompiledGraph,
    state: RunState,
    inbox: dict[str, list[Any]],
    opts: RunOptions,
    *,
    live: bool,
    parent_id: str | None,
    resumed: Resumable | None = None,
) -> RunStatus:
    """Run to the end, writing checkpoints to ``checkpoint`` as ``durability`` says (the
    run's :class:`DurableOptions`), holding the run's lease throughout (``resumed``: what
    :func:`load_run` read, when the run goes on from a stored checkpoint)."""
    expected = resumed.latest if resumed is not None else None
    async with opened_store(opts.of(DurableOptions).checkpoint) as store:
        ttl = opts.of(DurableOptions).lease_ttl
        lease = await store.acquire_lease(state.run_id, ttl=ttl)
        try:
            if expected is not None and expected == (state.run_id, parent_id):
                await _check_still_latest(store, state.run_id, parent_id)
            return await _run_leased(
                graph, state, inbox, opts, store, lease, ttl, live, parent_id, resumed
            )
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await store.release_lease(lease)
                except CheckpointError:
                    pass  # it expires on its own


async def _check_still_latest(store: CheckpointStore, run_id: str, parent_id: str | None) -> None:
    latest = await store.latest(run_id)
    if latest is not None and latest.checkpoint_id != parent_id:
        raise RunLeaseError(
            f"run {run_id!r} was written by another worker while this one was resuming it "
            f"(its latest checkpoint is now {latest.checkpoint_id!r}, not {parent_id!r}); "
            "resume it again"
        )


async def _run_leased(
    graph: CompiledGraph,
    state: RunState,
    inbox: dict[str, list[Any]],
    opts: RunOptions,
    store: CheckpointStore,
    lease: Lease,
    ttl: float,
    live: bool,
    parent_id: str | None,
    resumed: Resumable | None,
) -> RunStatus:
    durable = opts.of(DurableOptions)
    mode = durable.durability
    journal: RunJournal | None = None
    saving_to = store
    if durable.journal:  # an observer of its own, and the store as the checkpointer sees it
        from ._journal import JournaledStore, RunJournal, journal_store  # (only when kept)

        journal = RunJournal()
        state.observer = combine([o for o in (state.observer, journal) if o is not None])
        saving_to = cast(CheckpointStore, JournaledStore(journal_store(store), journal))
    blobs_read = resumed.blobs if resumed is not None else None
    checkpointer = Checkpointer(
        saving_to, graph, mode=mode, parent_id=parent_id, resumed=blobs_read
    )
    checkpointer.lease = lease
    checkpointer.metadata = durable.checkpoint_metadata
    checkpointer.observer = state.observer  # asked for its metadata at each checkpoint
    checkpointer.state = state
    # a plugin writes to the run's journal as it goes (plait-budgets' reservations), in the
    # tasks of this run's invocations, when the store keeps one
    from ._calljournal import RUN_JOURNAL, RunJournalWriter
    from ._runindex import EventJournal

    writer = RunJournalWriter(store, state.run_id, checkpointer)
    journal_token = RUN_JOURNAL.set(writer if isinstance(store, EventJournal) else None)
    try:
        return await _run_journaled(
            graph, state, inbox, opts, store, checkpointer, journal, ttl, live, mode
        )
    finally:
        RUN_JOURNAL.reset(journal_token)


async def _run_journaled(
    graph: CompiledGraph,
    state: RunState,
    inbox: dict[str, list[Any]],
    opts: RunOptions,
    store: CheckpointStore,
    checkpointer: Checkpointer,
    journal: RunJournal | None,
    ttl: float,
    live: bool,
    mode: str,
) -> RunStatus:
    """:func:`_run_leased`'s run, once its checkpointer is ready."""
    # the runner commits each superstep (and a pipelined run's consistent cuts) through it
    commit = checkpointer if mode != "exit" else None
    runner = make_runner(graph, opts, state, live=live, commit=commit)
    failure: Exception | None = None
    status = RunStatus.FAILED
    async with anyio.create_task_group() as tg:
        # the renewer ends when the run does: told by an event, not cancelled (a cancel
        # scope's cancel formats the calling task, costing more than a short run's
        # checkpoints)
        ended = anyio.Event()
        tg.start_soon(checkpointer.renew, ttl, ended)
        try:
            if mode != "async":
                status = await _checkpointed(runner, checkpointer, inbox)
            else:
                send, receive = anyio.create_memory_object_stream[Checkpoint](math.inf)
                checkpointer.attach(send)
                tg.start_soon(checkpointer.writer, receive)
                async with send:
                    status = await _checkpointed(runner, checkpointer, inbox)
        except Exception as exc:  # raised below, outside the task group, unwrapped
            failure = exc
        finally:
            ended.set()
    if journal is not None and checkpointer.error is None:
        from ._journal import journal_store

        journal.finished(state.superstep, RunStatus.FAILED.value if failure else status.value)
        try:
            await journal.flush(journal_store(store), state.run_id, checkpointer.lease)
        except CheckpointError:
            if failure is None:
                raise
    if failure is not None:
        raise failure
    if checkpointer.error is not None:
        raise checkpointer.error
    return status


def failure_record(exc: WorkflowRunError, superstep: int) -> dict[str, Any]:
    """What a failed run's last checkpoint records as ``metadata["error"]``: the executor,
    the error's type and message (an executor's own exception when it raised one) and the
    superstep that failed, and the traceback (text, its end kept) a run inspector
    shows."""
    cause = exc.__cause__ if isinstance(exc, ExecutorFailedError) else None
    failure = cause or exc
    message = str(failure)
    if len(message) > _MAX_ERROR_MESSAGE:
        message = message[: _MAX_ERROR_MESSAGE - 1] + "…"
    return {
        "executor": exc.executor_id,
        "type": type(failure).__name__,
        "message": message,
        "superstep": exc.superstep if exc.superstep is not None else superstep,
        "traceback": _traceback_text(failure),
    }


def _traceback_text(failure: BaseException) -> str:
    import traceback  # only when a run fails

    text = "".join(traceback.format_exception(type(failure), failure, failure.__traceback__))
    return text if len(text) <= _MAX_TRACEBACK else "…" + text[-(_MAX_TRACEBACK - 1) :]


async def _checkpointed(runner: RunnerView, checkpointer: Checkpointer, inbox: Any) -> RunStatus:
    state = runner.state
    if checkpointer.mode != "exit" and checkpointer.parent_id is None:
        await checkpointer.write(checkpointer.take(state, inbox, (), "running"))
    try:
        status = await runner.run(inbox)
    except WorkflowRunError as exc:
        error = failure_record(exc, state.superstep)
        if checkpointer.mode == "exit" and runner.stopped_cut is not None:
            # failed mid-pipeline: the cut keeps each pending message's superstep, the
            # failed and cancelled invocations' messages back at the heads of their queues
            await checkpointer.after_cut(runner.stopped_cut, "running")
            await checkpointer.record_failure(error)
        elif checkpointer.mode == "exit":
            # resume re-runs the failed superstep: at least once per superstep
            state.superstep -= 1
            checkpoint = checkpointer.take(
                state, runner.current, list(state.executor_state), "failed"
            )
            checkpoint = attrs.evolve(checkpoint, metadata={**checkpoint.metadata, "error": error})
            checkpointer.last = checkpoint
            await checkpointer.write(checkpoint)
        else:
            try:
                await checkpointer.record_failure(error)
            except CheckpointError:
                pass  # the run's error matters more; its last good checkpoint still resumes
        raise
    if runner.remaining and status is RunStatus.IDLE_WITH_PENDING_REQUESTS:
        # waiting at a superstep boundary for an answer to its observer's request: the
        # checkpoint holds the request and the superstep's deliveries (in every mode)
        final = checkpointer.take(state, runner.remaining, list(state.executor_state), status.value)
        await checkpointer.write(final)
        return status
    if checkpointer.mode == "exit":
        if runner.stopped_cut is not None:
            # stopped mid-pipeline: a cut keeps each pending message's superstep
            await checkpointer.after_cut(runner.stopped_cut, status.value)
            return status
        # a stopped run (RunOptions.stop) keeps what is still pending, to resume it
        final = checkpointer.take(state, runner.remaining, list(state.executor_state), status.value)
        await checkpointer.write(final)
    return status


async def stored_requests(
    graph: CompiledGraph, id: str, checkpoint: str | CheckpointStore, accept_changes: bool = False
) -> list[PendingRequest]:
    """:meth:`plait.Workflow.pending_requests`: the pending requests of a stored run
    (``accept_changes``: as :meth:`plait.Workflow.resume`'s)."""
    from ._resume import load_run, restore_state

    async with opened_store(checkpoint) as store:
        found, data = await load_run(store, id, graph, accept_changes)
        state = RunState(found.run_id, None)
        restore_state(graph, state, data, cut=False)
        return list(state.pending_requests.values())


class Checkpoints:
    """The durability ``plait-durable`` registers (``"checkpoints"``, see
    :class:`plait.spi.Durability`): what :class:`plait.Workflow` calls for
    ``run(checkpoint=...)``, ``resume``, ``pending_requests``, ``fingerprint`` and a nested
    workflow's wait for outside input.

    What a resume read travels with the run it rebuilt, never in a context variable: the
    kernel hands :meth:`restore` the run's state and what :meth:`load` gave, then hands
    :meth:`run` the same state, so :meth:`restore` keeps what was read under that state
    until :meth:`run` takes it.
    """

    def __init__(self) -> None:
        #: ``id(state)`` -> (the state, what :meth:`load` read for it), from
        #: :meth:`restore` until :meth:`run` takes it
        self._resumed: dict[int, tuple[RunState, Resumable]] = {}

    def fingerprint(self, graph: CompiledGraph) -> Mapping[str, Any]:
        """The workflow's fingerprint (:mod:`plait_durable._fingerprint`)."""
        return fingerprint_of(graph)

    async def run(
        self,
        graph: CompiledGraph,
        state: RunState,
        inbox: dict[str, list[Any]],
        opts: RunOptions,
        *,
        live: bool,
        parent_id: str | None,
    ) -> RunStatus:
        """:func:`run_checkpointed`, given what :meth:`restore` kept for ``state`` when the
        run goes on from a stored checkpoint."""
        kept = self._resumed.pop(id(state), None)
        resumed = kept[1] if kept is not None and kept[0] is state else None
        return await run_checkpointed(
            graph, state, inbox, opts, live=live, parent_id=parent_id, resumed=resumed
        )

    def opened(
        self, checkpoint: str | CheckpointStore
    ) -> AbstractAsyncContextManager[CheckpointStore]:
        """:func:`opened_store`: what ``Workflow.resume`` reads and runs a stored run in."""
        return opened_store(checkpoint)

    async def load(
        self, store: CheckpointStore, id: str, graph: CompiledGraph, accept_changes: bool
    ) -> tuple[Checkpoint, Any]:
        """:func:`~plait_durable._resume.load_run`."""
        from ._resume import load_run

        return await load_run(store, id, graph, accept_changes)

    def restore(
        self,
        graph: CompiledGraph,
        state: RunState,
        data: Any,
        responses: Mapping[str, Any],
    ) -> dict[str, list[Any]]:
        """Rebuild ``state`` from ``data`` and deliver ``responses``; the next superstep's
        deliveries. What :meth:`load` read is kept for :meth:`run` of the same ``state``."""
        from ._resume import Resumable, answer_requests, restore_state

        inbox = restore_state(graph, state, data)
        answer_requests(state, inbox, responses, graph)
        if isinstance(data, Resumable):
            self._resumed[id(state)] = (state, data)
        return inbox

    def snapshot(self, graph: CompiledGraph, state: RunState, status: str) -> Any:
        """The run's state as a full checkpoint body (what a nested workflow waiting for
        outside input keeps in its executor's state)."""
        body = Checkpointer(None, graph, mode="exit").take(
            state, {}, list(state.executor_state), status
        )
        return body.state

    async def pending_requests(
        self,
        graph: CompiledGraph,
        id: str,
        checkpoint: str | CheckpointStore,
        accept_changes: bool,
    ) -> list[PendingRequest]:
        """:func:`stored_requests`."""
        return await stored_requests(graph, id, checkpoint, accept_changes)
