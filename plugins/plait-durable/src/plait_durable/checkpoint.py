"""Checkpoint records and the store protocol: what a durability and a store exchange.

A :class:`Checkpoint` holds what a run needs to go on and nothing of the topology:
pending messages, router state, executor state, shared state, pending requests, the
superstep number, the run id, the parent checkpoint id, the base a delta an earlier Plait
wrote builds on, the topology signature and a format version. A store keeps checkpoints
and lists them (:class:`CheckpointInfo`), lists the runs it holds (:class:`RunInfo`), and keeps one
writer per run with a lease and a fencing token (:class:`Lease`, :class:`LeaseHolder`):
``save(checkpoint, lease=...)`` is refused once the lease was taken over.

Stores are chosen by URL scheme (``memory://``, ``file://DIR``, ``sqlite:///PATH``,
``redis://…``, ``postgresql://…``) through the kernel's ``plait_register_checkpoint_stores``
hook (:func:`open_store`); the kernel itself never opens or closes one: a run, a resume
or a read of a stored run given a store URL opens it for its length in the durability
(:func:`plait_durable.opened_store`), and closes it however it ends.

The bytes a checkpoint is stored as are ``plait_durable.encode_checkpoint``'s; what
stores share beyond these records (the protocol's glue, the lease rules, prune's rule,
the wording of their errors) is the store kit's base, :mod:`plait_durable.kit`. Every
name here is also a name of ``plait_durable``.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from plait.spi import lazy_exports, record_repr

if TYPE_CHECKING:
    from ._info import CheckpointInfo as CheckpointInfo

__all__ = [
    "FORMAT_VERSION",
    "BlobStore",
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStore",
    "CheckpointStoreFactory",
    "Lease",
    "LeaseHolder",
    "RunInfo",
    "open_store",
]

#: Version of the checkpoint byte format and of the ``state`` layout inside it (both
#: ``plait-durable``'s): what :attr:`Checkpoint.format_version` says by default.
FORMAT_VERSION = 1


@attrs.frozen(repr=False)
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
    :param base_id: for a delta an earlier Plait wrote (:mod:`plait_durable._legacy`),
        the full checkpoint it builds on (resuming the delta loads it); ``None`` for a
        full one, every checkpoint Plait writes now. Stores must keep it while a kept
        checkpoint names it (see ``plait_durable.kit.CheckpointStoreBase._prune_plan``).
    """

    __repr__ = record_repr

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
    base_id: str | None = None

    @property
    def info(self) -> CheckpointInfo:
        """The listing view of this checkpoint."""
        from ._info import CheckpointInfo

        return CheckpointInfo(
            checkpoint_id=self.checkpoint_id,
            run_id=self.run_id,
            superstep=self.superstep,
            parent_id=self.parent_id,
            status=self.status,
            created_at=self.created_at,
            base_id=self.base_id,
        )


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every method is async and safe to call concurrently.

    Stores must make ``save`` atomic: after a crash a checkpoint is either wholly
    present or absent. A store may also offer ``async save_many(checkpoints)``, committing
    several in order, all or none; the ``async`` durability mode batches through it.
    ``list`` and ``latest`` order by insertion (superstep numbers can repeat across resumes).
    Every call is bounded in time (each store documents its bound): a stalled server is
    a :class:`~plait_durable.StoreUnavailableError`, never a hang.

    One writer per run (:class:`Lease`): ``acquire_lease`` grants the run's lease with
    a new fencing token, and ``save(checkpoint, lease=lease)`` is refused with
    :class:`~plait_durable.RunLeaseError` once another worker took the lease over.
    """

    async def save(self, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        """Persist ``checkpoint`` durably before returning.

        With ``lease``, atomically refuse (:class:`~plait_durable.RunLeaseError`) unless
        ``lease.token`` is still the current token of the checkpoint's run.
        """
        ...

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` for ``ttl`` seconds with a fresh fencing token
        (greater than every earlier token of the run); ``holder`` defaults to
        :meth:`LeaseHolder.here`.

        :raises RunLeaseError: a live worker holds it (the store kit's lease rules),
            naming the holder.
        """
        ...

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now.

        :raises RunLeaseError: the lease was taken over (its token is no longer current).
        """
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Give ``lease`` up (nothing happens if it was taken over); the token stays
        used, so no later lease of the run reuses it."""
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

    async def runs(self, *, limit: int | None = None) -> Sequence[RunInfo]:
        """Every run with a checkpoint, newest first (by its latest checkpoint), at most
        ``limit`` of them: each as the store kit describes it
        (``plait_durable.kit.CheckpointStoreBase._run_info``), with status ``corrupt`` when
        its latest checkpoint does not decode (one damaged run never fails the listing).

        Raise ``ValueError`` for a negative ``limit`` (the store kit checks it).
        """
        ...

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint (no error if it is already gone)."""
        ...

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they name;
        return how many went (what ``plait_durable.kit.CheckpointStoreBase._prune_plan`` says goes).

        Raise ``ValueError`` for a negative ``keep_last``
        (the store kit checks it).
        """
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


@runtime_checkable
class BlobStore(Protocol):
    """What a :class:`CheckpointStore` adds to keep blobs (optional: a store
    without it keeps every value inline, as before).

    Blobs belong to a run and are keyed by the SHA-256 (hex) of their bytes. ``save`` and
    ``save_many`` take the checkpoint's new blobs (put many) and write them in the same
    transaction as the checkpoint, or, where a store has no transactions, before the
    write that commits the checkpoint: a crash leaves at worst a blob nothing references,
    never a checkpoint whose blob is missing. Saving a blob the run has already is a
    no-op. ``prune`` and ``delete_run`` remove the run's blobs that no remaining
    checkpoint reaches (``plait_durable.unreferenced``).
    """

    async def save(
        self, checkpoint: Checkpoint, *, lease: Any = None, blobs: Mapping[str, bytes] = ...
    ) -> None:
        """Save ``checkpoint`` and ``blobs`` (hash -> bytes) atomically, as above."""
        ...

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (get many); one that is missing is left
        out (the caller names it). The caller verifies each against its hash."""
        ...

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds (what prune's sweep and tests count)."""
        ...

    # Optional, for stores where a round trip is dear: ``async get_blob_closure(run_id,
    # hashes)`` returns those blobs and every blob they reach (the store kit's
    # ``_child_refs`` kept beside each blob, or found by parsing it), so a resume reads a
    # whole tree in one round trip. It may leave out what it cannot tell cheaply (what a
    # 64 KB bundle reaches: the file and SQLite stores do not parse one); the reader
    # fetches that level by level.
    #
    # Optional too, for a store whose every call is a hop or a round trip: ``async
    # load_with_blobs(checkpoint_id)`` and ``async latest_with_blobs(run_id)`` return
    # ``(checkpoint, {hash: bytes})``: what ``load`` and ``latest`` return (``latest``'s
    # None as ``(None, {})``; ``load`` raises as it does), and the closure of the blobs
    # its state names (``plait_durable.blob_refs`` of ``checkpoint.state``, read as
    # ``get_blob_closure`` reads them), in the same call, so a resume reads its checkpoint
    # and its values in one. The reader verifies every blob as it does any other, and
    # asks ``get_blob_closure`` or ``get_blobs`` for whatever is left out. A resume calls
    # them only on a store whose own class defines them (never through a wrapper's
    # ``__getattr__``, which would go round the wrapper's ``get_blobs``).


def open_store(url: str) -> CheckpointStore:
    """Open the store for ``url`` through the scheme's registered factory.

    :raises UnknownNameError: no installed plugin handles the URL's scheme; the message
        lists the schemes that are installed.
    """
    from plait import get_plugin_manager

    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    factory = get_plugin_manager().registry("checkpoint_store").get(scheme, what=f"url {url!r}")
    store: CheckpointStore = factory(url)
    return store


@attrs.frozen(repr=False)
class LeaseHolder:
    """Who holds a lease: host, process id, when it took it, and a unique owner id."""

    __repr__ = record_repr

    host: str
    pid: int
    since: float
    owner: str

    @classmethod
    def here(cls) -> LeaseHolder:
        """A holder for this process, now."""
        return cls(socket.gethostname(), os.getpid(), time.time(), uuid.uuid4().hex)

    def gone(self) -> bool:
        """Is the holder a process of this host, other than this one, that no longer
        exists? Then what it holds need not wait for its expiry. A holder of another host,
        this process, or a pid that lives (or was reused; someone else's process counts as
        alive) is not known gone; a pid no process can have (0 or less) is."""
        if self.host != socket.gethostname() or self.pid == os.getpid():
            return False
        if self.pid <= 0:
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # (someone else's process: alive)
            return False
        return False

    def describe(self) -> str:
        """``host h, pid 123, since 2025-01-02T03:04:05Z``."""
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since))
        return f"host {self.host}, pid {self.pid}, since {since}"

    def to_json(self) -> str:
        """The holder as JSON text, for a store's lease row."""
        return json.dumps(attrs.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes | None) -> LeaseHolder | None:
        """Read :meth:`to_json` back; ``None`` for anything else (a damaged record)."""
        try:
            data: Any = json.loads(text) if text is not None else None
            holder = cls(**data)
            if not isinstance(holder.pid, int) or not isinstance(holder.host, str):
                return None
            return holder
        except (TypeError, ValueError):
            return None


@attrs.frozen(repr=False)
class Lease:
    """A granted lease: the run, its fencing token, the holder and when it expires
    (seconds since the epoch)."""

    __repr__ = record_repr

    run_id: str
    token: int
    holder: LeaseHolder
    expires_at: float


@attrs.frozen(repr=False)
class RunInfo:
    """What :meth:`CheckpointStore.runs` lists about one run, from its latest checkpoint.

    :param run_id: the run.
    :param workflow: the workflow's name (the checkpoint's ``metadata["workflow"]``), or
        ``None`` when the checkpoint does not say (a sealed checkpoint keeps its metadata
        in its sealed payload).
    :param status: the latest checkpoint's status (``running``, ``idle``,
        ``idle_with_pending_requests``, ``failed``), or ``corrupt`` when it does not
        decode (``CheckpointStoreBase._corrupt_run_info``).
    :param superstep: the latest checkpoint's superstep.
    :param pending_requests: how many requests for outside input the run waits on.
    :param error: for a failed run, one line naming the executor, the error's type and
        its message (``plait_durable._stores.error_summary``); ``None`` otherwise.
    :param created_at: when the run's first checkpoint was taken (seconds since the epoch).
    :param updated_at: when its latest checkpoint was taken.
    :param metadata: (keyword only) the latest checkpoint's metadata as the listing read
        it: stored JSON, untrusted, for the columns plugins add to run listings
        (``plait_run_columns``); empty when the listing did not read the checkpoint (a
        run index's row, a corrupt or sealed checkpoint). Not compared, not an index
        column.
    """

    __repr__ = record_repr

    run_id: str
    workflow: str | None
    status: str
    superstep: int
    pending_requests: int
    error: str | None
    created_at: float
    updated_at: float
    metadata: Mapping[str, Any] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)


# CheckpointInfo is imported on first use: a run that only saves checkpoints never lists them
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
