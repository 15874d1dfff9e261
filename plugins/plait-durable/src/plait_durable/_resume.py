"""Resuming a run: the checkpoint to continue from, its state rebuilt, answers delivered.

Stored data is untrusted: the state is structured into its typed layout
(:mod:`plait_durable._layout`) before use, so a mis-shaped body is a
:class:`~plait_durable.CorruptCheckpointError` naming each field that is wrong, never a
``KeyError``; and values decode only into the types the workflow declares
(:func:`plait_durable.declared_types`); a tag naming anything else is a
:class:`~plait_durable.CheckpointDecodeError` naming the run, the checkpoint and the tag.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs
from plait import CheckpointError, EdgeGroupSpec, NodeSpec, RequestResponse, WorkflowSpec
from plait.spi import RUN_REQUEST, PendingRequest, RunState, is_instance, type_name

from ._blobs import ReadNode, ResumedBlobs, has_blobs, resolve_state
from ._document import document_blob
from ._errors import (
    CheckpointDecodeError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    ResponseTypeError,
    TopologyMismatchError,
    WorkflowChangedError,
)
from ._fingerprint import fingerprint_changes, fingerprint_of
from ._layout import read_state, state_kind
from ._legacy import load_delta
from ._typed import FullState
from .checkpoint import Checkpoint, CheckpointStore
from .codec import DecodeError, declared_types, decode_value

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = [
    "Resumable",
    "answer_requests",
    "check_fingerprint",
    "load_run",
    "recorded_fingerprint",
    "restore_state",
]


@attrs.frozen
class Resumable:
    """What :func:`load_run` gives :func:`restore_state` and the resumed run: the state to
    go on from (values read back from blobs; a delta an earlier Plait wrote merged onto its
    base), how errors name its checkpoint, the blobs read for it (the resumed run's writer
    need not write them again) and, when the run was resumed by its run id, ``(run id,
    checkpoint id)`` of the latest checkpoint it went on from (the durable runner checks,
    once it holds the run's lease, that no other worker wrote a newer one in between)."""

    where: str
    state: FullState
    blobs: ResumedBlobs | None = None
    latest: tuple[str, str] | None = None


#: The schedule whose cuts a checkpoint's ``"pipeline"`` section holds (format 1): it
#: decodes the section, and a run resumed from it starts in that schedule.
CUT_SCHEDULE = "pipelined"


async def load_run(
    store: CheckpointStore, id: str, graph: CompiledGraph, accept_changes: bool = False
) -> tuple[Checkpoint, Resumable]:
    """The checkpoint to resume (the latest of run ``id``, or checkpoint ``id``) and its
    materialised state (values read back from blobs; a delta an earlier Plait wrote merged
    onto its base), structured into its layout, taken on
    ``graph``'s topology and (unless ``accept_changes``) its workflow fingerprint.

    :raises CheckpointError: ``id`` is both a run id and another run's checkpoint id.
    :raises TopologyMismatchError: it was taken on another graph.
    :raises WorkflowChangedError: it was taken on another workflow of the same graph.
    """
    by_run, run_blobs = await _latest(store, id)
    try:
        by_id, id_blobs = await _load(store, id)
    except CheckpointNotFoundError:
        by_id, id_blobs = None, {}
    if by_run is not None and by_id is not None and by_id.run_id != id:
        raise CheckpointError(
            f"{id!r} is both a run and a checkpoint of run {by_id.run_id!r} in the store; "
            "refusing to guess which to resume (resume the other run by its run id)"
        )
    checkpoint = by_run if by_run is not None else by_id
    blobs = run_blobs if by_run is not None else id_blobs  # read with it, checked when used
    if checkpoint is None:
        raise CheckpointNotFoundError(f"no run and no checkpoint with id {id!r} in the store")
    where = f"run {checkpoint.run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
    if by_run is not None and checkpoint.run_id != id:
        raise CorruptCheckpointError(
            f"{where} is corrupt: the store listed it as the latest of run {id!r}"
        )
    if checkpoint.signature != graph.signature:
        raise TopologyMismatchError(await _mismatch(store, checkpoint, graph.spec))
    # a sealed one read without its key is refused here, before anything else is read
    kind = state_kind(checkpoint.state, where)
    await check_fingerprint(store, checkpoint, fingerprint_of(graph), accept_changes=accept_changes)
    # a delta an earlier Plait wrote: merged onto its base, a full state as stored
    data = checkpoint.state if kind == "full" else await load_delta(store, checkpoint, where)
    # only the blobs the state names, verified against their hashes
    read: set[str] = set()
    strings: dict[int, tuple[str, str]] = {}
    nodes: list[ReadNode] = []
    resolved = await resolve_state(
        data,
        store=store,
        run_id=checkpoint.run_id,
        where=where,
        seen=read,
        strings=strings,
        read=blobs,
        nodes=nodes,
    )
    full = read_state(resolved, where)
    document = document_blob(checkpoint.metadata)
    if document is not None and has_blobs(store):  # the run's document: the store holds it
        read.add(document)  # (a prune keeps what this checkpoint names)
    blobs_read = (checkpoint.run_id, frozenset(read), strings, nodes)
    latest = (checkpoint.run_id, checkpoint.checkpoint_id) if by_run else None
    return checkpoint, Resumable(where, full, blobs_read, latest)


#: What ``load_with_blobs`` and ``latest_with_blobs`` return: a checkpoint (None: the
#: run has none) and blobs it reaches, hash -> bytes as stored.
WithBlobs: TypeAlias = tuple[Checkpoint | None, Mapping[str, bytes]]


def _with_blobs(store: CheckpointStore, name: str) -> Callable[[str], Awaitable[WithBlobs]] | None:
    """The store's ``load_with_blobs`` or ``latest_with_blobs`` (optional, see
    :class:`~plait_durable.BlobStore`) when it keeps blobs and its class has the method:
    never one a wrapper passes on from the store it wraps (``__getattr__``), which would
    go round the wrapper's own ``get_blobs`` (one that decrypts or counts blobs)."""
    if not has_blobs(store) or not callable(getattr(type(store), name, None)):
        return None
    method: Callable[[str], Awaitable[WithBlobs]] = getattr(store, name)
    return method


async def _latest(store: CheckpointStore, run_id: str) -> WithBlobs:
    """``store.latest(run_id)``, with the blobs it reaches if the store reads them in the
    same call (``latest_with_blobs``: one round trip or worker-thread hop, not two)."""
    read = _with_blobs(store, "latest_with_blobs")
    if read is None:
        return await store.latest(run_id), {}
    return await read(run_id)


async def _load(store: CheckpointStore, checkpoint_id: str) -> WithBlobs:
    """``store.load(checkpoint_id)``, with the blobs it reaches if the store reads them in
    the same call (``load_with_blobs``).

    :raises CheckpointNotFoundError: there is no such checkpoint.
    """
    read = _with_blobs(store, "load_with_blobs")
    if read is None:
        return await store.load(checkpoint_id), {}
    return await read(checkpoint_id)


async def _mismatch(store: CheckpointStore, checkpoint: Checkpoint, spec: WorkflowSpec) -> str:
    head = f"run {checkpoint.run_id} (checkpoint {checkpoint.checkpoint_id}) was taken on a "
    topology: Any = None
    for info in await store.list(checkpoint.run_id):
        try:
            first = await store.load(info.checkpoint_id)
        except CheckpointError:  # damaged, or sealed by another key: no diff to show
            break
        topology = first.metadata.get("topology")
        if topology is not None:
            break
    if topology is None:
        return head + "different graph (its topology signature differs); rebuild the original"
    try:
        changes = _stored_spec(topology).diff(spec)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError):  # a damaged one
        changes = []
    return head + "different graph: " + "; ".join(changes or ["the topology signature differs"])


def _stored_spec(topology: Mapping[str, Any]) -> WorkflowSpec:
    """The spec a checkpoint's ``metadata["topology"]`` (:meth:`plait.WorkflowSpec.topology`
    of the graph it was taken on) describes, enough for :meth:`plait.WorkflowSpec.diff`:
    node ids and kinds, edge groups, the start. Data only: nothing it names is imported.

    :raises KeyError, TypeError, IndexError, ValueError: the topology is mis-shaped.
    """
    nodes = tuple(NodeSpec(id=str(node_id), kind=str(kind)) for node_id, kind in topology["nodes"])
    groups = tuple(
        EdgeGroupSpec(
            id=str(group_id),
            router=str(router),
            sources=tuple(map(str, sources)),
            targets=tuple(map(str, targets)),
            options=json.loads(options),  # stored as canonical JSON text
        )
        for group_id, router, sources, targets, options in topology["edge_groups"]
    )
    return WorkflowSpec(name=None, start=str(topology["start"]), nodes=nodes, edge_groups=groups)


def restore_state(
    graph: CompiledGraph, run_state: RunState, data: Any, *, cut: bool = True
) -> dict[str, list[Any]]:
    """Fill ``run_state`` from ``data`` and return the pending inbox: a :class:`Resumable`
    (from :func:`load_run`) or a full state as stored JSON (what a nested workflow waiting
    for input keeps, :meth:`Checkpoints.snapshot`).

    Values decode into the graph's :func:`~plait_durable.declared_types` only. A checkpoint
    taken at a cut of the pipelined schedule is decoded by that schedule (``cut``: the
    run is resumed; else only what a reader needs, such as the pending requests, is).

    :raises CheckpointDecodeError: a value names a type the workflow does not declare.
    :raises CorruptCheckpointError: the state is mis-shaped.
    :raises UnknownNameError: the checkpoint is a cut and the schedule that took it is not
        installed (naming the run, the checkpoint and ``plait-pipeline``).
    """
    if isinstance(data, Resumable):
        where, state = data.where, data.state
    else:
        where = f"run {run_state.run_id!r}"
        state = read_state(data, where)
    decode = functools.partial(decode_value, types=declared_types(graph))
    try:
        return _restore(graph, run_state, state, decode, where, cut)
    except DecodeError as exc:
        tag = f" (type tag {exc.tag!r})" if exc.tag else ""
        raise CheckpointDecodeError(f"{where} does not decode{tag}: {exc}") from exc
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state does not rebuild ({type(exc).__name__}: {exc})"
        ) from exc


def _unnamed_response_type(graph: CompiledGraph, executor_id: str, request: Any) -> Any:
    """The response type of a stored request that has no type tag (only a plain class
    gets one: a ``Literal["yes", "no"]`` does not): the one type the asking executor's
    handlers take whose name is the stored ``response_type_name``, else ``Any``. Only the
    workflow's own types are candidates, never one the data names."""
    executor = graph.executors.get(executor_id)
    name = request.response_type_name
    if executor is None or not name:
        return Any
    found = [
        h.input_type
        for h in executor.handlers
        if h.input_type is not Any and type_name(h.input_type) == name
    ]
    return found[0] if len(found) == 1 else Any


def _restore(
    graph: CompiledGraph,
    run_state: RunState,
    state: FullState,
    decode: Callable[[Any], Any],
    where: str,
    cut: bool,
) -> dict[str, list[Any]]:
    types = declared_types(graph)
    for eid, snapshot in state.executor_state.items():
        executor = graph.executors.get(eid)
        if executor is not None:
            run_state.executor_state[eid] = executor.restore_state(decode(snapshot))
    shared = decode(state.shared)
    if not isinstance(shared, dict):
        raise CorruptCheckpointError(f"{where} is corrupt: its shared state is not a dict")
    run_state.shared.update(shared)
    run_state.outputs.extend(decode(state.outputs))
    run_state.visits.update(state.visits)
    run_state.attempts.update(state.attempts or {})
    for gid, snapshot in state.router_state.items():
        runner = graph.edge_runners.get(gid)
        if runner is not None:
            run_state.router_state[gid] = runner.restore(snapshot, decode)
    for request in state.requests:
        if request.executor_id not in graph.executors and request.executor_id != RUN_REQUEST:
            raise CorruptCheckpointError(
                f"{where} is corrupt: a pending request names executor "
                f"{request.executor_id!r}, which the workflow does not have"
            )
        response_type: Any = _unnamed_response_type(graph, request.executor_id, request)
        if request.response_type:
            response_type = types.get(request.response_type)
            if response_type is None:
                raise CheckpointDecodeError(
                    f"{where} does not decode (type tag {request.response_type!r}): the "
                    f"response type of request {request.request_id!r} is not a type this "
                    "workflow declares"
                )
        run_state.pending_requests[request.request_id] = PendingRequest(
            request.request_id,
            request.executor_id,
            decode(request.request),
            response_type,
            request.superstep,
        )
    if state.ids is not None:  # delivery ids of messages to executors taking them on arrival
        run_state.ids = {eid: list(found) for eid, found in state.ids.items()}
    if state.pipeline is not None and cut:  # a cut of a pipelined run: its schedule resumes it
        schedule = graph.plugin_manager.registry("schedule").get(
            CUT_SCHEDULE, what=f"resuming {where}, a cut of that schedule"
        )
        run_state.cut = (CUT_SCHEDULE, schedule.decode_cut(state.pipeline, decode))
    inbox: dict[str, list[Any]] = {}
    for eid, messages in state.pending.items():
        if eid not in graph.executors:
            raise CorruptCheckpointError(
                f"{where} is corrupt: it holds messages for executor {eid!r}, which the "
                "workflow does not have"
            )
        inbox[eid] = [decode(m) for m in messages]
    return inbox


def answer_requests(
    state: RunState,
    inbox: dict[str, list[Any]],
    responses: Mapping[str, Any],
    graph: CompiledGraph,
) -> None:
    """Deliver ``responses`` to the executors that asked: every response is checked first,
    so a bad one changes nothing and its request stays pending. An executor gets a
    :class:`~plait.RequestResponse` when it has a handler for one, or when the request's
    payload class sets ``respond_with_request = True``; else the bare answer. An answer to
    the run's own request (an observer's, :data:`plait.spi.RUN_REQUEST`) goes to the run's
    observer as a :class:`~plait.RequestResponse` (``RunState.answers``), which takes it
    off the pending requests as the run starts."""
    pending = state.pending_requests
    for request_id, value in responses.items():
        request = pending.get(request_id)
        if request is None:
            known = ", ".join(pending) or "none"
            raise ResponseTypeError(
                f"no pending request {request_id!r} in run {state.run_id}; pending: {known}"
            )
        if not is_instance(value, request.response_type):
            raise ResponseTypeError(
                f"response to request {request_id!r} of executor {request.executor_id!r} "
                f"must be {type_name(request.response_type)}, got {type_name(type(value))}; "
                "the request stays pending"
            )
    for request_id, value in responses.items():
        request = pending[request_id]
        if request.executor_id == RUN_REQUEST:  # the run's own: for its observer to take
            state.answers.append(RequestResponse(request_id, request.request, value))
            continue
        del pending[request_id]
        executor = graph.executors[request.executor_id]
        # the answer in its record for an executor that takes records, or when the request
        # says it must be known which request it answers (a class attribute of the payload:
        # a plugin's request, such as a budget's, to an executor that takes anything)
        if (
            any(h.input_type is RequestResponse for h in executor.handlers)
            or getattr(type(request.request), "respond_with_request", False) is True
        ):
            value = RequestResponse(request_id, request.request, value)
        inbox.setdefault(request.executor_id, []).append(value)


_SCAN = 200  # checkpoints a refused resume reads, newest first, for the details to name


async def check_fingerprint(
    store: CheckpointStore,
    checkpoint: Checkpoint,
    current: Mapping[str, Any],
    *,
    accept_changes: bool = False,
) -> None:
    """Refuse to resume ``checkpoint`` with a workflow whose fingerprint is ``current``
    when it differs from the one the checkpoint records, unless ``accept_changes``. The
    details to name the changes come from the newest checkpoint of the run that holds
    them.

    :raises WorkflowChangedError: naming the run, the checkpoint and every change.
    """
    stored = checkpoint.metadata.get("fingerprint")
    if accept_changes or (
        isinstance(stored, Mapping)
        and stored.get("format") == current["format"]
        and stored.get("digest") == current["digest"]
    ):
        return
    changes = fingerprint_changes(await recorded_fingerprint(store, checkpoint), current)
    raise WorkflowChangedError(
        f"run {checkpoint.run_id} (checkpoint {checkpoint.checkpoint_id}) was taken on a "
        f"different workflow: {'; '.join(changes)}. Resume it with the workflow that "
        "started it, or accept the change (accept_changes=True; plait resume "
        "--accept-changes)",
        changes,
    )


async def recorded_fingerprint(store: CheckpointStore, checkpoint: Checkpoint) -> Any:
    """The workflow fingerprint ``checkpoint`` records, with its details (per node and
    edge group, what :func:`~plait_durable.fingerprint_changes` diffs): its own when it
    holds them, else those of the run's newest checkpoint with the same digest (the first
    each process wrote), else the summary it holds. Untrusted: any shape."""
    stored = checkpoint.metadata.get("fingerprint")
    if not isinstance(stored, Mapping) or "nodes" in stored:
        return stored
    return await _details(store, checkpoint, stored.get("digest"))


async def _details(store: CheckpointStore, checkpoint: Checkpoint, digest: Any) -> Any:
    """The detailed fingerprint with ``digest`` from the run's newest checkpoint holding
    it (the first each process wrote), or the summary when none is left."""
    try:
        infos = list(await store.list(checkpoint.run_id))
    except CheckpointError:
        return checkpoint.metadata.get("fingerprint")
    infos.sort(key=lambda info: (info.superstep, info.created_at), reverse=True)
    for info in infos[:_SCAN]:
        try:
            found = await store.load(info.checkpoint_id)
        except CheckpointError:
            continue
        recorded = found.metadata.get("fingerprint")
        if (
            isinstance(recorded, Mapping)
            and "nodes" in recorded
            and recorded.get("digest") == digest
        ):
            return recorded
    return checkpoint.metadata.get("fingerprint")
