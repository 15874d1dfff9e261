"""The layout of a checkpoint's state (format 1), as typed classes.

``Checkpoint.state`` is one of two classes, told apart by ``kind``::

    kind            "full" (FullState) or "delta" (DeltaState)
    pending         {executor_id: [message, ...]} — the next superstep's deliveries
    router_state    {edge_group_id: snapshot} — every stateful edge group (fan-in buffers)
    requests        every pending request for outside input (StoredRequest)
    ids             the delivery ids of pending messages to executors taking them on
                    arrival (absent when there are none)
    base            delta only: the id of the full checkpoint it builds on
    executor_state  {executor_id: snapshot}  full: every non-empty state; delta: changed since base
    shared_changes  delta only: the shared-state keys changed since base, ``{"set": {key:
                    value}, "unset": [key, ...]}`` (SharedChanges; absent when nothing changed
                    or when the delta holds ``shared`` whole)
    shared          the shared state (full: always; delta: whole only when it is not a plain
                    dict, or the store keeps blobs)
    outputs         workflow outputs (full: all so far; delta: since base)
    visits          {executor_id: supersteps run} (full: all; delta: changed since base)
    attempts        {invocation key: failed attempts} while a retry waits (absent otherwise)
    pipeline        a pipelined run's cut (:func:`plait_pipeline.decode_cut`; absent otherwise)

The checkpointer builds these classes and unstructures them, resuming structures them,
both through :func:`~plait_durable._format.checkpoint_converter`: the key order is the
classes' field order and an absent field is left out, so the bytes are those format 1 has
always had. Structuring checks the layout, every type and no unknown key; a state that does
not fit is a :class:`~plait_durable.CorruptCheckpointError` naming the checkpoint and the path of
each field that is wrong (``state.requests[0].executor_id holds int 7, expected str``).
Values (messages, snapshots, shared state, outputs) stay :data:`~plait_durable._format.Json`
until :func:`plait_durable.decode_value` decodes them into the types the workflow declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from ._errors import CorruptCheckpointError
from ._format import Json, checkpoint_converter, corrupt, unstructure_in_order

__all__ = [
    "DeltaState",
    "FullState",
    "SharedChanges",
    "StoredRequest",
    "apply_shared_changes",
    "read_state",
    "state_json",
]


@attrs.frozen(kw_only=True)
class StoredRequest:
    """A pending request for outside input: its id, the executor that asked, the request
    (a value), the response type's tag (``None``: any) and name, and the superstep."""

    request_id: str
    executor_id: str
    request: Json
    response_type: str | None
    response_type_name: str
    superstep: int


@attrs.frozen(kw_only=True)
class SharedChanges:
    """The shared-state keys a delta changed since its base: values ``set``, keys ``unset``."""

    set: dict[str, Json]
    unset: list[str]


@attrs.frozen(kw_only=True)
class FullState:
    """The state of a full checkpoint: everything a run needs to go on."""

    kind: Literal["full"] = "full"
    pending: dict[str, list[Json]]
    router_state: dict[str, Json]
    requests: list[StoredRequest]
    ids: dict[str, list[str]] | None = None
    executor_state: dict[str, Json]
    shared: Json
    outputs: list[Json]
    visits: dict[str, int]
    attempts: dict[str, int] | None = None
    pipeline: Json | None = None


@attrs.frozen(kw_only=True)
class DeltaState:
    """The state of a delta: what changed since its ``base`` (a full checkpoint of the same
    run), and what is pending now."""

    kind: Literal["delta"] = "delta"
    pending: dict[str, list[Json]]
    router_state: dict[str, Json]
    requests: list[StoredRequest]
    ids: dict[str, list[str]] | None = None
    base: str
    executor_state: dict[str, Json]
    shared_changes: SharedChanges | None = None
    shared: Json | None = None
    outputs: list[Json]
    visits: dict[str, int]
    attempts: dict[str, int] | None = None
    pipeline: Json | None = None

    def onto(self, base: FullState) -> FullState:
        """This delta merged onto its ``base``: the full state it stands for."""
        return FullState(
            pending=self.pending,
            router_state=self.router_state,
            requests=self.requests,
            ids=self.ids,
            executor_state={**base.executor_state, **self.executor_state},
            shared=self.shared_onto(base.shared),
            outputs=[*base.outputs, *self.outputs],
            visits={**base.visits, **self.visits},
            attempts=self.attempts,
            pipeline=self.pipeline,
        )

    def shared_onto(self, base: Any) -> Any:
        """The shared state this delta stands for, on its base's ``base``."""
        if self.shared is not None:
            return self.shared
        if self.shared_changes is None:
            return base
        return apply_shared_changes(base, self.shared_changes.set, self.shared_changes.unset)


def apply_shared_changes(base: Any, changed: Mapping[str, Any], unset: list[Any]) -> Any:
    """``base`` (a stored shared state) with the keys in ``changed`` set and those in
    ``unset`` gone; ``base`` itself when it is not a plain dict."""
    if not isinstance(base, dict):
        return base
    gone = set(unset)
    merged = {key: value for key, value in base.items() if key not in gone}
    merged.update(changed)
    return merged


def _unstructure_hooks() -> dict[type, Callable[[Any], dict[str, Any]]]:
    """The unstructure hooks of the two states (the checkpointer calls them directly)."""
    request = unstructure_in_order(StoredRequest)

    def requests(items: list[StoredRequest]) -> list[dict[str, Any]]:
        return [request(item) for item in items]

    changes = unstructure_in_order(SharedChanges)
    hooks: dict[str, Callable[[Any], Any]] = {"requests": requests, "shared_changes": changes}
    return {
        StoredRequest: request,
        SharedChanges: changes,
        FullState: unstructure_in_order(FullState, hooks, leave_out_none=True),
        DeltaState: unstructure_in_order(DeltaState, hooks, leave_out_none=True),
    }


#: How each class of the layout unstructures (:func:`~plait_durable._format.unstructure_in_order`).
UNSTRUCTURE = _unstructure_hooks()


def state_json(state: FullState | DeltaState) -> dict[str, Any]:
    """``state`` as the JSON object a checkpoint stores."""
    return UNSTRUCTURE[type(state)](state)


def read_state(data: Any, where: str, *, delta_ok: bool = True) -> FullState | DeltaState:
    """Structure a stored state (``data``, JSON) into its class, or refuse it.

    :param where: names the checkpoint in errors (``run 'r1', checkpoint 'c7'``).
    :param delta_ok: whether a delta is what the caller expects (a base must be full).
    :raises CorruptCheckpointError: ``data`` is not one of the two layouts; the message
        names the checkpoint and the path of every field that is wrong.
    """
    kind = data.get("kind") if type(data) is dict else None
    if isinstance(kind, str) and kind not in ("full", "delta"):
        # a store wrapper's envelope (a signed or encrypted checkpoint) read without it
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state has kind {kind!r:.40}, expected 'full' or "
            "'delta'; if a store wrapper wrote it (a signed or encrypted checkpoint), read "
            "the store through that wrapper, with its key"
        )
    if kind not in (("full", "delta") if delta_ok else ("full",)):
        expected = "'full' or 'delta'" if delta_ok else "'full'"
        raise CorruptCheckpointError(
            f"{where} is corrupt: its state has kind {kind!r:.40}, expected {expected}"
        )
    cls: type[FullState | DeltaState] = FullState if kind == "full" else DeltaState
    try:
        state: FullState | DeltaState = checkpoint_converter().structure(data, cls)
    except Exception as exc:  # cattrs' validation errors, each with its path
        raise corrupt(where, "state", exc) from exc
    return state
