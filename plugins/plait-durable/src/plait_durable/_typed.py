"""The typed records a stored checkpoint is read into (format 1): its body
(:class:`CheckpointBody`) and its state (:class:`FullState`, with its pending requests as
:class:`StoredRequest`).

Reading structures a checkpoint into them through
:func:`~plait_durable._format.checkpoint_converter`, which checks every type and refuses
an unknown key; writing never builds them: the checkpointer writes their JSON itself
(:func:`~plait_durable._format.checkpoint_fields`,
:func:`~plait_durable._layout.state_fields`, in their field order), so a run that only
writes checkpoints never imports this module. :mod:`plait_durable._layout` says what
each section of the state holds.
"""

from __future__ import annotations

from typing import Literal, NewType

import attrs

__all__ = ["CheckpointBody", "FullState", "Json", "StoredRequest"]

#: A JSON value a checkpoint keeps as it is (a message, a snapshot, the shared state …):
#: structuring passes it through untouched, and resuming decodes it into declared types.
Json = NewType("Json", object)


@attrs.frozen(kw_only=True)
class CheckpointBody:
    """The body of a stored checkpoint (format 1): the fields of
    :class:`~plait_durable.Checkpoint`, in its order, every one present. ``state`` is the
    run's state (:mod:`plait_durable._layout` types it); ``metadata`` the run's
    annotations (workflow, fingerprint, topology, error …).
    """

    checkpoint_id: str
    run_id: str
    superstep: int
    parent_id: str | None
    signature: str
    status: str
    created_at: float
    state: dict[str, Json]
    format_version: int
    metadata: dict[str, Json]
    base_id: str | None


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
    observed: Json | None = None
