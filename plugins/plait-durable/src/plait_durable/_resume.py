"""Resuming a run: the checkpoint to continue from, its state rebuilt, answers delivered.

Stored data is untrusted: the state's layout is checked before use (a mis-shaped body is
a :class:`~plait.CorruptCheckpointError`, never a ``KeyError``), and values decode
only into the types the workflow declares (:func:`plait.spi.declared_types`); a tag
naming anything else is a :class:`~plait.CheckpointDecodeError` naming the run,
the checkpoint and the tag.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from plait import (
    CheckpointDecodeError,
    CheckpointError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    RequestResponse,
    ResponseTypeError,
    TopologyMismatchError,
    WorkflowChangedError,
    WorkflowSpec,
)
from plait.spi import (
    Checkpoint,
    CheckpointStore,
    DecodeError,
    PendingRequest,
    RunState,
    declared_types,
    decode_value,
    is_instance,
    type_name,
)

from ._blobs import resolve_state, resumed_blobs
from ._fingerprint import fingerprint_changes, fingerprint_of
from ._runview import merge_shared

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = ["answer_requests", "check_fingerprint", "load_run", "restore_state", "resumed_from"]

#: ``(run id, checkpoint id)`` when the current task resumed a run by its run id from
#: that latest checkpoint: the durable runner checks, once it holds the run's lease,
#: that no other worker wrote a newer one in between.
resumed_from: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "plait_resumed_from", default=None
)

_KEY = "checkpoint_id"  # where load_run leaves the checkpoint's id in the state it returns

#: The schedule whose cuts a checkpoint's ``"pipeline"`` section holds (format 1): it
#: decodes the section, and a run resumed from it starts in that schedule.
CUT_SCHEDULE = "pipelined"


async def load_run(
    store: CheckpointStore, id: str, graph: CompiledGraph, accept_changes: bool = False
) -> tuple[Checkpoint, dict[str, Any]]:
    """The checkpoint to resume (the latest of run ``id``, or checkpoint ``id``) and its
    materialised state (a delta merged onto its base), its layout checked, taken on
    ``graph``'s topology and (unless ``accept_changes``) its workflow fingerprint.

    :raises CheckpointError: ``id`` is both a run id and another run's checkpoint id.
    :raises TopologyMismatchError: it was taken on another graph.
    :raises WorkflowChangedError: it was taken on another workflow of the same graph.
    """
    by_run = await store.latest(id)
    try:
        by_id: Checkpoint | None = await store.load(id)
    except CheckpointNotFoundError:
        by_id = None
    if by_run is not None and by_id is not None and by_id.run_id != id:
        raise CheckpointError(
            f"{id!r} is both a run and a checkpoint of run {by_id.run_id!r} in the store; "
            "refusing to guess which to resume (resume the other run by its run id)"
        )
    checkpoint = by_run if by_run is not None else by_id
    if checkpoint is None:
        raise CheckpointNotFoundError(f"no run and no checkpoint with id {id!r} in the store")
    where = f"run {checkpoint.run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
    if by_run is not None and checkpoint.run_id != id:
        raise CorruptCheckpointError(
            f"{where} is corrupt: the store listed it as the latest of run {id!r}"
        )
    if checkpoint.signature != graph.signature:
        raise TopologyMismatchError(await _mismatch(store, checkpoint, graph.spec))
    state = dict(checkpoint.state)
    _check_layout(state, where, delta_ok=True)  # a sealed one read without its key: refused
    await check_fingerprint(store, checkpoint, fingerprint_of(graph), accept_changes=accept_changes)
    if state["kind"] == "delta":
        base = await store.load(state["base"])
        base_where = f"run {base.run_id!r}, checkpoint {base.checkpoint_id!r}"
        if base.run_id != checkpoint.run_id or base.checkpoint_id != state["base"]:
            raise CorruptCheckpointError(
                f"{where} is corrupt: its base {state['base']!r} is {base_where}"
            )
        _check_layout(base.state, base_where, delta_ok=False)
        merged = dict(base.state)
        merged["executor_state"] = {**base.state["executor_state"], **state["executor_state"]}
        merged["visits"] = {**base.state["visits"], **state["visits"]}
        merged["outputs"] = base.state["outputs"] + state["outputs"]
        merged["shared"] = merge_shared(base.state["shared"], state)
        merged.pop("shared_changes", None)
        for key in ("pending", "router_state", "requests"):
            merged[key] = state[key]
        for key in ("attempts", "pipeline", "ids"):
            merged.pop(key, None)
            if key in state:
                merged[key] = state[key]
        state = merged
    # only the blobs this checkpoint (and its base) name, verified against their hashes
    read: set[str] = set()
    strings: dict[int, tuple[str, str]] = {}
    state = await resolve_state(
        state, store=store, run_id=checkpoint.run_id, where=where, seen=read, strings=strings
    )
    resumed_blobs.set((checkpoint.run_id, frozenset(read), strings))
    state[_KEY] = checkpoint.checkpoint_id
    resumed_from.set((checkpoint.run_id, checkpoint.checkpoint_id) if by_run else None)
    return checkpoint, state


def _check_layout(state: Mapping[str, Any], where: str, *, delta_ok: bool) -> None:
    """Refuse a state whose layout is not format 1's (see :mod:`plait.durable`)."""

    def bad(what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"{where} is corrupt: its state {what}")

    kind = state.get("kind")
    if isinstance(kind, str) and kind not in ("full", "delta"):
        # a store wrapper's envelope (a signed or encrypted checkpoint) read without it
        raise bad(
            f"has kind {kind!r:.40}, expected 'full' or 'delta'; if a store wrapper wrote "
            "it (a signed or encrypted checkpoint), read the store through that wrapper, "
            "with its key"
        )
    if kind not in (("full", "delta") if delta_ok else ("full",)):
        raise bad(f"has kind {kind!r}, expected 'full'" + (" or 'delta'" if delta_ok else ""))
    shapes: dict[str, type] = {
        "pending": dict,
        "executor_state": dict,
        "router_state": dict,
        "requests": list,
        "outputs": list,
        "visits": dict,
    }
    for key, shape in shapes.items():
        if not isinstance(state.get(key), shape):
            raise bad(f"field {key!r} is {type(state.get(key)).__name__}, not {shape.__name__}")
    if kind == "full" and "shared" not in state:
        raise bad("lacks field 'shared'")
    if kind == "delta" and not isinstance(state.get("base"), str):
        raise bad("is a delta without the id of its base")
    for eid, messages in state["pending"].items():
        if not isinstance(messages, list):
            raise bad(f"holds pending messages for {eid!r} that are not a list")
    attempts = state.get("attempts", {})
    if not isinstance(attempts, dict) or not all(
        isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool)
        for k, n in attempts.items()
    ):
        raise bad("has attempt counts that are not a map of invocation keys to ints")
    for eid, count in state["visits"].items():
        if not isinstance(count, int) or isinstance(count, bool):
            raise bad(f"counts visits of {eid!r} as {count!r:.40}")
    for raw in state["requests"]:
        if not (
            isinstance(raw, dict)
            and isinstance(raw.get("request_id"), str)
            and isinstance(raw.get("executor_id"), str)
            and isinstance(raw.get("superstep"), int)
            and isinstance(raw.get("response_type"), (str, type(None)))
            and "request" in raw
        ):
            raise bad(f"holds a pending request of the wrong shape: {raw!r:.80}")


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
        changes = _topology_diff(topology, spec.topology())
    except (KeyError, TypeError, IndexError, AttributeError):  # a damaged first checkpoint
        changes = []
    return head + "different graph: " + "; ".join(changes or ["the topology signature differs"])


def _topology_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    changes: list[str] = []
    old_nodes = {n[0] for n in old["nodes"]}
    new_nodes = {n[0] for n in new["nodes"]}
    if added := sorted(new_nodes - old_nodes):
        changes.append(f"executors added: {', '.join(added)}")
    if removed := sorted(old_nodes - new_nodes):
        changes.append(f"executors removed: {', '.join(removed)}")
    old_edges = {json.dumps(g, sort_keys=True): g[0] for g in old["edge_groups"]}
    new_edges = {json.dumps(g, sort_keys=True): g[0] for g in new["edge_groups"]}
    if added := sorted(new_edges[k] for k in set(new_edges) - set(old_edges)):
        changes.append(f"edges added or changed: {', '.join(added)}")
    if removed := sorted(old_edges[k] for k in set(old_edges) - set(new_edges)):
        changes.append(f"edges removed or changed: {', '.join(removed)}")
    if old["start"] != new["start"]:
        changes.append(f"start changed: {old['start']} -> {new['start']}")
    return changes


def restore_state(
    graph: CompiledGraph, run_state: RunState, data: Mapping[str, Any], *, cut: bool = True
) -> dict[str, list[Any]]:
    """Fill ``run_state`` from materialised checkpoint ``data``; return the pending inbox.

    Values decode into the graph's :func:`~plait.spi.declared_types` only. A checkpoint
    taken at a cut of the pipelined schedule is decoded by that schedule (``cut``: the
    run is resumed; else only what a reader needs, such as the pending requests, is).

    :raises CheckpointDecodeError: a value names a type the workflow does not declare.
    :raises CorruptCheckpointError: the state is mis-shaped.
    :raises UnknownNameError: the checkpoint is a cut and the schedule that took it is not
        installed (naming the run, the checkpoint and ``plait-pipeline``).
    """
    checkpoint_id = data.get(_KEY)
    where = f"run {run_state.run_id!r}" + (
        f", checkpoint {checkpoint_id!r}" if checkpoint_id else ""
    )
    _check_layout(data, where, delta_ok=False)
    decode = functools.partial(decode_value, types=declared_types(graph))
    try:
        return _restore(graph, run_state, data, decode, where, cut)
    except DecodeError as exc:
        tag = f" (type tag {exc.tag!r})" if exc.tag else ""
        raise CheckpointDecodeError(f"{where} does not decode{tag}: {exc}") from exc
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state does not rebuild ({type(exc).__name__}: {exc})"
        ) from exc


def _restore(
    graph: CompiledGraph,
    run_state: RunState,
    data: Mapping[str, Any],
    decode: Callable[[Any], Any],
    where: str,
    cut: bool,
) -> dict[str, list[Any]]:
    types = declared_types(graph)
    for eid, snapshot in data["executor_state"].items():
        executor = graph.executors.get(eid)
        if executor is not None:
            run_state.executor_state[eid] = executor.restore_state(decode(snapshot))
    shared = decode(data["shared"])
    if not isinstance(shared, dict):
        raise CorruptCheckpointError(f"{where} is corrupt: its shared state is not a dict")
    run_state.shared.update(shared)
    run_state.outputs.extend(decode(data["outputs"]))
    run_state.visits.update(data["visits"])
    run_state.attempts.update(data.get("attempts") or {})
    for gid, snapshot in data["router_state"].items():
        runner = graph.edge_runners.get(gid)
        if runner is not None:
            run_state.router_state[gid] = runner.restore(snapshot, decode)
    for raw in data["requests"]:
        ref = raw["response_type"]
        if raw["executor_id"] not in graph.executors:
            raise CorruptCheckpointError(
                f"{where} is corrupt: a pending request names executor {raw['executor_id']!r},"
                " which the workflow does not have"
            )
        response_type: Any = Any
        if ref:
            response_type = types.get(ref)
            if response_type is None:
                raise CheckpointDecodeError(
                    f"{where} does not decode (type tag {ref!r}): the response type of "
                    f"request {raw['request_id']!r} is not a type this workflow declares"
                )
        run_state.pending_requests[raw["request_id"]] = PendingRequest(
            raw["request_id"],
            raw["executor_id"],
            decode(raw["request"]),
            response_type,
            raw["superstep"],
        )
    ids = data.get("ids")
    if isinstance(ids, dict):  # delivery ids of messages to executors taking them on arrival
        run_state.ids = {
            eid: [i for i in found if isinstance(i, str)]
            for eid, found in ids.items()
            if isinstance(found, list)
        }
    section = data.get("pipeline")
    if section is not None and cut:  # a cut of a pipelined run: its schedule resumes it
        schedule = graph.plugin_manager.registry("schedule").get(
            CUT_SCHEDULE, what=f"resuming {where}, a cut of that schedule"
        )
        run_state.cut = (CUT_SCHEDULE, schedule.decode_cut(section, decode))
    inbox: dict[str, list[Any]] = {}
    for eid, messages in data["pending"].items():
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
    so a bad one changes nothing and its request stays pending."""
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
        request = pending.pop(request_id)
        executor = graph.executors[request.executor_id]
        if any(h.input_type is RequestResponse for h in executor.handlers):
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
    recorded = stored
    if isinstance(stored, Mapping) and "nodes" not in stored:
        recorded = await _details(store, checkpoint, stored.get("digest"))
    changes = fingerprint_changes(recorded, current)
    raise WorkflowChangedError(
        f"run {checkpoint.run_id} (checkpoint {checkpoint.checkpoint_id}) was taken on a "
        f"different workflow: {'; '.join(changes)}. Resume it with the workflow that "
        "started it, or accept the change (accept_changes=True; plait resume "
        "--accept-changes)",
        changes,
    )


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
