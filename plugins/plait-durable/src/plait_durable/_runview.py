"""Reading stored checkpoints as they are: a read-only view (as stored JSON, its values read
back from blobs; a delta an earlier Plait wrote merged with its base), the diff of two
views, and forks of a run from any checkpoint.

Nothing here decodes a checkpoint into the workflow's types, nor imports anything stored
data names: the store is a trust boundary. :mod:`plait_durable._runindex` re-exports these, beside
the run index a fork is found through (``list_runs(forked_from=...)``).
"""

from __future__ import annotations

import time
import typing
import uuid
from collections.abc import Mapping
from typing import Any

import attrs
from plait import CheckpointError

from ._blobs import BlobWriter, externalize_state, has_blobs, resolve_state
from ._document import DOCUMENT_KEY, document_metadata, stored_document
from ._legacy import merge_state
from ._stores import error_summary
from .checkpoint import BlobStore, Checkpoint, CheckpointStore

__all__ = [
    "EDITABLE",
    "Change",
    "CheckpointView",
    "checkpoint_view",
    "diff_views",
    "fork_run",
    "merge_state",
]


# -- a read-only view of a checkpoint ---------------------------------------------------------


@attrs.frozen
class CheckpointView:
    """A checkpoint as stored JSON, its values read back from blobs (a delta an earlier
    Plait wrote merged with its base, :mod:`plait_durable._legacy`).

    :param checkpoint: the checkpoint as stored (its ``state`` is JSON values only).
    :param state: the state with its values read back and a delta's base merged in
        (``kind`` is the stored kind).
    :param base_id: the full checkpoint a delta built on, ``None`` for a full one.
    """

    checkpoint: Checkpoint
    state: Mapping[str, Any]
    base_id: str | None

    @property
    def error(self) -> Mapping[str, Any] | None:
        """A failed checkpoint's ``metadata["error"]`` (type, message, traceback …)."""
        error = self.checkpoint.metadata.get("error")
        return error if isinstance(error, dict) else None

    @property
    def error_line(self) -> str | None:
        """:attr:`error` as one line (:func:`plait_durable._stores.error_summary`)."""
        return error_summary(self.error)


async def checkpoint_view(store: CheckpointStore, checkpoint_id: str) -> CheckpointView:
    """Checkpoint ``checkpoint_id`` as stored JSON, its values read back from blobs (a
    delta an earlier Plait wrote merged with its base).

    :raises CheckpointNotFoundError: no such checkpoint (or its base is gone).
    :raises CheckpointError: the delta's base belongs to another run.
    """
    checkpoint = await store.load(checkpoint_id)
    state = checkpoint.state
    base_id = checkpoint.base_id
    if base_id is None and state.get("kind") == "delta" and isinstance(state.get("base"), str):
        base_id = state["base"]
    named = f"run {checkpoint.run_id!r}, checkpoint {checkpoint_id!r}"
    if base_id is None:
        resolved = await resolve_state(
            dict(state), store=store, run_id=checkpoint.run_id, where=named
        )
        return CheckpointView(checkpoint, resolved, None)
    base = await store.load(base_id)
    if base.run_id != checkpoint.run_id:
        raise CheckpointError(
            f"checkpoint {checkpoint_id!r} of run {checkpoint.run_id!r} names as its base "
            f"{base_id!r}, a checkpoint of run {base.run_id!r}"
        )
    merged = merge_state(state, base.state)
    resolved = await resolve_state(merged, store=store, run_id=checkpoint.run_id, where=named)
    return CheckpointView(checkpoint, resolved, base_id)


@attrs.frozen
class Change:
    """One difference between two views: the path to it (keys and list indexes), what
    happened (``added``, ``removed``, ``changed``) and the values before and after.
    """

    path: tuple[str | int, ...]
    op: str
    before: Any = None
    after: Any = None

    @property
    def where(self) -> str:
        """The path as text: ``executor_state.writer.count``."""
        return ".".join(str(part) for part in self.path) or "(root)"


#: Sections of a state compared by :func:`diff_views`, in this order.
_SECTIONS = ("pending", "executor_state", "shared", "outputs", "requests", "router_state")


def diff_views(
    before: Mapping[str, Any] | CheckpointView, after: Mapping[str, Any] | CheckpointView
) -> list[Change]:
    """What changed from ``before`` to ``after`` (views or merged states), section by
    section: dicts are compared key by key, anything else as a whole value.
    """
    old = before.state if isinstance(before, CheckpointView) else before
    new = after.state if isinstance(after, CheckpointView) else after
    changes: list[Change] = []
    for section in _SECTIONS:
        _diff(old.get(section), new.get(section), (section,), changes, section in old)
    return changes


def _diff(
    old: Any, new: Any, path: tuple[str | int, ...], out: list[Change], present: bool = True
) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key not in new:
                out.append(Change((*path, key), "removed", before=old[key]))
            elif key not in old:
                out.append(Change((*path, key), "added", after=new[key]))
            else:
                _diff(old[key], new[key], (*path, key), out)
    elif old != new:
        if not present and new is not None:
            out.append(Change(path, "added", after=new))
        else:
            out.append(Change(path, "changed", before=old, after=new))


# -- forks ------------------------------------------------------------------------------------


#: The sections of a checkpoint's state a fork may replace (``fork_run(edits=...)``).
EDITABLE = ("pending", "executor_state", "shared")


async def fork_run(
    store: CheckpointStore,
    run_id: str,
    checkpoint_id: str,
    *,
    new_run_id: str | None = None,
    edits: Mapping[str, Any] | None = None,
) -> str:
    """Copy checkpoint ``checkpoint_id`` of run ``run_id`` (merged with its base) into a new
    run and return the new run's id.

    The new run's only checkpoint is a full one with the same superstep, state and topology
    signature, so resuming the new run (with the same workflow) goes on from there; its
    metadata records ``forked_from`` (the run and the checkpoint), and keeps the topology of
    the origin run's first checkpoint. A failed checkpoint forks into a run that is
    ``running`` again (its pending state is the last good superstep's) and leaves its error
    behind.

    ``edits`` replaces whole sections of the copied state (:data:`EDITABLE`: the next
    inputs, executor state, shared state) with the JSON values given, as stored (encoded)
    JSON; the new run's metadata lists them as ``edited``. Resuming decodes them as any
    stored value: only into the types the workflow declares.

    :raises CheckpointNotFoundError: no such checkpoint.
    :raises CheckpointError: the checkpoint belongs to another run.
    :raises ValueError: an edit of a section that is not :data:`EDITABLE`.
    """
    view = await checkpoint_view(store, checkpoint_id)
    origin = view.checkpoint
    if origin.run_id != run_id:
        raise CheckpointError(
            f"checkpoint {checkpoint_id!r} belongs to run {origin.run_id!r}, not {run_id!r}"
        )
    metadata = {k: v for k, v in origin.metadata.items() if k != "error"}
    if "topology" not in metadata:
        listing = await store.list(run_id)
        if listing:
            first = await store.load(listing[0].checkpoint_id)
            if "topology" in first.metadata:
                metadata["topology"] = first.metadata["topology"]
    metadata["forked_from"] = {"run_id": run_id, "checkpoint_id": checkpoint_id}
    state = dict(view.state)
    state["kind"] = "full"
    state.pop("base", None)
    if edits:
        unknown = sorted(set(edits) - set(EDITABLE))
        if unknown:
            raise ValueError(f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE)}")
        state.update(edits)
        metadata["edited"] = sorted(edits)
    requests = state.get("requests")
    if isinstance(requests, list) and requests:
        status = "idle_with_pending_requests"
    elif state.get("pending"):
        status = "running"
    else:
        status = "idle"
    forked = Checkpoint(
        checkpoint_id=uuid.uuid4().hex,
        run_id=new_run_id or uuid.uuid4().hex,
        superstep=origin.superstep,
        parent_id=None,
        signature=origin.signature,
        status=status,
        created_at=time.time(),
        state=state,
        format_version=origin.format_version,
        metadata=metadata,
        base_id=None,
    )
    if await store.list(forked.run_id):
        raise CheckpointError(f"run {forked.run_id!r} exists already; fork into a new run id")
    if has_blobs(store):  # a run's references stay inside it: the fork gets its own blobs
        writer = BlobWriter()
        forked = attrs.evolve(forked, state=externalize_state(forked.state, writer))
        if DOCUMENT_KEY in metadata:  # the pinned document too (its blob is the origin's)
            try:
                document = await stored_document(store, origin)
            except CheckpointError:
                document = None  # unreadable: the fork keeps no document
            metadata.pop(DOCUMENT_KEY)
            if document is not None:
                metadata[DOCUMENT_KEY] = document_metadata(document, writer)
            forked = attrs.evolve(forked, metadata=metadata)
        await typing.cast(BlobStore, store).save(forked, blobs=writer.take_new())
    else:
        await store.save(forked)
    return forked.run_id
