"""Checkpoint records, their byte encoding and the store protocol.

A :class:`Checkpoint` holds what a run needs to go on and nothing of the topology:
pending messages, router state, executor state, shared state, pending requests, the
superstep number, the run id, the parent checkpoint id, the topology signature and a
format version. Stores persist the bytes :func:`encode_checkpoint` produces; the bytes
carry a SHA-256 of their body, so a flipped byte or a truncated row is a
:class:`~plait.errors.CorruptCheckpointError`, never a silently wrong resume.

Stores are chosen by URL scheme (``memory://``, ``file://DIR``, ``sqlite:///PATH``,
``redis://…``, ``postgresql://…``) through the ``plait_register_checkpoint_stores`` hook.

.. versionadded:: 0.1
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from .errors import CorruptCheckpointError

__all__ = [
    "FORMAT_VERSION",
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStore",
    "CheckpointStoreFactory",
    "encode_checkpoint",
    "decode_checkpoint",
    "open_store",
]

#: Version of the checkpoint byte format and of the ``state`` layout inside it.
FORMAT_VERSION = 1

_MAGIC = b"PLAITCP1"


@attrs.frozen
class CheckpointInfo:
    """What a store lists about a checkpoint without decoding its state."""

    checkpoint_id: str
    run_id: str
    superstep: int
    parent_id: str | None
    status: str
    created_at: float


@attrs.frozen
class Checkpoint:
    """One checkpoint of one run.

    :param checkpoint_id: globally unique id (a UUID hex string).
    :param run_id: the run this checkpoint belongs to.
    :param superstep: the superstep that had just finished when it was taken.
    :param parent_id: the previous checkpoint of the run, or ``None`` for the first.
    :param signature: the topology signature of the workflow that took it.
    :param status: the run's status when it was taken (``running``, ``idle``,
        ``idle_with_pending_requests``, ``failed``).
    :param created_at: seconds since the epoch.
    :param state: the run state, already JSON-ready (the runner encodes it).
    :param format_version: :data:`FORMAT_VERSION` of the writer.
    :param metadata: free-form, JSON-ready annotations (workflow name, …).
    """

    checkpoint_id: str
    run_id: str
    superstep: int
    parent_id: str | None
    signature: str
    status: str
    created_at: float
    state: dict[str, Any] = attrs.field(factory=dict)
    format_version: int = FORMAT_VERSION
    metadata: dict[str, Any] = attrs.field(factory=dict)

    @property
    def info(self) -> CheckpointInfo:
        """The listing view of this checkpoint."""
        return CheckpointInfo(
            checkpoint_id=self.checkpoint_id,
            run_id=self.run_id,
            superstep=self.superstep,
            parent_id=self.parent_id,
            status=self.status,
            created_at=self.created_at,
        )


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """Encode ``checkpoint`` as self-checking bytes (magic, SHA-256 of the body, JSON body)."""
    body = json.dumps(
        attrs.asdict(checkpoint, recurse=False), separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    digest = hashlib.sha256(body).hexdigest().encode("ascii")
    return _MAGIC + b"\n" + digest + b"\n" + body


def decode_checkpoint(data: bytes, *, where: str = "checkpoint") -> Checkpoint:
    """Decode bytes made by :func:`encode_checkpoint`, verifying their checksum.

    :param where: names the checkpoint in errors (``"run r1, checkpoint c7"``).
    :raises CorruptCheckpointError: the bytes are truncated, altered or not a checkpoint.
    """
    magic, sep1, rest = bytes(data).partition(b"\n")
    digest, sep2, body = rest.partition(b"\n")
    if magic != _MAGIC or not sep1 or not sep2:
        raise CorruptCheckpointError(f"{where} is not a Plait checkpoint (bad header)")
    if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its checksum does not match its contents "
            f"({len(body)} bytes of body); the store's other checkpoints are unaffected"
        )
    try:
        raw = json.loads(body)
        return Checkpoint(**raw)
    except (ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"{where} does not decode: {exc}") from exc


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every method is async and safe to call concurrently.

    Stores must make ``save`` atomic: after a crash a checkpoint is either wholly
    present or absent. ``list`` and ``latest`` order by insertion (superstep numbers can
    repeat across resumes).
    """

    async def save(self, checkpoint: Checkpoint) -> None:
        """Persist ``checkpoint`` durably before returning."""
        ...

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return the checkpoint; raise ``CheckpointNotFoundError`` if there is none."""
        ...

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """Every checkpoint of ``run_id``, oldest first (empty if the run is unknown)."""
        ...

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The newest checkpoint of ``run_id``, or ``None``."""
        ...

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint (no error if it is already gone)."""
        ...

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id``; return how many went."""
        ...

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id``; return how many went."""
        ...

    async def aclose(self) -> None:
        """Release connections and files."""
        ...


#: What ``plait_register_checkpoint_stores`` registers under a URL scheme:
#: a callable taking the whole URL and returning a store.
CheckpointStoreFactory = Callable[[str], CheckpointStore]


def open_store(url: str) -> CheckpointStore:
    """Open the store for ``url`` through the scheme's registered factory.

    :raises UnknownNameError: no installed plugin handles the URL's scheme; the message
        lists the schemes that are installed.
    """
    from .plugins import get_plugin_manager

    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    factory = get_plugin_manager().registry("checkpoint_store").get(scheme, what=f"url {url!r}")
    store: CheckpointStore = factory(url)
    return store
