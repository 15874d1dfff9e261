"""Reading checkpoints in the delta layout, which earlier Plait wrote and Plait now only reads.

Plait used to keep a checkpoint's cost to what changed two ways at once: a full snapshot
every 32 checkpoints with *deltas* between them (what changed since that snapshot, the
shared state key by key in a store without blobs), and content-addressed values
(:mod:`plait_durable._blobs`). The blobs subsume the deltas — shared state, outputs,
executor state and long lists are trees whose unchanged parts the last checkpoint shares
— so every checkpoint is now full (:class:`~plait_durable._typed.FullState`), and the
delta layout is read here, for runs an earlier Plait wrote::

    kind            "delta"
    base            the id of the full checkpoint of the same run it builds on
    pending, router_state, requests, ids, attempts, pipeline   as in a full state
    executor_state  {executor_id: snapshot} changed since base
    shared_changes  the shared-state keys changed since base, ``{"set": {key: value},
                    "unset": [key, ...]}`` (absent when nothing changed or when the delta
                    holds ``shared`` whole)
    shared          the whole shared state (only when it is not a plain dict, or the
                    store keeps blobs)
    outputs         workflow outputs since base
    visits          {executor_id: supersteps run} changed since base

A delta merged onto its base is the full state it stands for (:meth:`DeltaState.onto`,
what resuming reads; :func:`merge_state`, the stored JSON a checkpoint view shows). Stores
keep a kept delta's base (:attr:`~plait_durable.Checkpoint.base_id`), so both stay
readable for as long as the run is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ._errors import CorruptCheckpointError
from ._format import checkpoint_converter, corrupt
from ._layout import read_state, state_json
from ._typed import FullState, Json, StoredRequest

if TYPE_CHECKING:
    from .checkpoint import Checkpoint, CheckpointStore

__all__ = [
    "DeltaState",
    "SharedChanges",
    "apply_shared_changes",
    "load_delta",
    "merge_shared",
    "merge_state",
    "read_delta",
]


@attrs.frozen(kw_only=True)
class SharedChanges:
    """The shared-state keys a delta changed since its base: values ``set``, keys ``unset``."""

    set: dict[str, Json]
    unset: list[str]


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


def read_delta(data: Any, where: str) -> DeltaState:
    """Structure a stored delta (``data``, JSON) into its class, or refuse it.

    :param where: names the checkpoint in errors (``run 'r1', checkpoint 'c7'``).
    :raises CorruptCheckpointError: ``data`` is not the delta layout; the message names
        the checkpoint and the path of every field that is wrong.
    """
    try:
        delta: DeltaState = checkpoint_converter().structure(data, DeltaState)
    except Exception as exc:  # cattrs' validation errors, each with its path
        raise corrupt(where, "state", exc) from exc
    return delta


async def load_delta(store: CheckpointStore, checkpoint: Checkpoint, where: str) -> dict[str, Any]:
    """The full state delta ``checkpoint`` stands for, as stored JSON (its values still
    blob references): the delta checked against its layout, its base loaded from the
    store, checked, and the delta merged onto it.

    :raises CorruptCheckpointError: the delta or its base is mis-shaped, or the base is
        not a full checkpoint of the same run.
    :raises CheckpointNotFoundError: the base is gone.
    """
    delta = read_delta(checkpoint.state, where)
    base = await store.load(delta.base)
    base_where = f"run {base.run_id!r}, checkpoint {base.checkpoint_id!r}"
    if base.run_id != checkpoint.run_id or base.checkpoint_id != delta.base:
        raise CorruptCheckpointError(f"{where} is corrupt: its base {delta.base!r} is {base_where}")
    full = delta.onto(read_state(base.state, base_where))
    return state_json(full)


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def merge_shared(base: Any, state: Mapping[str, Any]) -> Any:
    """The stored shared state of delta ``state`` whose base's is ``base``: its whole
    ``shared`` when it has one, else ``base`` with its ``shared_changes`` applied."""
    if "shared" in state:
        return state["shared"]
    changes = state.get("shared_changes")
    if not isinstance(changes, dict):
        return base
    return apply_shared_changes(base, _mapping(changes.get("set")), _items(changes.get("unset")))


def merge_state(state: Mapping[str, Any], base: Mapping[str, Any] | None) -> dict[str, Any]:
    """A delta's ``state`` merged onto its base's, as resuming merges them (stored JSON
    in, stored JSON out; a section of the wrong shape counts as empty)."""
    if base is None or state.get("kind") != "delta":
        return dict(state)
    merged = dict(base)
    merged["kind"] = "delta"
    merged["base"] = state.get("base")
    merged["executor_state"] = {
        **_mapping(base.get("executor_state")),
        **_mapping(state.get("executor_state")),
    }
    merged["visits"] = {**_mapping(base.get("visits")), **_mapping(state.get("visits"))}
    merged["outputs"] = _items(base.get("outputs")) + _items(state.get("outputs"))
    merged["shared"] = merge_shared(base.get("shared"), state)
    merged.pop("shared_changes", None)
    for key in ("pending", "router_state", "requests"):
        merged[key] = state.get(key)
    merged.pop("attempts", None)
    if "attempts" in state:
        merged["attempts"] = state["attempts"]
    return merged
