"""The layout of a checkpoint's state (format 1), and the typed classes it is read into.

``Checkpoint.state`` is a :class:`~plait_durable._typed.FullState`: everything a run needs
to go on. What makes a checkpoint cost what changed is not its layout but its values: in a
store that keeps blobs they are content-addressed (:mod:`plait_durable._blobs`), so a value
the last checkpoint held costs a reference, and the growing sections are trees whose
unchanged parts are shared. ::

    kind            "full"
    pending         {executor_id: [message, ...]} — the next superstep's deliveries
    router_state    {edge_group_id: snapshot} — every stateful edge group (fan-in buffers)
    requests        every pending request for outside input (``StoredRequest``)
    ids             the delivery ids of pending messages to executors taking them on
                    arrival (absent when there are none)
    executor_state  {executor_id: snapshot} — every non-empty executor state
    shared          the shared state
    outputs         the workflow's outputs so far
    visits          {executor_id: supersteps run}
    attempts        {invocation key: failed attempts} while a retry waits (absent otherwise)
    pipeline        a pipelined run's cut (:func:`plait_pipeline.decode_cut`; absent otherwise)
    observed        what the run's observers kept with this checkpoint
                    (``RunObserver.checkpoint_section``: a recorder's outside calls;
                    absent when they kept nothing); never read to resume

Earlier Plait also wrote *deltas* (``kind: "delta"``) on a full state; they are read,
never written (:mod:`plait_durable._legacy`).

The checkpointer writes the JSON of these classes directly, in one pass over the run's
values (:func:`state_fields`, :func:`request_fields`: the key order is the classes' field
order and an absent field is left out, so the bytes are those format 1 has always had);
resuming structures it into them through
:func:`~plait_durable._format.checkpoint_converter`. Structuring checks the layout, every
type and no unknown key; a state that does
not fit is a :class:`~plait_durable.CorruptCheckpointError` naming the checkpoint and the path of
each field that is wrong (``state.requests[0].executor_id holds int 7, expected str``).
Values (messages, snapshots, shared state, outputs) stay :data:`~plait_durable._typed.Json`
until :func:`plait_durable.decode_value` decodes them into the types the workflow declares.
The classes themselves are in :mod:`plait_durable._typed`, imported when a state is first
read: a run that only writes checkpoints never builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import attrs

from ._errors import CorruptCheckpointError
from ._format import checkpoint_converter, corrupt

if TYPE_CHECKING:
    from ._typed import FullState

__all__ = [
    "read_state",
    "request_fields",
    "state_fields",
    "state_json",
    "state_kind",
]


def state_fields(
    *,
    pending: dict[str, list[Any]],
    router_state: dict[str, Any],
    requests: list[dict[str, Any]],
    ids: dict[str, list[str]] | None,
    executor_state: Any,
    shared: Any,
    outputs: Any,
    visits: Any,
    attempts: dict[str, int] | None = None,
    pipeline: Any = None,
    observed: Any = None,
) -> dict[str, Any]:
    """A full state as the JSON object a checkpoint stores, from its sections (JSON
    already: each value encoded and, in a store that keeps blobs, externalized): the
    keys in :class:`~plait_durable._typed.FullState`'s field order, an optional section
    left out when it is ``None``, so the bytes are those format 1 has always had. What the
    checkpointer writes, in one pass over the run's values; :func:`state_json` is the same
    for a typed state."""
    out: dict[str, Any] = {
        "kind": "full",
        "pending": pending,
        "router_state": router_state,
        "requests": requests,
    }
    if ids is not None:
        out["ids"] = ids
    out["executor_state"] = executor_state
    out["shared"] = shared
    out["outputs"] = outputs
    out["visits"] = visits
    if attempts is not None:
        out["attempts"] = attempts
    if pipeline is not None:
        out["pipeline"] = pipeline
    if observed is not None:
        out["observed"] = observed
    return out


def request_fields(
    *,
    request_id: str,
    executor_id: str,
    request: Any,
    response_type: str | None,
    response_type_name: str,
    superstep: int,
) -> dict[str, Any]:
    """A pending request as the JSON object a checkpoint stores: the keys in
    :class:`~plait_durable._typed.StoredRequest`'s field order."""
    return {
        "request_id": request_id,
        "executor_id": executor_id,
        "request": request,
        "response_type": response_type,
        "response_type_name": response_type_name,
        "superstep": superstep,
    }


def state_json(state: FullState) -> dict[str, Any]:
    """``state`` as the JSON object a checkpoint stores (:func:`state_fields`)."""
    return state_fields(
        pending=state.pending,
        router_state=state.router_state,
        requests=[request_fields(**attrs.asdict(r, recurse=False)) for r in state.requests],
        ids=state.ids,
        executor_state=state.executor_state,
        shared=state.shared,
        outputs=state.outputs,
        visits=state.visits,
        attempts=state.attempts,
        pipeline=state.pipeline,
        observed=state.observed,
    )


def state_kind(data: Any, where: str) -> str:
    """The kind of a stored state: ``"full"``, or ``"delta"`` (written by an earlier
    Plait, :mod:`plait_durable._legacy`).

    :param where: names the checkpoint in errors (``run 'r1', checkpoint 'c7'``).
    :raises CorruptCheckpointError: ``data`` is neither, naming the kind it has.
    """
    kind = data.get("kind") if type(data) is dict else None
    if kind in ("full", "delta"):
        return cast(str, kind)
    if isinstance(kind, str):
        # a store wrapper's envelope (a signed or encrypted checkpoint) read without it
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state has kind {kind!r:.40}, expected 'full' or "
            "'delta'; if a store wrapper wrote it (a signed or encrypted checkpoint), read "
            "the store through that wrapper, with its key"
        )
    raise CorruptCheckpointError(
        f"{where} is corrupt: its state has kind {kind!r:.40}, expected 'full' or 'delta'"
    )


def read_state(data: Any, where: str) -> FullState:
    """Structure a stored full state (``data``, JSON, its values read back from blobs)
    into its class, or refuse it.

    :param where: names the checkpoint in errors (``run 'r1', checkpoint 'c7'``).
    :raises CorruptCheckpointError: ``data`` is not the full layout; the message names the
        checkpoint and the path of every field that is wrong.
    """
    if state_kind(data, where) != "full":
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state has kind 'delta', expected 'full'"
        )
    from ._typed import FullState

    try:
        state: FullState = checkpoint_converter().structure(data, FullState)
    except Exception as exc:  # cattrs' validation errors, each with its path
        raise corrupt(where, "state", exc) from exc
    return state
