"""Checkpoint records, their byte encoding and the store protocol.

A :class:`Checkpoint` holds what a run needs to go on and nothing of the topology:
pending messages, router state, executor state, shared state, pending requests, the
superstep number, the run id, the parent checkpoint id, the base a delta builds on, the
topology signature and a format version. Stores persist the bytes
:func:`encode_checkpoint` produces; the bytes carry a SHA-256 of their body, so a flipped
byte or a truncated row is a :class:`~plait.CorruptCheckpointError`, never a
silently wrong resume.

Every field of the record (run id, base id, superstep, format version …) is inside the
checksummed body; a store's listing columns are only an index, and a store checks the
body it reads against the row that led to it (``expect_run``/``expect_id`` of
:func:`decode_checkpoint`). A body of the wrong shape is a
:class:`~plait.CorruptCheckpointError`; a body written by a newer format is refused.

``prune`` keeps the newest checkpoints of a run, the full checkpoints those name as
their base, and the run's first checkpoint (it holds the topology, so a refused resume can
say what changed) (:func:`prune_plan`), so whatever it keeps can still be resumed.

``runs`` lists the runs a store holds, newest first, each described by its latest
checkpoint (:class:`RunInfo`): workflow, status, superstep, pending requests and, for a
failed run, the error its last checkpoint records.

One writer per run: every store keeps a lease per run with a fencing token
(:class:`~plait.spi.Lease`); ``save(checkpoint, lease=...)`` is refused once the lease was
taken over.

Stores are chosen by URL scheme (``memory://``, ``file://DIR``, ``sqlite:///PATH``,
``redis://…``, ``postgresql://…``) through the ``plait_register_checkpoint_stores`` hook.
What every store shares (a base class, URL redaction, error wording) comes with
``plait-durable`` (``plait_durable.CheckpointStoreBase`` …).

.. versionadded:: 0.1
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ._errors import CheckpointError, CorruptCheckpointError, RunLeaseError

__all__ = [
    "CORRUPT",
    "FORMAT_VERSION",
    "BlobStore",
    "Checkpoint",
    "dump_json",
    "load_json",
    "CheckpointInfo",
    "CheckpointStore",
    "RunInfo",
    "check_runs_limit",
    "error_summary",
    "CheckpointStoreFactory",
    "encode_checkpoint",
    "decode_checkpoint",
    "check_keep_last",
    "prune_plan",
    "open_store",
    "Lease",
    "LeaseHolder",
    "DEFAULT_LEASE_TTL",
    "granted",
    "held_error",
    "is_free",
    "lost_error",
    "released",
]

#: Version of the checkpoint byte format and of the ``state`` layout inside it.
FORMAT_VERSION = 1

_MAGIC = b"PLAITCP1"

_orjson: Any
try:  # an optional speed-up, never required
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on what is installed
    _orjson = None


@attrs.frozen
class CheckpointInfo:
    """What a store lists about a checkpoint without decoding its state.

    ``base_id`` is :attr:`Checkpoint.base_id`: the full checkpoint a delta builds on
    (``None`` for a full snapshot). :func:`prune_plan` keeps it while a kept checkpoint
    names it.
    """

    checkpoint_id: str
    run_id: str
    superstep: int
    parent_id: str | None
    status: str
    created_at: float
    base_id: str | None = None


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
    :param base_id: for a delta, the full checkpoint this delta builds on (resuming the
        delta loads it); ``None`` for a full snapshot. Stores must keep it while a kept
        checkpoint names it (see :func:`prune_plan`).
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
    base_id: str | None = None

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
            base_id=self.base_id,
        )


def dump_json(data: Any) -> bytes:
    """Compact UTF-8 JSON, for store authors too: orjson when it is installed (20x faster
    on checkpoints; the ``plait-stores`` plugin installs it), else the standard library."""
    if _orjson is not None:
        try:
            encoded: bytes = _orjson.dumps(data)
            return encoded
        except TypeError:  # e.g. an int beyond 64 bits: the standard library handles it
            pass
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite floats are encoded as tagged text)")


def load_json(body: bytes) -> Any:
    """JSON bytes to values: orjson when it is installed, the standard library when orjson
    refuses (it decides, and words the error); ``NaN`` and ``Infinity`` are refused."""
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except ValueError:
            pass  # the standard library decides, and words the error
    return json.loads(body, parse_constant=_no_constant)


#: The body's fields and the types each may hold (``None`` allowed where listed).
_FIELDS: dict[str, tuple[type, ...]] = {
    "checkpoint_id": (str,),
    "run_id": (str,),
    "superstep": (int,),
    "parent_id": (str, type(None)),
    "signature": (str,),
    "status": (str,),
    "created_at": (int, float),
    "state": (dict,),
    "format_version": (int,),
    "metadata": (dict,),
    "base_id": (str, type(None)),
}


def _check_shape(raw: Any, where: str) -> None:
    if not isinstance(raw, dict):
        raise CorruptCheckpointError(f"{where} is corrupt: its body is not a JSON object")
    missing = sorted(set(_FIELDS) - set(raw))
    extra = sorted(set(raw) - set(_FIELDS))
    if missing or extra:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its body lacks {', '.join(missing) or 'nothing'} and has "
            f"unknown fields {', '.join(extra) or 'none'}"
        )
    for name, types in _FIELDS.items():
        value = raw.get(name)
        if name in raw and (not isinstance(value, types) or isinstance(value, bool)):
            raise CorruptCheckpointError(
                f"{where} is corrupt: field {name!r} holds {type(value).__name__} "
                f"{value!r:.60}, expected {' or '.join(t.__name__ for t in types)}"
            )


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """Encode ``checkpoint`` as self-checking bytes (magic, SHA-256 of the body, JSON body)."""
    body = dump_json(attrs.asdict(checkpoint, recurse=False))
    digest = hashlib.sha256(body).hexdigest().encode("ascii")
    return _MAGIC + b"\n" + digest + b"\n" + body


def decode_checkpoint(
    data: bytes,
    *,
    where: str = "checkpoint",
    expect_run: str | None = None,
    expect_id: str | None = None,
) -> Checkpoint:
    """Decode bytes made by :func:`encode_checkpoint`, verifying their checksum and shape.

    :param where: names the checkpoint in errors (``"run r1, checkpoint c7"``).
    :param expect_run: the run id the store's row or key says the bytes belong to.
    :param expect_id: the checkpoint id the store's row or key says they are.
    :raises CorruptCheckpointError: the bytes are truncated, altered, mis-shaped, not a
        checkpoint, or their body disagrees with ``expect_run``/``expect_id``.
    :raises CheckpointError: the bytes were written by a newer format (a newer Plait);
        a format older than :data:`FORMAT_VERSION` is corrupt (no release wrote one).
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
        raw = load_json(body)
    except (ValueError, TypeError, RecursionError) as exc:
        raise CorruptCheckpointError(f"{where} does not decode: {exc}") from exc
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CheckpointError(
            f"{where} was written by a newer Plait (format {version}); this Plait reads "
            f"format {FORMAT_VERSION}: upgrade plait-core to resume it"
        )
    _check_shape(raw, where)
    if raw["format_version"] != FORMAT_VERSION:
        raise CorruptCheckpointError(
            f"{where} is corrupt: it claims format {raw['format_version']}, which no Plait "
            f"wrote; this Plait reads format {FORMAT_VERSION}"
        )
    checkpoint = Checkpoint(**raw)
    if (expect_run is not None and checkpoint.run_id != expect_run) or (
        expect_id is not None and checkpoint.checkpoint_id != expect_id
    ):
        raise CorruptCheckpointError(
            f"{where} is corrupt: the store lists it as run {expect_run!r}, checkpoint "
            f"{expect_id!r}, but its verified body is run {checkpoint.run_id!r}, checkpoint "
            f"{checkpoint.checkpoint_id!r}"
        )
    return checkpoint


def check_keep_last(keep_last: int) -> int:
    """Return ``keep_last`` if it is a valid ``prune(keep_last=...)`` argument.

    :raises ValueError: ``keep_last`` is negative or not an integer (``bool`` included).
    """
    if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 0:
        raise ValueError(f"prune(keep_last=...) needs an integer >= 0, got {keep_last!r}")
    return keep_last


def prune_plan(infos: Sequence[CheckpointInfo], keep_last: int) -> list[str]:
    """The ids :meth:`CheckpointStore.prune` deletes to keep the newest ``keep_last``.

    ``infos`` are one run's checkpoints, oldest first (as ``list`` returns them), with
    ``base_id`` read from verified bodies. Every checkpoint but the newest ``keep_last``
    goes, except the bases those kept checkpoints name (:attr:`CheckpointInfo.base_id`),
    so a kept delta stays resumable, and except the run's first checkpoint while anything
    is kept (it holds the topology that a refused resume compares against). The ids come
    oldest first.

    :raises ValueError: ``keep_last`` is negative or not an integer.
    """
    check_keep_last(keep_last)
    cut = max(len(infos) - keep_last, 0)
    needed = {info.base_id for info in infos[cut:] if info.base_id is not None}
    if keep_last and infos:
        needed.add(infos[0].checkpoint_id)
    return [info.checkpoint_id for info in infos[:cut] if info.checkpoint_id not in needed]


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every method is async and safe to call concurrently.

    Stores must make ``save`` atomic: after a crash a checkpoint is either wholly
    present or absent. A store may also offer ``async save_many(checkpoints)``, committing
    several in order, all or none; the ``async`` durability mode batches through it.
    ``list`` and ``latest`` order by insertion (superstep numbers can repeat across resumes).
    Every call is bounded in time (each store documents its bound): a stalled server is
    a :class:`~plait.StoreUnavailableError`, never a hang.

    One writer per run (:class:`~plait.spi.Lease`): ``acquire_lease`` grants the run's lease with
    a new fencing token, and ``save(checkpoint, lease=lease)`` is refused with
    :class:`~plait.RunLeaseError` once another worker took the lease over.
    """

    async def save(self, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        """Persist ``checkpoint`` durably before returning.

        With ``lease``, atomically refuse (:class:`~plait.RunLeaseError`) unless
        ``lease.token`` is still the current token of the checkpoint's run.
        """
        ...

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` for ``ttl`` seconds with a fresh fencing token
        (greater than every earlier token of the run); ``holder`` defaults to
        :meth:`LeaseHolder.here`.

        :raises RunLeaseError: a live worker holds it (``is_free``),
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
        ``limit`` of them: each as :meth:`RunInfo.from_latest` describes it, or as
        :meth:`RunInfo.corrupt` when its latest checkpoint does not decode (one damaged
        run never fails the listing; :func:`plait_durable.run_info` does both).

        Raise ``ValueError`` for a negative ``limit`` (:func:`check_runs_limit`).

        .. versionadded:: 0.1
        """
        ...

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint (no error if it is already gone)."""
        ...

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they name;
        return how many went (what :func:`prune_plan` says goes).

        Raise ``ValueError`` for a negative ``keep_last`` (:func:`check_keep_last`).
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
    """What a :class:`~plait.spi.CheckpointStore` adds to keep blobs (optional: a store
    without it keeps every value inline, as before).

    Blobs belong to a run and are keyed by the SHA-256 (hex) of their bytes. ``save`` and
    ``save_many`` take the checkpoint's new blobs (put many) and write them in the same
    transaction as the checkpoint, or, where a store has no transactions, before the
    write that commits the checkpoint: a crash leaves at worst a blob nothing references,
    never a checkpoint whose blob is missing. Saving a blob the run has already is a
    no-op. ``prune`` and ``delete_run`` remove the run's blobs that no remaining
    checkpoint reaches (``plait_durable.unreferenced``).

    .. versionadded:: 0.1
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
    # hashes)`` returns those blobs and every blob they reach (``plait_durable.child_refs`` kept
    # beside each blob), so a resume reads a whole tree in one round trip.


def open_store(url: str) -> CheckpointStore:
    """Open the store for ``url`` through the scheme's registered factory.

    :raises UnknownNameError: no installed plugin handles the URL's scheme; the message
        lists the schemes that are installed.
    """
    from ._plugins import get_plugin_manager

    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    factory = get_plugin_manager().registry("checkpoint_store").get(scheme, what=f"url {url!r}")
    store: CheckpointStore = factory(url)
    return store


#: Seconds a lease lives without renewal (a running run renews it every third of that).
DEFAULT_LEASE_TTL = 30.0

# Owners of the leases runs in this process hold right now: a lease that names this
# process but no live owner was left behind (a run that never released it) and is free.
_live_owners: set[str] = set()


@attrs.frozen
class LeaseHolder:
    """Who holds a lease: host, process id, when it took it, and a unique owner id."""

    host: str
    pid: int
    since: float
    owner: str

    @classmethod
    def here(cls) -> LeaseHolder:
        """A holder for this process, now."""
        return cls(socket.gethostname(), os.getpid(), time.time(), uuid.uuid4().hex)

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


@attrs.frozen
class Lease:
    """A granted lease: the run, its fencing token, the holder and when it expires
    (seconds since the epoch)."""

    run_id: str
    token: int
    holder: LeaseHolder
    expires_at: float


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OSError:
        return True
    return True


def is_free(holder: LeaseHolder | None, expires_at: float, now: float | None = None) -> bool:
    """Whether a stored lease may be taken: released or expired (``expires_at`` passed),
    unreadable, or held by a process known to be dead."""
    if holder is None:
        return True
    if expires_at <= (time.time() if now is None else now):
        return True
    if holder.host != socket.gethostname():
        return False
    if holder.pid == os.getpid():
        return holder.owner not in _live_owners
    return not _pid_alive(holder.pid)


def granted(lease: Lease) -> Lease:
    """Record that a run in this process holds ``lease``; return it."""
    _live_owners.add(lease.holder.owner)
    return lease


def released(lease: Lease) -> None:
    """Record that ``lease`` is no longer held by this process."""
    _live_owners.discard(lease.holder.owner)


def held_error(run_id: str, holder: LeaseHolder, url: str) -> RunLeaseError:
    """The error for acquiring a lease a live worker holds."""
    return RunLeaseError(
        f"run {run_id!r} in {url} is being run by another worker ({holder.describe()}); "
        "one writer per run: wait for it to finish, or for its lease to expire if it died"
    )


def lost_error(lease: Lease, url: str, holder: LeaseHolder | None = None) -> RunLeaseError:
    """The error for using a lease that was taken over (its token is no longer current)."""
    by = f" by another worker ({holder.describe()})" if holder is not None else ""
    return RunLeaseError(
        f"the lease of run {lease.run_id!r} in {url} was taken over{by}; this worker "
        f"(token {lease.token}) may no longer write its checkpoints"
    )


#: The status :meth:`RunInfo.corrupt` gives a run whose latest checkpoint does not decode.
CORRUPT = "corrupt"


class LatestCheckpoint(Protocol):
    """What a listing reads of a run's latest checkpoint (a :class:`plait.spi.Checkpoint`)."""

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def superstep(self) -> int: ...

    @property
    def created_at(self) -> float: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def state(self) -> Mapping[str, Any]: ...


@attrs.frozen
class RunInfo:
    """What :meth:`CheckpointStore.runs` lists about one run, from its latest checkpoint.

    :param run_id: the run.
    :param workflow: the workflow's name (the checkpoint's ``metadata["workflow"]``), or
        ``None`` when the checkpoint does not say (a sealed checkpoint keeps its metadata
        in its sealed payload).
    :param status: the latest checkpoint's status (``running``, ``idle``,
        ``idle_with_pending_requests``, ``failed``), or ``corrupt`` when it does not
        decode (:meth:`corrupt`).
    :param superstep: the latest checkpoint's superstep.
    :param pending_requests: how many requests for outside input the run waits on.
    :param error: for a failed run, one line naming the executor, the error's type and
        its message (:func:`error_summary`); ``None`` otherwise.
    :param created_at: when the run's first checkpoint was taken (seconds since the epoch).
    :param updated_at: when its latest checkpoint was taken.

    .. versionadded:: 0.1
    """

    run_id: str
    workflow: str | None
    status: str
    superstep: int
    pending_requests: int
    error: str | None
    created_at: float
    updated_at: float

    @classmethod
    def from_latest(cls, latest: LatestCheckpoint, *, created_at: float | None = None) -> RunInfo:
        """The listing of the run whose latest checkpoint is ``latest`` (``created_at``:
        when its first checkpoint was taken; ``latest``'s own time if not given)."""
        workflow = latest.metadata.get("workflow")
        requests = latest.state.get("requests")
        return cls(
            run_id=latest.run_id,
            workflow=workflow if isinstance(workflow, str) else None,
            status=latest.status,
            superstep=latest.superstep,
            pending_requests=len(requests) if isinstance(requests, list) else 0,
            error=error_summary(latest.metadata.get("error")),
            created_at=latest.created_at if created_at is None else created_at,
            updated_at=latest.created_at,
        )

    @classmethod
    def corrupt(cls, run_id: str, error: Exception, *, created_at: float = 0.0) -> RunInfo:
        """The listing of a run whose latest checkpoint does not decode: status
        ``corrupt``, ``error`` the decoding error's message on one line, so one damaged
        run does not hide the others.

        .. versionadded:: 0.1
        """
        return cls(
            run_id=run_id,
            workflow=None,
            status=CORRUPT,
            superstep=-1,
            pending_requests=0,
            error=" ".join(str(error).split()) or type(error).__name__,
            created_at=created_at,
            updated_at=created_at,
        )


def error_summary(error: Any) -> str | None:
    """One line for a failed checkpoint's ``metadata["error"]`` (``{"executor", "type",
    "message", "superstep"}``): ``ValueError in 'parse' (superstep 3): bad input``.
    ``None`` when ``error`` is not such a mapping."""
    if not isinstance(error, dict):
        return None
    kind = error.get("type") or "error"
    executor = error.get("executor")
    where = f" in {executor!r}" if isinstance(executor, str) else ""
    superstep = error.get("superstep")
    if isinstance(superstep, int) and not isinstance(superstep, bool):
        where += f" (superstep {superstep})"
    message = " ".join(str(error.get("message") or "").split())
    return f"{kind}{where}: {message}" if message else f"{kind}{where}"


def check_runs_limit(limit: int | None) -> int | None:
    """Return ``limit`` if it is a valid ``runs(limit=...)`` argument.

    :raises ValueError: ``limit`` is negative or not an integer (``bool`` included).
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"runs(limit=...) needs None or an integer >= 0, got {limit!r}")
    return limit
