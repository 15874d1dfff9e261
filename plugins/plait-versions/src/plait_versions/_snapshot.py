"""A stored run as a migration sees it: :class:`RunSnapshot`, and the stored values in it.

A migration runs after a deploy, when the classes a run stored may have changed or gone
(a renamed field, a message type replaced). So a snapshot never decodes stored values into
classes: a value of a class is a :class:`Record` (its type tag, ``module:QualName``, and
its fields as stored), the built-in types (tuples, sets, bytes) are themselves, JSON is
JSON. A migration edits records (``record.fields["body"] = record.fields.pop("text")``,
``record.type = "app:Draft"``) or puts instances of the new workflow's classes in their
place; :func:`state_of` encodes the result back, and the caller then checks it against
the new workflow's declared types before anything runs.

Nothing here imports a module a stored value names: a tag is a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from plait_durable import encode_value

__all__ = ["PendingRequestRecord", "Record", "RunSnapshot", "snapshot_of", "state_of"]

#: the codec's tag key (:mod:`plait_durable.codec`)
TAG = "__plait__"


@attrs.define
class Record:
    """A stored value of a class, as data: its type tag (``module:QualName``, the class
    that stored it) and its fields (stored values themselves: JSON, records, tuples …).

    :param type: the class's tag; set it to the new class's tag when a migration moves
        a value to another class.
    :param fields: the fields by name (a dict for attrs classes and dataclasses).
    """

    type: str
    fields: Any


@attrs.define(kw_only=True)
class PendingRequestRecord:
    """A request for outside input the run waits on.

    :param request_id: the request's id (the answer names it).
    :param executor_id: the executor that asked (it gets the answer).
    :param request: the request's payload (a stored value).
    :param response_type: the tag of the answer's type (``None``: any, or a type with no
        tag such as a ``Literal``).
    :param response_type_name: the answer type's name, as the run's requests show it.
    :param superstep: the superstep it was asked in.
    """

    request_id: str
    executor_id: str
    request: Any
    response_type: str | None
    response_type_name: str
    superstep: int


@attrs.define(kw_only=True)
class RunSnapshot:
    """Everything a stored run holds, as a migration takes and returns it.

    :param run_id: the run (read only: a migration never renames a run).
    :param version: the workflow version the snapshot is of (a chain's migration from N
        gets ``N``; the caller sets ``N + 1`` on what it returns).
    :param superstep: the superstep the run goes on after (read only).
    :param executor_state: each executor's state by executor id (its snapshot as the
        executor took it).
    :param pending: the messages waiting on each edge into an executor, by the id of the
        executor they go to: the next superstep's deliveries, in delivery order.
    :param router_state: the state of each stateful edge group (fan-in buffers) by edge
        group id, as its router stored it (JSON).
    :param shared: the run's shared state, by key.
    :param requests: the requests for outside input the run waits on.
    :param outputs: the workflow's outputs so far.
    """

    run_id: str
    version: int | None
    superstep: int
    executor_state: dict[str, Any] = attrs.field(factory=dict)
    pending: dict[str, list[Any]] = attrs.field(factory=dict)
    router_state: dict[str, Any] = attrs.field(factory=dict)
    shared: dict[str, Any] = attrs.field(factory=dict)
    requests: list[PendingRequestRecord] = attrs.field(factory=list)
    outputs: list[Any] = attrs.field(factory=list)


def plain(data: Any) -> Any:
    """A stored (encoded) value as a snapshot holds it: records for classes, built-in
    types as themselves, JSON as JSON."""
    if isinstance(data, list):
        return [plain(item) for item in data]
    if not isinstance(data, dict):
        return data
    if TAG not in data:
        return {key: plain(item) for key, item in data.items()}
    tag, raw = data.get(TAG), data.get("v")
    if tag == "dict" and isinstance(raw, dict):
        return {key: plain(item) for key, item in raw.items()}
    if tag == "tuple" and isinstance(raw, list):
        return tuple(plain(item) for item in raw)
    if tag in ("set", "frozenset") and isinstance(raw, list):
        items = [plain(item) for item in raw]
        try:
            return set(items) if tag == "set" else frozenset(items)
        except TypeError:  # an unhashable item (a record): kept as stored
            return Record(str(tag), items)
    if tag == "bytes" and isinstance(raw, str):
        return bytes.fromhex(raw)
    if tag == "float" and isinstance(raw, str):
        return float(raw)
    return Record(str(tag), plain(raw))


def stored(value: Any, path: str = "") -> Any:
    """A snapshot's value encoded as a checkpoint stores it (:func:`plain` inverted):
    a record as its tag and fields, anything else through the checkpoint codec."""
    if isinstance(value, Record):
        return {TAG: value.type, "v": stored(value.fields, path)}
    if isinstance(value, list):
        return [stored(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if type(value) is dict:
        out = {str(key): stored(item, f"{path}.{key}") for key, item in value.items()}
        return {TAG: "dict", "v": out} if TAG in out else out
    if type(value) is tuple:
        return {TAG: "tuple", "v": [stored(x, f"{path}[{i}]") for i, x in enumerate(value)]}
    return encode_value(value, path)


def snapshot_of(
    state: Mapping[str, Any], *, run_id: str, version: int | None, superstep: int
) -> RunSnapshot:
    """The snapshot of a stored run's full state (a checkpoint's state with its values
    read back from blobs: :func:`plait_durable.checkpoint_view`)."""
    requests = [
        PendingRequestRecord(
            request_id=str(r["request_id"]),
            executor_id=str(r["executor_id"]),
            request=plain(r.get("request")),
            response_type=r.get("response_type"),
            response_type_name=str(r.get("response_type_name", "")),
            superstep=int(r.get("superstep", 0)),
        )
        for r in state.get("requests") or []
    ]
    return RunSnapshot(
        run_id=run_id,
        version=version,
        superstep=superstep,
        executor_state={k: plain(v) for k, v in (state.get("executor_state") or {}).items()},
        pending={k: [plain(m) for m in v] for k, v in (state.get("pending") or {}).items()},
        router_state=dict(state.get("router_state") or {}),
        shared=dict(plain(state.get("shared") or {})),
        requests=requests,
        outputs=[plain(o) for o in state.get("outputs") or []],
    )


def state_of(snapshot: RunSnapshot, before: Mapping[str, Any]) -> dict[str, Any]:
    """The full state a checkpoint stores for ``snapshot``; what the snapshot does not
    hold (visit counts, the delivery ids of messages still pending as they were) comes
    from ``before``, the state the snapshot was taken of, for the executors still there.

    :raises plait_durable.EncodeError: a value has no encoding (its path in the snapshot).
    """
    pending = {
        eid: [stored(m, f"pending[{eid!r}][{i}]") for i, m in enumerate(messages)]
        for eid, messages in snapshot.pending.items()
    }
    old_pending = before.get("pending") or {}
    ids = {
        eid: list(found)
        for eid, found in (before.get("ids") or {}).items()
        if eid in pending and pending[eid] == old_pending.get(eid)
    }
    visits = dict(before.get("visits") or {})
    out: dict[str, Any] = {
        "kind": "full",
        "pending": pending,
        "router_state": dict(snapshot.router_state),
        "requests": [
            {
                "request_id": r.request_id,
                "executor_id": r.executor_id,
                "request": stored(r.request, f"requests[{i}].request"),
                "response_type": r.response_type,
                "response_type_name": r.response_type_name,
                "superstep": r.superstep,
            }
            for i, r in enumerate(snapshot.requests)
        ],
    }
    if ids:
        out["ids"] = ids
    out["executor_state"] = {
        eid: stored(value, f"executor_state[{eid!r}]")
        for eid, value in snapshot.executor_state.items()
    }
    out["shared"] = stored(dict(snapshot.shared), "shared")
    out["outputs"] = [stored(o, f"outputs[{i}]") for i, o in enumerate(snapshot.outputs)]
    out["visits"] = visits
    if before.get("attempts"):
        out["attempts"] = dict(before["attempts"])
    return out
