"""Resuming a run: the checkpoint to continue from, its state rebuilt, answers delivered.

.. versionadded:: 0.1
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .checkpoint import Checkpoint, CheckpointStore
from .codec import decode_value, import_type
from .context import RequestResponse
from .errors import CheckpointNotFoundError, ResponseTypeError, TopologyMismatchError
from .spec import WorkflowSpec
from .state import PendingRequest, RunState
from .types import is_instance, type_name

if TYPE_CHECKING:
    from .graph import CompiledGraph

__all__ = ["answer_requests", "load_run", "restore_state"]


async def load_run(
    store: CheckpointStore, id: str, spec: WorkflowSpec, signature: str
) -> tuple[Checkpoint, dict[str, Any]]:
    """The checkpoint to resume (the latest of run ``id``, or checkpoint ``id``) and its
    materialised state (a delta merged onto its base)."""
    checkpoint = await store.latest(id)
    if checkpoint is None:
        try:
            checkpoint = await store.load(id)
        except CheckpointNotFoundError:
            raise CheckpointNotFoundError(
                f"no run and no checkpoint with id {id!r} in the store"
            ) from None
    if checkpoint.signature != signature:
        raise TopologyMismatchError(await _mismatch(store, checkpoint, spec))
    state = dict(checkpoint.state)
    if state.get("kind") == "delta":
        base = await store.load(state["base"])
        merged = dict(base.state)
        merged["executor_state"] = {**base.state["executor_state"], **state["executor_state"]}
        merged["visits"] = {**base.state["visits"], **state["visits"]}
        merged["outputs"] = base.state["outputs"] + state["outputs"]
        merged["shared"] = state.get("shared", base.state["shared"])
        for key in ("pending", "router_state", "requests"):
            merged[key] = state[key]
        state = merged
    return checkpoint, state


async def _mismatch(store: CheckpointStore, checkpoint: Checkpoint, spec: WorkflowSpec) -> str:
    head = f"run {checkpoint.run_id} (checkpoint {checkpoint.checkpoint_id}) was taken on a "
    topology: Any = None
    for info in await store.list(checkpoint.run_id):
        first = await store.load(info.checkpoint_id)
        topology = first.metadata.get("topology")
        if topology is not None:
            break
    if topology is None:
        return head + "different graph (its topology signature differs); rebuild the original"
    changes = _topology_diff(topology, spec.topology())
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
    graph: CompiledGraph, run_state: RunState, data: Mapping[str, Any]
) -> dict[str, list[Any]]:
    """Fill ``run_state`` from materialised checkpoint ``data``; return the pending inbox."""
    for eid, snapshot in data["executor_state"].items():
        executor = graph.executors.get(eid)
        if executor is not None:
            run_state.executor_state[eid] = executor.restore_state(decode_value(snapshot))
    run_state.shared.update(decode_value(data["shared"]))
    run_state.outputs.extend(decode_value(data["outputs"]))
    run_state.visits.update(data["visits"])
    for gid, snapshot in data["router_state"].items():
        runner = graph.edge_runners.get(gid)
        if runner is not None:
            run_state.router_state[gid] = runner.restore(snapshot, decode_value)
    for raw in data["requests"]:
        ref = raw.get("response_type")
        response_type: Any = import_type(ref) if ref else Any
        run_state.pending_requests[raw["request_id"]] = PendingRequest(
            raw["request_id"],
            raw["executor_id"],
            decode_value(raw["request"]),
            response_type,
            raw["superstep"],
        )
    return {eid: [decode_value(m) for m in msgs] for eid, msgs in data["pending"].items()}


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
