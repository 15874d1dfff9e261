"""The checkpointer: turns a run's state into checkpoints (each a full state, see
:mod:`plait_durable._layout` for the layout; in a store that keeps blobs, its values
content-addressed, :mod:`plait_durable._blobs`, so it costs what changed) and hands them
to the store in order.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream
from plait import CheckpointError, Executor
from plait.spi import PendingRequest, RunState, type_name
from plait_documents import source_document

from ._blobs import BlobWriter, MapTree, ResumedBlobs, _ref_of, has_blobs
from ._document import DOCUMENT_KEY, document_metadata
from ._errors import CheckpointEncodeError, RunLeaseError
from ._fingerprint import fingerprint_of, fingerprint_summary
from ._layout import request_fields, state_fields
from .checkpoint import Checkpoint, CheckpointStore, Lease
from .codec import EncodeError, encode_value, type_ref

if TYPE_CHECKING:
    from plait.spi import CompiledGraph, RunnerView, RunObserver, ScheduleRun

__all__ = ["Checkpointer"]


def _encode(value: Any, what: str, name: str | None, superstep: int) -> Any:
    """Encode ``value``; on failure name ``what`` (and ``name``) and the superstep."""
    try:
        return encode_value(value)
    except EncodeError as exc:
        where = f"{what} {name!r}" if name is not None else what
        if what == "executor":
            where += " state"
        raise CheckpointEncodeError(
            f"{where} holds a value that cannot be checkpointed in superstep {superstep}: {exc}"
        ) from exc


class Checkpointer:
    """Turns the run's state into checkpoints and hands them to the store in order: the
    runner's commit seam (:class:`plait.spi.RunCommit`) of a durable run."""

    def __init__(
        self,
        store: CheckpointStore | None,
        graph: CompiledGraph,
        *,
        mode: str,
        parent_id: str | None = None,
        resumed: ResumedBlobs | None = None,
    ) -> None:
        self.store = store
        self.graph = graph
        self.mode = mode
        self.parent_id = parent_id
        self.snapshots: dict[str, Any] = {}  # executor id -> last encoded state, if not {}
        self.all_encoded = False  # every executor state encoded once (the first checkpoint)
        self.cuts = False  # whether it writes a pipelined run's cuts (after_cut)
        # with blobs, the executor states and visit counts as trees kept from checkpoint to
        # checkpoint: each costs what changed (the executors that ran), in bytes and time
        self.state_tree = MapTree()
        self.visit_tree = MapTree()
        self.stateful = graph.stateful  # (edge group id, runner) of the stateful routers
        #: the executors whose snapshot is their state as it is (``Executor``'s own
        #: ``snapshot_state``): an empty state of theirs snapshots as nothing
        self.kept_as_is: frozenset[str] = graph.cached(_KEPT_AS_IS, _kept_as_is)
        self.first = parent_id is None
        # what every checkpoint after the first this process writes records of the
        # fingerprint (the first has the details): made once per run, not per checkpoint
        self.summary: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.lease: Lease | None = None
        self._send: anyio.abc.ObjectSendStream[Checkpoint] | None = None
        self.last: Checkpoint | None = None
        #: the run's ``checkpoint_metadata``, added to every checkpoint's metadata
        self.metadata: Mapping[str, Any] = {}
        #: the run's observer, told of every checkpoint written (the runner's seam)
        self.observer: RunObserver | None = None
        #: the run's state, whose attempt counts :meth:`before_retry` records
        self.state: RunState | None = None
        #: large values go to the store as blobs when it keeps them (:mod:`plait_durable._blobs`)
        self.blobs = BlobWriter() if has_blobs(store) else None
        self._new_blobs: dict[str, dict[str, bytes]] = {}  # checkpoint id -> its new blobs
        self._resumed = resumed  # blobs a resume read: in the store already
        self._ids = checkpoint_ids()
        #: the document the workflow was loaded from (its text as parsed), if it was:
        #: what every checkpoint's metadata names (:mod:`plait_durable._document`)
        self.document = source_document(graph)
        self._document_record: dict[str, Any] | None = None

    # -- building checkpoints ------------------------------------------------------------

    def take(
        self, state: RunState, inbox: Mapping[str, list[Any]], ran: Any, status: str
    ) -> Checkpoint:
        """A checkpoint of ``state`` after the executors in ``ran`` ran."""
        step = state.superstep
        # Executors' states are encoded when they ran, the last encoding kept for the
        # others; the first checkpoint this process writes encodes every state, so in a
        # resumed run it holds those restored and not run since (a state left out would
        # be lost to the next resume).
        kept_as_is = self.kept_as_is
        for eid in ran if self.all_encoded else list(state.executor_state):
            raw = state.executor_state.get(eid)
            if raw is None or (not raw and eid in kept_as_is and eid not in self.snapshots):
                continue  # (an empty state snapshotted as it is: nothing to encode or drop)
            snapshot = _encode(self.graph.executors[eid].snapshot_state(raw), "executor", eid, step)
            if snapshot != {}:
                self.snapshots[eid] = snapshot
                self.state_tree.set(eid, snapshot)
            elif self.snapshots.pop(eid, None) is not None:
                self.state_tree.remove(eid)
        # a cut of a pipelined run records every visit count as of the cut
        for eid in ran if self.all_encoded and not self.cuts else list(state.visits):
            if eid in state.visits:
                self.visit_tree.set(eid, state.visits[eid])
        self.all_encoded = True
        checkpoint_id = next(self._ids)
        run_metadata = dict(self.metadata)
        if self.blobs is None:
            body = self._state_json(state, inbox, step, None)
            document = self._document()
        else:
            self._take_resumed(state.run_id)
            body = self._state_json(state, inbox, step, self.blobs)
            document = self._document()  # (its blob, the first time, goes with this one)
            new_blobs = self.blobs.take_new()
            if new_blobs:
                self._new_blobs[checkpoint_id] = new_blobs
            self.blobs.settle()
        metadata: dict[str, Any] = {
            **run_metadata,
            **document,
            "workflow": self.graph.spec.name,
            "fingerprint": self._fingerprint(),
        }
        if self.graph.spec.workflow_version is not None:  # what migrations go from
            metadata["version"] = self.graph.spec.workflow_version
        if self.observer is not None and (observed := self.observer.checkpoint_metadata()):
            metadata["observers"] = dict(observed)  # as of this checkpoint (a budget's spend)
        if self.first:
            metadata["topology"] = self.graph.topology
            self.first = False
        checkpoint = Checkpoint(
            checkpoint_id=checkpoint_id,
            run_id=state.run_id,
            superstep=step,
            parent_id=self.parent_id,
            signature=self.graph.signature,
            status=status,
            created_at=time.time(),
            state=body,
            metadata=metadata,
        )
        self.parent_id = checkpoint_id
        self.last = checkpoint
        return checkpoint

    def _take_resumed(self, run_id: str) -> None:
        """Before the first checkpoint of a resumed run: a writer that knows the blobs
        the resume read (in the store already), and the strings and bundles it hashed."""
        if self._resumed is not None and self._resumed[0] == run_id:
            self.blobs = BlobWriter(self._resumed[2], self._resumed[3])
            self.blobs.known |= self._resumed[1]
        self._resumed = None

    def _state_json(
        self,
        state: RunState,
        inbox: Mapping[str, list[Any]],
        step: int,
        blobs: BlobWriter | None,
    ) -> dict[str, Any]:
        """The state of a checkpoint as the JSON it stores
        (:func:`~plait_durable._layout.state_fields`), in one pass over the run's values:
        each is encoded and, with ``blobs`` (a store that keeps them), its large parts
        become references as it is (the rules of
        :func:`~plait_durable._blobs.externalize_state`), the executor states and visit
        counts from the trees kept from checkpoint to checkpoint."""
        ext = _as_is if blobs is None else blobs.externalize
        pending = {
            eid: [ext(_encode(m, "message pending for executor", eid, step)) for m in msgs]
            for eid, msgs in inbox.items()
        }
        shared = _encode(state.shared, "shared state", None, step)
        outputs = _encode(state.outputs, "workflow outputs", None, step)
        if blobs is None:
            executor_state: Any = dict(self.snapshots)
            visits: Any = dict(state.visits)
        else:
            executor_state = self.state_tree.tree(blobs)
            visits = self.visit_tree.tree(blobs)
            if shared:
                shared = blobs.externalize_map(shared)
            if outputs:
                outputs = ext(outputs)
        observed = None
        if self.observer is not None:  # what the observers keep with it (a recorder's calls)
            section = self.observer.checkpoint_section()
            if section:
                observed = ext(_encode(dict(section), "observers' section", None, step))
        ids = state.ids
        return state_fields(
            pending=pending,
            router_state=self._router_state(state, ext) if self.stateful else {},
            requests=[self._request(r, step, ext) for r in state.pending_requests.values()],
            # the delivery ids of pending messages to executors taking them on arrival
            ids={eid: ids[eid] for eid in inbox if eid in ids} if ids else None,
            executor_state=executor_state,
            shared=shared,
            outputs=outputs,
            visits=visits,
            attempts=dict(state.attempts) if state.attempts else None,
            observed=observed,
        )

    def _document(self) -> dict[str, Any]:
        """What a checkpoint's metadata records of the run's document: ``{DOCUMENT_KEY:
        record}``, or nothing for a workflow not loaded from one. The record is made once
        per run (this process's part of it): its blob is handed to the store with the
        first checkpoint, unless the checkpoint a resume went on from names it already,
        and every later checkpoint names the same blob."""
        if self.document is None:
            return {}
        record = self._document_record
        if record is None:
            record = self._document_record = document_metadata(self.document, self.blobs)
        elif self.blobs is not None and (digest := _ref_of(record["text"])) is not None:
            self.blobs.touched.add(digest)  # this checkpoint reaches it too (settle keeps it)
        return {DOCUMENT_KEY: record}

    def _fingerprint(self) -> dict[str, Any]:
        """What a checkpoint records of the workflow's fingerprint: the details in the
        first one this process writes, the format and digest in the others."""
        if self.summary is not None:
            return self.summary
        fingerprint = fingerprint_of(self.graph)
        self.summary = fingerprint_summary(fingerprint)
        return fingerprint

    def _router_state(self, state: RunState, ext: Callable[[Any], Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for gid, runner in self.stateful:
            if gid in state.router_state:
                snapshot = runner.snapshot(state.router_state[gid], _Encoder(gid, state.superstep))
                out[gid] = ext(snapshot)
        return out

    @staticmethod
    def _request(request: PendingRequest, step: int, ext: Callable[[Any], Any]) -> dict[str, Any]:
        return request_fields(
            request_id=request.request_id,
            executor_id=request.executor_id,
            request=ext(_encode(request.request, "request", request.request_id, step)),
            response_type=type_ref(request.response_type),
            response_type_name=type_name(request.response_type),
            superstep=request.superstep,
        )

    # -- writing -------------------------------------------------------------------------

    async def write(self, checkpoint: Checkpoint) -> None:
        """Save now (``sync``/``exit``) or queue for the background writer (``async``)."""
        if self.error is not None:
            raise self.error
        if self._send is not None:
            await self._send.send(checkpoint)
        elif self.store is not None:
            await self._save(checkpoint)
        else:
            return
        if self.observer is not None:
            self.observer.checkpoint_written(
                checkpoint.checkpoint_id, checkpoint.superstep, checkpoint.status
            )

    async def _save(self, checkpoint: Checkpoint) -> None:
        assert self.store is not None
        options: dict[str, Any] = {}
        if self.lease is not None:
            options["lease"] = self.lease
        blobs = self._new_blobs.pop(checkpoint.checkpoint_id, None)
        if blobs:  # written with the checkpoint, never after it
            options["blobs"] = blobs
        await self.store.save(checkpoint, **options)

    async def writer(self, receive: MemoryObjectReceiveStream[Checkpoint]) -> None:
        """The ``async`` mode writer: saves queued checkpoints one at a time, in order."""
        save_many = getattr(self.store, "save_many", None)
        async with receive:
            async for checkpoint in receive:
                batch = [checkpoint]
                while True:  # what queued up while the last write ran goes in one batch
                    try:
                        batch.append(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                if self.error is not None or self.store is None:
                    continue
                try:
                    if save_many is not None and len(batch) > 1:
                        options: dict[str, Any] = {}
                        if self.lease is not None:
                            options["lease"] = self.lease
                        blobs: dict[str, bytes] = {}
                        for item in batch:
                            blobs.update(self._new_blobs.pop(item.checkpoint_id, {}))
                        if blobs:
                            options["blobs"] = blobs
                        await save_many(batch, **options)
                    else:
                        for item in batch:
                            await self._save(item)
                except Exception as exc:
                    self.error = exc

    async def renew(self, ttl: float, ended: anyio.Event) -> None:
        """Renew the lease every third of ``ttl`` until the run has ``ended``. A lease
        taken over fails the run at its next write; a store that is briefly unreachable
        is retried."""
        assert self.store is not None
        while self.lease is not None:
            with anyio.move_on_after(ttl / 3):
                await ended.wait()
            if ended.is_set():
                return
            try:
                self.lease = await self.store.renew_lease(self.lease, ttl=ttl)
            except RunLeaseError as exc:
                self.error = exc
                return
            except CheckpointError:
                continue

    def attach(self, send: anyio.abc.ObjectSendStream[Checkpoint]) -> None:
        """Route writes to the background writer."""
        self._send = send

    async def record_attempt(self, state: RunState) -> None:
        """Before a retry's backoff: save the last checkpoint again with the attempt counts,
        so a crash during the backoff resumes the superstep with the count intact (the
        superstep itself is re-run from its start, as any resumed superstep is)."""
        last = self.last
        if last is None:
            return
        body = dict(last.state)
        body["attempts"] = dict(state.attempts)
        checkpoint_id = next(self._ids)
        again = attrs.evolve(
            last,
            checkpoint_id=checkpoint_id,
            parent_id=last.checkpoint_id,
            created_at=time.time(),
            state=body,
            metadata={k: v for k, v in last.metadata.items() if k != "topology"},
        )
        self.parent_id = checkpoint_id
        self.last = again
        await self.write(again)

    async def before_retry(self, key: str, attempt: int) -> None:
        """The runner's seam before a retry's backoff: :meth:`record_attempt`."""
        if self.state is not None:
            await self.record_attempt(self.state)

    async def record_failure(self, error: dict[str, Any]) -> None:
        """After a failed superstep (``sync``/``async`` modes): save the last checkpoint
        again with status ``failed`` and ``metadata["error"] = error``, so the store shows
        the failure while a resume still re-runs the superstep that failed. A resumed run
        that failed before writing anything copies the checkpoint it resumed from."""
        last = self.last
        if last is None:
            if self.parent_id is None or self.store is None:
                return
            last = await self.store.load(self.parent_id)
        checkpoint_id = next(self._ids)
        if self.blobs is not None:
            self._take_resumed(last.run_id)
        run_metadata = {**self.metadata, **self._document()}
        if self.blobs is not None and (new_blobs := self.blobs.take_new()):
            self._new_blobs[checkpoint_id] = new_blobs  # (the document's, if none was taken)
        failed = attrs.evolve(
            last,
            checkpoint_id=checkpoint_id,
            parent_id=last.checkpoint_id,
            status="failed",
            created_at=time.time(),
            metadata={
                **{k: v for k, v in last.metadata.items() if k != "topology"},
                **run_metadata,
                "fingerprint": self._fingerprint(),  # the workflow that failed, not the one before
                "error": error,
            },
        )
        self.parent_id = checkpoint_id
        self.last = failed
        await self.write(failed)

    async def after_superstep(self, runner: RunnerView, inbox: Mapping[str, list[Any]]) -> None:
        """The runner's per-superstep hook (``sync`` and ``async`` modes)."""
        status = "running" if inbox else _final_status(runner.state)
        await self.write(self.take(runner.state, inbox, runner.last_ran, status))

    async def after_cut(self, cut: ScheduleRun, status: str) -> bool:
        """A pipelined run's hook: write a cut of it now (``sync``), or when the
        background writer is free (``async``: the next cut carries what committed
        meanwhile). Whether one was written."""
        statistics = getattr(self._send, "statistics", None)
        if status == "running" and statistics is not None and statistics().current_buffer_used:
            return False
        if status == "handback":  # the superstep loop goes on from this cut: always taken
            status = "running"
        state = cut.state
        pending, ran, section = cut.cut(_Encoder("pipelined schedule", state.superstep))
        visits, committed = cut.uncommitted()
        saved_visits = {eid: state.visits[eid] for eid in visits}
        # a running executor's state as of its last commit: the copy taken as it started,
        # or (none taken) the last snapshot; never the state it is changing now
        running = [e for e in visits if e not in committed and e in state.executor_state]
        saved_state = {eid: state.executor_state.get(eid) for eid in [*committed, *running]}
        step = state.superstep
        self.cuts = True
        try:
            for eid in running:
                del state.executor_state[eid]
            state.visits.update(visits)
            state.executor_state.update(committed)
            state.superstep = cut.done_through
            checkpoint = self.take(state, pending, [*ran, *committed], status)
        finally:
            state.superstep = step
            state.visits.update(saved_visits)
            for eid, raw in saved_state.items():
                if raw is None:
                    state.executor_state.pop(eid, None)
                else:
                    state.executor_state[eid] = raw
        checkpoint.state["pipeline"] = section
        await self.write(checkpoint)
        return True


def checkpoint_ids() -> Iterator[str]:
    """The ids of one checkpointer's checkpoints: UUIDs (version 4, hex), the first a
    random one and each next one the last with its node field (the last 48 bits) one
    higher. They are as unique as random UUIDs across runs (74 random bits per
    checkpointer) and within a run (2**48 apart), and the operating system's randomness
    is read once per run, not at every checkpoint."""
    first = uuid.uuid4().hex
    prefix, node = first[:20], int(first[20:], 16)
    while True:
        yield f"{prefix}{node:012x}"
        node = (node + 1) & 0xFFFF_FFFF_FFFF


#: the key of :func:`_kept_as_is` in a graph's cache
_KEPT_AS_IS = "plait_durable.kept_as_is"


def _kept_as_is(graph: CompiledGraph) -> frozenset[str]:
    """The executors of ``graph`` that snapshot their state as it is (they do not
    override :meth:`plait.Executor.snapshot_state`)."""
    default = Executor.snapshot_state
    return frozenset(
        eid
        for eid, executor in graph.executors.items()
        if getattr(type(executor), "snapshot_state", None) is default
    )


def _as_is(value: Any) -> Any:
    return value


class _Encoder:
    """Encodes messages buffered in one edge group, naming it in errors."""

    def __init__(self, gid: str, superstep: int) -> None:
        self.gid, self.superstep = gid, superstep

    def __call__(self, message: Any) -> Any:
        return _encode(message, "message buffered in edge group", self.gid, self.superstep)


def _final_status(state: RunState) -> str:
    return "idle_with_pending_requests" if state.pending_requests else "idle"
