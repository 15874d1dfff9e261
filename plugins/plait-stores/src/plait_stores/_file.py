"""``file://DIR``: one file per checkpoint, written atomically.

Layout under ``DIR``::

    runs/<run>/<seq:012d>-<superstep:010d>-<checkpoint>.ckpt   the checkpoints
    ids/<checkpoint>                                           "<run>/<file name>"
    blobs/<run>/pack-<seq:012d>.pack                           the run's blobs, in packs
    blobs/<run>/<sha256 hex>                                   a blob in a file of its own
    runs.index                                                 the run index (see below)
    leases/<run>                                               the run's lease (JSON)
    journal/<run>/<first:012d>-<last:012d>.jsonl               the run's journal events

The event journal (:class:`plait_durable.EventJournal`) is one file per append, holding the
events numbered ``first`` to ``last`` (one JSON object a line, written atomically); the
next append numbers on from the newest file's ``last``. A save with events writes the
journal file before the checkpoint's rename: a crash in between leaves events whose
checkpoint is missing (a superstep that did not commit: resuming re-runs it), never a
checkpoint without its events.

File names start with a zero-padded sequence number, so a sorted directory listing is the
run's insertion order (superstep numbers repeat across resumes; the sequence does not)
and ``latest``, ``prune`` and ``delete_run`` never open a file they do not need. Each
``.ckpt`` file is one header line (the listing fields as JSON) followed by the bytes of
:func:`~plait_durable.encode_checkpoint`. ``ids/`` lets ``load(checkpoint_id)`` find a
file without scanning every run. Names are percent-encoded, so any run id is a safe name.

A save writes a temporary file in the target directory, fsyncs it, renames it over the
final name with :func:`os.replace` and fsyncs the directory: after a crash a checkpoint is
wholly there or absent. The id entry is written before the checkpoint file, so the
checkpoint file's rename is the single commit point; an id entry whose file is missing is
treated as absent. A checkpoint's new blobs (:class:`plait_durable.BlobStore`) go into one
pack (:mod:`plait_stores._filepack`), written the same way and fsynced before that
rename, so a crash leaves at worst a pack nothing references (``prune`` removes it),
never a checkpoint whose blob is missing. Blobs in files of their own, one per hash (how
the store kept them before packs), are still read, and swept like the rest. All file I/O
runs in worker threads.

The store never follows a link. Every path under ``DIR`` is opened relative to the
directory above it (``openat``) with ``O_NOFOLLOW``: a symbolic link, a hard-linked file,
a FIFO or a device where the store expects its own directory or file is refused with a
:class:`~plait_durable.CorruptCheckpointError` naming the path inside the store, and
nothing outside ``DIR`` is read, written, listed or removed (``DIR`` itself is the
caller's choice and may be a link). An ``ids/`` entry is data, not a path to follow: one
that does not have exactly the shape above (``..``, an absolute path, another
checkpoint's file) is corrupt, and an error never quotes what a damaged file holds.
Directories are created ``0700`` and files ``0600``. This needs a POSIX system
(``dir_fd`` support); elsewhere the store is unavailable.

What a killed save leaves (temporary files, an id entry without its file) is removed
the first time a process uses the directory, and by ``prune``, once it is older than
``stale_after`` seconds (default 600), so a save in flight is never disturbed.

The run index (:class:`plait_durable.RunIndex`, :mod:`plait_stores._fileindex`) is one
append-only log of run summaries, a line appended right after each save's commit point
(and after each delete or prune), so ``list_runs`` pages without opening every run's
files; it is rebuilt from the run directories when it is missing or damaged, and never
trusted to name code.

One writer per run: ``leases/<run>`` holds the run's lease; taking it holds an exclusive
``flock`` on that file, and a save with a lease holds a shared one while it checks the
token and writes, so a lease cannot change hands in the middle of a save.

Time bound: local file I/O is not bounded by the store (a hung network file system hangs
it); waiting for another process's lease-file lock is bounded by ``timeout`` seconds
(default 30), then :class:`~plait_durable.StoreUnavailableError`.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import anyio.to_thread
import attrs
from plait_durable import (
    Checkpoint,
    CheckpointInfo,
    CorruptCheckpointError,
    Lease,
    LeaseHolder,
    RunInfo,
    RunPage,
    RunQuery,
    RunSummary,
)
from plait_durable.kit import CheckpointStoreBase

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: leases are kept without a file lock
    fcntl = None  # type: ignore[assignment]

from ._common import blob_closure, split_query
from ._fileindex import RunIndexLog, gone_line, summary_line
from ._filepack import (
    OversizedPack,
    PackIndex,
    PackIndexCache,
    encode_pack,
    merge_plan,
    pack_name,
    pack_seq,
    read_blobs,
)

__all__ = ["FileCheckpointStore"]

_T = TypeVar("_T")
_HEADER = b"PLAITFILE1 "
_SUFFIX = ".ckpt"
_TEMP_PREFIX = ".plait-"
_MAX_NAME = 200  # bytes; leaves room for the sequence prefix under the usual 255
# What an ids/ entry may say: "<run>/<seq>-<superstep>-<checkpoint>.ckpt", names as _fs_name
# makes them (percent-encoded, so no "/" and no ".").
_ENTRY = re.compile(
    r"([A-Za-z0-9_~%-]{1,200})/([0-9]{12,}-[0-9]{10,}-([A-Za-z0-9_~%-]{1,200})\.ckpt)"
)
_HASH = re.compile(r"[0-9a-f]{64}")
_JOURNAL_SUFFIX = ".jsonl"
_JOURNAL_NAME = re.compile(r"[0-9]{12,}-[0-9]{12,}\.jsonl")
#: Seconds after which a killed save's leftovers are removed.
STALE_AFTER = 600.0
_cleaned: set[str] = set()  # directories this process has cleaned up already
_pack_indexes = PackIndexCache()  # the indexes of the packs this process has read

# One lock per directory for the whole process: two stores on one directory must not
# hand out the same sequence number.
_dir_locks: dict[str, threading.Lock] = {}
_dir_locks_guard = threading.Lock()

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_DIR_FLAGS = _ROOT_FLAGS | _NOFOLLOW
# O_NONBLOCK: opening a planted FIFO must not hang; it is then refused as not a file.
_FILE_FLAGS = _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
# What open(O_NOFOLLOW) says about a final symbolic link (EMLINK on the BSDs), and about a
# path that is not what the flags ask for.
_REFUSED_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.EISDIR, errno.ENXIO})
_SUPPORTED = os.open in os.supports_dir_fd and bool(_NOFOLLOW)


def _lock_for(root: Path) -> threading.Lock:
    key = os.path.realpath(root)
    with _dir_locks_guard:
        return _dir_locks.setdefault(key, threading.Lock())


def _fs_name(value: str, what: str) -> str:
    # quote() leaves "." alone; encoding it too rules out "." and ".." as names.
    name = quote(value, safe="").replace(".", "%2E")
    if not value or len(name) > _MAX_NAME:
        raise ValueError(
            f"{what} {value!r} cannot be a file name: it must be non-empty and at most "
            f"{_MAX_NAME} bytes once percent-encoded"
        )
    return name


def _fsync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems refuse to fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise


def _make_root(path: Path) -> None:
    """Create the store's own directory (and parents) durably, private to its user."""
    if path.is_dir():
        return
    _make_root(path.parent)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return
    fd = os.open(path.parent, _ROOT_FLAGS)
    try:
        _fsync(fd)
    finally:
        os.close(fd)


def _what_is(dir_fd: int, name: str) -> str:
    """What ``name`` in ``dir_fd`` is, for an error (never what it holds)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return "not something the store made"
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if stat.S_ISDIR(info.st_mode):
        return "a directory"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_nlink > 1:
        return "a hard link"
    return "not something the store made"


def _unlink(dir_fd: int, name: str) -> bool:
    """Remove ``name`` (a link itself, never what it points at)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _mtime(dir_fd: int, name: str) -> float:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return float("inf")


def _is_file(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _write_atomic(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``name`` in ``dir_fd``: a new private temporary file, fsynced, renamed over it."""
    tmp = f"{_TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        _unlink(dir_fd, tmp)
        raise
    _fsync(dir_fd)


def _seq_of(file_name: str) -> int:
    return int(file_name.split("-", 1)[0])


def _id_of(file_name: str) -> str:
    return unquote(file_name.split("-", 2)[2][: -len(_SUFFIX)])


def _journal_files(names: builtins.list[str]) -> builtins.list[str]:
    return sorted(n for n in names if _JOURNAL_NAME.fullmatch(n))


def _journal_range(name: str) -> tuple[int, int]:
    first, last = name[: -len(_JOURNAL_SUFFIX)].split("-")
    return int(first), int(last)


def _checkpoint_files(names: builtins.list[str]) -> builtins.list[str]:
    return sorted(n for n in names if n.endswith(_SUFFIX) and not n.startswith("."))


class FileCheckpointStore(CheckpointStoreBase):
    """Checkpoints as files under one directory (``file://DIR``).

    :param directory: created on the first save if it does not exist.
    """

    KIND = "file"

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        url: str | None = None,
        stale_after: float = STALE_AFTER,
        timeout: float = 30.0,
    ) -> None:
        self.directory = Path(directory)
        self.url = url or f"file://{os.fspath(directory)}"
        self.stale_after = stale_after
        self.timeout = timeout
        self._lock = _lock_for(self.directory)
        self._key = os.path.realpath(self.directory)
        self._index = RunIndexLog(
            self._dir, self._open_file, self._summaries_sync, _write_atomic, self._key
        )

    @classmethod
    def from_url(cls, url: str) -> FileCheckpointStore:
        """Open ``file://DIR`` (``file:///abs/dir`` or ``file://relative/dir``), with
        options ``timeout`` and ``stale_after`` (seconds)."""
        head, options = split_query(url, allowed=frozenset({"timeout", "stale_after"}))
        if not head.lower().startswith("file://") or len(head) == len("file://"):
            raise ValueError(f"not a file store url: {url!r} (expected file://DIR)")
        try:
            numbers = {name: float(value) for name, value in options.items()}
        except ValueError:
            raise ValueError(f"timeout and stale_after in {url!r} must be seconds") from None
        return cls(unquote(head[len("file://") :]), url=url, **numbers)

    # -- the protocol ------------------------------------------------------------

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        events: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """Write ``blobs`` and ``events`` to the run's folders, then the checkpoint (its
        rename commits all three; see the module docstring)."""
        header = json.dumps(self._info_fields(checkpoint), ensure_ascii=True).encode("ascii")
        content = _HEADER + header + b"\n" + data
        await self._run(self._save_sync, checkpoint, content, lease, events, blobs)

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (one that is missing is left out)."""
        return await self._run(self._get_blobs_sync, run_id, sorted(set(hashes)))

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` and those they reach, in one call of
        the worker thread (what a bundle would reach is left to ``get_blobs``:
        :func:`~plait_stores._common.blob_closure`)."""
        return await self._run(self._get_blobs_sync, run_id, sorted(set(hashes)), True)

    async def load_with_blobs(self, checkpoint_id: str) -> tuple[Checkpoint, Mapping[str, bytes]]:
        """:meth:`load`, and the blobs its state reaches (as :meth:`get_blob_closure`
        reads them), in one call of the worker thread: what a resume reads first."""
        return await self._run(self._load_with_blobs_sync, checkpoint_id)

    async def latest_with_blobs(self, run_id: str) -> tuple[Checkpoint | None, Mapping[str, bytes]]:
        """:meth:`latest`, and the blobs its state reaches, in one call of the worker
        thread (``(None, {})`` for a run without checkpoints)."""
        return await self._run(self._latest_with_blobs_sync, run_id)

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds."""
        return await self._run(self._blob_hashes_sync, run_id)

    async def _append(self, run_id: str, events: Sequence[str], lease: Lease | None) -> None:
        """Append journal lines of ``run_id`` (one file, written atomically)."""
        await self._run(self._append_sync, run_id, events, lease)

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The journal lines of ``run_id`` after ``after``, from its journal files."""
        return await self._run(self._read_events_sync, run_id, after, limit)

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :class:`~plait_durable.Lease`)."""
        return await self._run(self._lease_sync, run_id, None, ttl, holder)

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now, unless it was taken over."""
        return await self._run(self._lease_sync, lease.run_id, lease, ttl, None)

    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if its token is still the run's."""
        await self._run(self._lease_sync, lease.run_id, lease, 0.0, None)

    def cleanup(self) -> int:
        """Remove what killed saves left behind (temporary files, id entries without a
        checkpoint file) older than ``stale_after`` seconds; return how many went.

        Only regular files are removed; a link or a run directory that is a link is left
        alone (the operation that needs it refuses it)."""
        removed = 0
        cutoff = time.time() - self.stale_after
        for parts in (("ids",), *(("runs", name) for name in self._list_dir("runs"))):
            try:
                with self._dir(*parts) as folder:
                    if folder is None:
                        continue
                    for name in os.listdir(folder):
                        if not _is_file(folder, name):
                            continue
                        stale = name.startswith(_TEMP_PREFIX) or (
                            parts == ("ids",) and self._read_stored(name, check=False) is None
                        )
                        if stale and _mtime(folder, name) < cutoff:
                            removed += _unlink(folder, name)
            except CorruptCheckpointError:
                continue
        return removed

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Read, verify and decode the checkpoint ``checkpoint_id`` (checking that its
        file holds what its name says)."""
        self._check_open()
        return await self._run(self._load_sync, checkpoint_id)

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved (reads headers only)."""
        return await self._run(self._list_sync, run_id)

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The checkpoint of ``run_id`` saved last, or ``None`` (checking that its file
        holds what its name says)."""
        self._check_open()
        return await self._run(self._latest_sync, run_id)

    async def _runs(self, limit: int | None) -> Sequence[RunInfo]:
        """Every run under ``runs/``, newest first (by its latest checkpoint's time), at
        most ``limit``: reads two headers per run and decodes only the listed runs'
        latest checkpoints; a run whose files do not read is listed at the end."""
        return await self._run(self._runs_sync, limit)

    async def list_runs(self, query: RunQuery) -> RunPage:
        """A page of the run index (:class:`plait_durable.RunIndex`), newest first, from
        ``runs.index`` (only what was appended since this process last read it)."""
        return await self._run(self._index.page, query)

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        run_id = await self._run(self._delete_sync, checkpoint_id)
        if run_id is not None:
            await self._run(self._reindex_sync, run_id)

    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went (reads the kept checkpoints' headers only)."""
        removed = await self._run(self._prune_sync, run_id, keep_last, False)
        if removed:
            await self._run(self._reindex_sync, run_id)
        return removed

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id``, its directory and its journal; return
        how many checkpoints went."""
        removed = await self._run(self._prune_sync, run_id, 0, True)
        await self._run(self._remove_journal_sync, run_id)
        await self._run(self._reindex_sync, run_id)
        return removed

    # -- the run index (plait_stores._fileindex) ------------------------------------

    def _summary_sync(self, run_id: str) -> RunSummary | None:
        """A run's summary from its files (its latest and first checkpoints), or ``None``
        when it has none; a damaged run is summarised as damaged."""
        run_name = _fs_name(run_id, "run id")
        try:
            with self._dir("runs", run_name) as run_dir:
                if run_dir is None:
                    return None
                names = _checkpoint_files(os.listdir(run_dir))
                contents = []
                for name in (names[-1:] + names[:1]) if names else []:
                    content = self._read_file(run_dir, name, f"runs/{run_name}/{name}")
                    if content is None:
                        return self._summary_sync(run_id)  # changed while we looked
                    contents.append(self._decode_file(run_name, name, content))
            if not contents:
                return None
            latest, first = contents[0], contents[-1]
            return RunSummary.from_checkpoints(
                latest, created_at=first.created_at, first_metadata=first.metadata
            )
        except CorruptCheckpointError as exc:
            info = self._corrupt_run_info(run_id, exc)
            return RunSummary(*attrs.astuple(info))

    def _summaries_sync(self) -> builtins.list[RunSummary]:
        """Every run's summary, for a rebuild of the index."""
        out = []
        for run_name in self._list_dir("runs"):
            summary = self._summary_sync(unquote(run_name))
            if summary is not None:
                out.append(summary)
        return out

    def _reindex_sync(self, run_id: str) -> None:
        """After checkpoints of ``run_id`` went: its whole summary again, or ``gone``."""
        summary = self._summary_sync(run_id)
        if summary is None:
            self._index.append(lambda stamp: gone_line(run_id, stamp))
        else:
            self._index.append(lambda stamp: summary_line(summary, stamp, full=True))

    def _remove_journal_sync(self, run_id: str) -> None:
        run_name = _fs_name(run_id, "run id")
        with self._lock:
            with self._dir("journal", run_name) as folder:
                if folder is None:
                    return
                for name in os.listdir(folder):
                    if _is_file(folder, name):
                        _unlink(folder, name)
            with self._dir("journal") as journal:
                if journal is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.rmdir(run_name, dir_fd=journal)

    # -- worker-thread side --------------------------------------------------------

    async def _run(self, func: Callable[..., _T], *args: object) -> _T:
        self._check_open()
        if not _SUPPORTED:  # pragma: no cover - Windows
            raise self._unavailable(
                "needs a POSIX system: it opens every path relative to its directory "
                "without following links (dir_fd, O_NOFOLLOW)"
            )
        try:
            if self._key not in _cleaned:
                _cleaned.add(self._key)
                await anyio.to_thread.run_sync(self.cleanup)
            return await anyio.to_thread.run_sync(func, *args)
        except OSError as exc:
            raise self._unavailable(f"cannot be used: {exc}") from exc

    def _refused(self, dir_fd: int, name: str, inside: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"file checkpoint store {self.url} refuses {inside!r}: it is "
            f"{_what_is(dir_fd, name)}, not a file or directory the store made; the store "
            "never follows links or touches anything outside its directory"
        )

    @contextlib.contextmanager
    def _dir(self, *parts: str, create: bool = False) -> Iterator[int | None]:
        """An open descriptor of ``DIR/parts…``, each level opened relative to the one
        above without following links (``None`` if a level is missing and not ``create``).

        :raises CorruptCheckpointError: a level is a link or not a directory.
        """
        fds: builtins.list[int] = []
        try:
            if create:
                _make_root(self.directory)
            try:
                fds.append(os.open(self.directory, _ROOT_FLAGS))
            except FileNotFoundError:
                if create:
                    raise
                yield None
                return
            for depth, name in enumerate(parts):
                made = False
                if create:
                    try:
                        os.mkdir(name, 0o700, dir_fd=fds[-1])
                        made = True
                    except FileExistsError:
                        pass
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=fds[-1])
                except FileNotFoundError:
                    yield None
                    return
                except OSError as exc:
                    if exc.errno in _REFUSED_ERRNOS:
                        raise self._refused(fds[-1], name, "/".join(parts[: depth + 1])) from None
                    raise
                if made:
                    _fsync(fds[-1])
                fds.append(fd)
            yield fds[-1]
        finally:
            for fd in reversed(fds):
                os.close(fd)

    def _open_file(
        self, dir_fd: int, name: str, inside: str, flags: int = os.O_RDONLY
    ) -> int | None:
        """Open the regular file ``name`` in ``dir_fd`` without following a link (``None``
        if it is not there).

        :raises CorruptCheckpointError: it is a link, a hard link, a FIFO, a directory …
        """
        try:
            fd = os.open(name, flags | _FILE_FLAGS, 0o600, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in _REFUSED_ERRNOS:
                raise self._refused(dir_fd, name, inside) from None
            raise
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            os.close(fd)
            raise self._refused(dir_fd, name, inside)
        return fd

    def _read_file(self, dir_fd: int, name: str, inside: str) -> bytes | None:
        """The content of the file ``name`` (``None`` if it is not there).

        :raises CorruptCheckpointError: it is a link … (:meth:`_open_file`), or holds more
            than :meth:`CheckpointStoreBase._max_blob` bytes (checked before it is read).
        """
        fd = self._open_file(dir_fd, name, inside)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as file:
            return self._bounded_read(file, inside)

    def _bounded_read(self, file: Any, inside: str) -> bytes:
        """The rest of ``file``, if it is no more than :meth:`CheckpointStoreBase._max_blob` bytes:
        a sparse file can claim gigabytes it does not hold, and a reader would hold them."""
        limit = self._max_blob()
        size = os.fstat(file.fileno()).st_size
        data: bytes = b"" if size > limit else file.read(limit + 1)
        if size > limit or len(data) > limit:
            raise self._oversized(
                inside, f"it holds {max(size, len(data))} bytes, more than {limit}"
            )
        return data

    def _oversized(self, inside: str, what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"file checkpoint store {self.url}: {inside!r} is corrupt: {what} (bytes a "
            "checkpoint file or a blob may hold; set PLAIT_CHECKPOINT_MAX_BLOB to read more)"
        )

    def _list_dir(self, *parts: str) -> builtins.list[str]:
        with self._dir(*parts) as folder:
            return [] if folder is None else os.listdir(folder)

    @contextlib.contextmanager
    def _lease_file(self, run_id: str, exclusive: bool) -> Iterator[int]:
        """The run's lease file, open and locked (``flock``), waiting up to ``timeout``."""
        name = _fs_name(run_id, "run id")
        with self._dir("leases", create=True) as leases:
            assert leases is not None  # created
            fd = self._open_file(leases, name, f"leases/{name}", os.O_RDWR | os.O_CREAT)
            assert fd is not None  # created
        try:
            if fcntl is not None:
                mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
                deadline = time.monotonic() + self.timeout
                while True:
                    try:
                        fcntl.flock(fd, mode)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise self._unavailable(
                                f"cannot be used: the lease file of run {run_id!r} stayed "
                                f"locked for {self.timeout} s"
                            ) from None
                        time.sleep(0.01)
            yield fd
        finally:
            os.close(fd)  # closing releases the flock

    @staticmethod
    def _read_lease(fd: int) -> tuple[int, LeaseHolder | None, float] | None:
        raw = os.pread(fd, 64 * 1024, 0)
        if not raw:
            return None
        try:
            data: Any = json.loads(raw)
            return int(data["token"]), LeaseHolder.from_json(data["holder"]), float(data["expires"])
        except (ValueError, TypeError, KeyError):
            return None  # a damaged lease file: the lease is free, tokens restart above 0

    def _lease_sync(
        self, run_id: str, lease: Lease | None, ttl: float, holder: LeaseHolder | None
    ) -> Lease:
        with self._lease_file(run_id, exclusive=True) as fd:
            current = self._read_lease(fd)
            if lease is None:  # acquire
                new = self._take_lease(run_id, current, holder, ttl)
            elif current is None or current[0] != lease.token:
                if ttl <= 0:  # releasing a lease that was taken over: nothing to do
                    return lease
                raise self._lost(lease, current[1] if current else None)
            elif ttl > 0:  # renew
                new = Lease(run_id, lease.token, lease.holder, time.time() + ttl)
            else:  # release
                new = lease
            record = {
                "token": new.token,
                "holder": new.holder.to_json() if ttl > 0 else None,
                "expires": new.expires_at if ttl > 0 else 0.0,
            }
            data = json.dumps(record).encode("ascii")
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
            return new

    def _save_sync(
        self,
        checkpoint: Checkpoint,
        content: bytes,
        lease: Lease | None,
        stored: Sequence[str] = (),
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        if lease is None:
            self._save_unfenced(checkpoint, content, stored, blobs)
            return
        with self._lease_file(checkpoint.run_id, exclusive=False) as fd:
            current = self._read_lease(fd)
            if current is None or current[0] != lease.token:
                raise self._lost(lease, current[1] if current else None)
            self._save_unfenced(checkpoint, content, stored, blobs)

    # -- blobs: packs (plait_stores._filepack) and files of their own ------------------

    @contextlib.contextmanager
    def _open_packs(
        self, folder: int, run_name: str, names: builtins.list[str]
    ) -> Iterator[builtins.list[tuple[str, int, PackIndex, int]]]:
        """The packs among ``names`` (a listing of ``blobs/<run>``), oldest first, open:
        ``(name, fd, index, size)`` each. A pack gone since the listing is left out, and
        so is a damaged one (its blobs read as missing)."""
        packs: builtins.list[tuple[str, int, PackIndex, int]] = []
        try:
            for name in sorted(n for n in names if pack_seq(n) is not None):  # zero-padded
                fd = self._open_file(folder, name, f"blobs/{run_name}/{name}")
                if fd is None:
                    continue
                inside = f"blobs/{run_name}/{name}"
                try:
                    index = _pack_indexes.index((self._key, run_name, name), fd, self._max_blob())
                except OversizedPack as exc:
                    os.close(fd)
                    raise self._oversized(inside, str(exc)) from None
                if index is None:
                    os.close(fd)
                    continue
                packs.append((name, fd, index, os.fstat(fd).st_size))
            yield packs
        finally:
            for _, fd, _, _ in packs:
                os.close(fd)

    def _get_blobs_sync(
        self, run_id: str, hashes: builtins.list[str], closure: bool = False
    ) -> dict[str, bytes]:
        """The blobs among ``hashes`` the run holds (and with ``closure``, those they
        reach: :func:`~plait_stores._common.blob_closure`), from one listing of its folder
        and its packs opened once."""
        run_name = _fs_name(run_id, "run id")
        found: dict[str, bytes] = {}
        with self._dir("blobs", run_name) as folder:
            if folder is None:
                return found
            for _attempt in range(3):
                found, whole = self._read_listed(folder, run_name, hashes, closure)
                if whole:
                    break
                # a pack went while we read (merged into a newer one): list again
        return found

    def _load_with_blobs_sync(self, checkpoint_id: str) -> tuple[Checkpoint, dict[str, bytes]]:
        checkpoint = self._load_sync(checkpoint_id)
        return checkpoint, self._closure_of(checkpoint)

    def _latest_with_blobs_sync(self, run_id: str) -> tuple[Checkpoint | None, dict[str, bytes]]:
        checkpoint = self._latest_sync(run_id)
        return checkpoint, {} if checkpoint is None else self._closure_of(checkpoint)

    def _closure_of(self, checkpoint: Checkpoint) -> dict[str, bytes]:
        """The blobs the state of ``checkpoint`` reaches (as :meth:`get_blob_closure`)."""
        refs = self._blob_refs(checkpoint.state)
        return self._get_blobs_sync(checkpoint.run_id, sorted(refs), True) if refs else {}

    def _read_listed(
        self, folder: int, run_name: str, hashes: builtins.list[str], closure: bool
    ) -> tuple[dict[str, bytes], bool]:
        """:meth:`_get_blobs_sync` from one listing of ``folder``: what it found, and
        whether that is all the run holds of it (False: a blob it missed may be in a
        pack merged into a newer one meanwhile)."""
        names = os.listdir(folder)
        held = set(names)
        missed: set[str] = set()
        with self._open_packs(folder, run_name, names) as packs:

            def read(wanted: Collection[str]) -> dict[str, bytes]:
                got = self._read_blobs(folder, run_name, held, packs, wanted)
                missed.update(set(wanted).difference(got))
                return got

            found = blob_closure(read, hashes) if closure else read(hashes)
            listed = sum(1 for name in names if pack_seq(name) is not None)
            return found, not missed or len(packs) == listed

    def _read_blobs(
        self,
        folder: int,
        run_name: str,
        held: set[str],
        packs: builtins.list[tuple[str, int, PackIndex, int]],
        hashes: Collection[str],
    ) -> dict[str, bytes]:
        """The blobs among ``hashes`` that ``packs`` (open, the newest last) or files of
        their own among ``held`` (the folder's listing) hold."""
        found: dict[str, bytes] = {}
        wanted = {digest for digest in hashes if _HASH.fullmatch(digest)}  # never a path
        for _, fd, index, _ in reversed(packs):
            found.update(read_blobs(fd, index, wanted.difference(found)))
            if len(found) == len(wanted):
                return found
        for digest in sorted(wanted.difference(found)):
            if digest not in held:
                continue
            data = self._read_file(folder, digest, f"blobs/{run_name}/{digest}")
            if data is not None:
                found[digest] = data
        return found

    def _blob_hashes_sync(self, run_id: str) -> builtins.list[str]:
        run_name = _fs_name(run_id, "run id")
        with self._dir("blobs", run_name) as folder:
            if folder is None:
                return []
            names = os.listdir(folder)
            held = {name for name in names if _HASH.fullmatch(name)}
            with self._open_packs(folder, run_name, names) as packs:
                for _, _, index, _ in packs:
                    held.update(index)
        return sorted(held)

    def _write_blobs(self, folder: int, run_name: str, blobs: Mapping[str, bytes]) -> None:
        """Write the blobs the run lacks as one new pack, merging the newest packs into it
        (:func:`~plait_stores._filepack.merge_plan`), fsynced and renamed into place; then
        remove the packs it merged. Called under the store's lock."""
        names = os.listdir(folder)
        held = {name for name in names if _HASH.fullmatch(name)}
        with self._open_packs(folder, run_name, names) as packs:
            for _, _, index, _ in packs:
                held.update(index)
            new = {
                digest: bytes(data)
                for digest, data in blobs.items()
                if _HASH.fullmatch(digest) and digest not in held
            }
            if not new:
                return
            count = merge_plan([size for *_, size in packs], sum(map(len, new.values())))
            merged = packs[len(packs) - count :] if count else []
            content: dict[str, bytes] = {}
            for _, fd, index, _ in merged:
                content.update(read_blobs(fd, index, index))
            content.update(new)
        seqs = [pack_seq(name) for name in names]
        seq = max((n for n in seqs if n is not None), default=0) + 1
        _write_atomic(folder, pack_name(seq), encode_pack(content))  # fsyncs the folder
        for name, *_ in merged:
            _unlink(folder, name)  # a crash before this leaves duplicates, read as one

    def _sweep(self, run_id: str, *, gone: bool = False) -> None:
        """Remove the blobs of ``run_id`` that no remaining checkpoint reaches (all of them
        if the run is ``gone``), its stale temporary blob files, and its blob folder once
        empty. Packs holding such blobs are rewritten: the blobs they keep go into one new
        pack, renamed into place before they are removed. It holds the run's lease file
        exclusively, as a save with a lease holds it shared from its check to its commit:
        no save of another process is half-way (its blobs written, its checkpoint not
        yet), and the store's lock does the same within this process."""
        run_name = _fs_name(run_id, "run id")
        if not self._list_dir("blobs", run_name):
            return
        with self._lease_file(run_id, exclusive=True), self._lock:
            states = [] if gone else self._states_sync(run_name)
            with self._dir("blobs", run_name) as folder:
                if folder is None:
                    return
                names = os.listdir(folder)
                cutoff = time.time() - self.stale_after
                for name in names:
                    if name.startswith(_TEMP_PREFIX) and (gone or _mtime(folder, name) < cutoff):
                        _unlink(folder, name)
                if gone:
                    for name in names:
                        if _HASH.fullmatch(name) or pack_seq(name) is not None:
                            _unlink(folder, name)
                elif states is not None:  # None: a checkpoint's references are unknown
                    self._sweep_blobs(folder, run_name, names, states)
            with self._dir("blobs") as parent:
                if parent is not None:
                    with contextlib.suppress(OSError):  # not empty: blobs still in use
                        os.rmdir(run_name, dir_fd=parent)

    def _sweep_blobs(
        self, folder: int, run_name: str, names: builtins.list[str], states: builtins.list[Any]
    ) -> None:
        """Mark and sweep one run's blobs against ``states``, its checkpoints' states."""
        singles: dict[str, bytes] = {}
        for name in names:
            if _HASH.fullmatch(name):
                data = self._read_file(folder, name, f"blobs/{run_name}/{name}")
                if data is not None:
                    singles[name] = data
        with self._open_packs(folder, run_name, names) as packs:
            packed: dict[str, bytes] = {}
            for _, fd, index, _ in packs:
                packed.update(read_blobs(fd, index, index))
            doomed = self._unreferenced_states(states, {**packed, **singles})
            rewrite = [name for name, _, index, _ in packs if not doomed.isdisjoint(index)]
        for name in sorted(doomed.intersection(singles)):
            _unlink(folder, name)
        if rewrite:
            kept = {digest: data for digest, data in packed.items() if digest not in doomed}
            if kept:
                seqs = [pack_seq(name) for name in names]
                seq = max((n for n in seqs if n is not None), default=0) + 1
                _write_atomic(folder, pack_name(seq), encode_pack(kept))  # before removals
            for name, *_ in packs:
                _unlink(folder, name)
        if doomed:
            _fsync(folder)

    def _append_sync(self, run_id: str, stored: Sequence[str], lease: Lease | None) -> None:
        if lease is None:
            with self._lock:
                self._append_unfenced(run_id, stored)
            return
        with self._lease_file(run_id, exclusive=False) as fd:
            current = self._read_lease(fd)
            if current is None or current[0] != lease.token:
                raise self._lost(lease, current[1] if current else None)
            with self._lock:
                self._append_unfenced(run_id, stored)

    def _append_unfenced(self, run_id: str, stored: Sequence[str]) -> None:
        """Write ``stored`` as the run's next journal file (under the directory lock)."""
        if not stored:
            return
        run_name = _fs_name(run_id, "run id")
        with self._dir("journal", run_name, create=True) as folder:
            assert folder is not None  # created
            names = _journal_files(os.listdir(folder))
            first = _journal_range(names[-1])[1] + 1 if names else 1
            last = first + len(stored) - 1
            lines = "".join(text + "\n" for text in stored).encode("utf-8")
            _write_atomic(folder, f"{first:012d}-{last:012d}{_JOURNAL_SUFFIX}", lines)

    def _read_events_sync(
        self, run_id: str, after: int, limit: int
    ) -> builtins.list[tuple[int, str]]:
        run_name = _fs_name(run_id, "run id")
        named = f"run {run_id!r} in {self.url}"
        out: builtins.list[tuple[int, str]] = []
        with self._dir("journal", run_name) as folder:
            if folder is None:
                return out
            for name in _journal_files(os.listdir(folder)):
                first, last = _journal_range(name)
                if last <= after:
                    continue
                content = self._read_file(folder, name, f"journal/{run_name}/{name}")
                if content is None:
                    continue
                lines = content.decode("utf-8", errors="replace").splitlines()
                if len(lines) != last - first + 1:
                    raise CorruptCheckpointError(
                        f"the journal of {named} is corrupt: 'journal/{run_name}/{name}' "
                        f"holds {len(lines)} events, not {last - first + 1}"
                    )
                for seq, text in enumerate(lines, start=first):
                    if seq > after:
                        out.append((seq, text))
                        if len(out) == limit:
                            return out
        return out

    def _save_unfenced(
        self,
        checkpoint: Checkpoint,
        content: bytes,
        stored: Sequence[str] = (),
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        id_name = _fs_name(checkpoint.checkpoint_id, "checkpoint id")
        run_name = _fs_name(checkpoint.run_id, "run id")
        with self._lock:
            existing = self._read_stored(id_name)
            if existing is not None:
                if existing[2] != content:
                    raise self._duplicate(checkpoint)
                return
            with self._dir("runs", run_name, create=True) as run_dir:
                assert run_dir is not None  # created
                names = _checkpoint_files(os.listdir(run_dir))
                seq = _seq_of(names[-1]) + 1 if names else 1
                # The superstep in the name is for people looking at the directory; the
                # header holds the real value (and a negative one would add a "-").
                superstep = max(checkpoint.superstep, 0)
                file_name = f"{seq:012d}-{superstep:010d}-{id_name}{_SUFFIX}"
                with self._dir("ids", create=True) as ids:
                    assert ids is not None  # created
                    _write_atomic(ids, id_name, f"{run_name}/{file_name}".encode("ascii"))
                if blobs:
                    with self._dir("blobs", run_name, create=True) as folder:
                        assert folder is not None  # created
                        self._write_blobs(folder, run_name, blobs)
                self._append_unfenced(checkpoint.run_id, stored)  # before the commit point
                _write_atomic(run_dir, file_name, content)  # the commit point
            summary = RunSummary.from_checkpoints(
                checkpoint, created_at=checkpoint.created_at, first_metadata=checkpoint.metadata
            )
            self._index.append(lambda stamp: summary_line(summary, stamp, full=seq == 1))

    def _entry(self, id_name: str) -> tuple[str, str] | None:
        """The run directory and file an id entry names (``None`` if the entry is gone).

        :raises CorruptCheckpointError: the entry is not ``<run>/<file name>`` for this
            very checkpoint (it is never followed outside ``runs/``), or is not a file.
        """
        with self._dir("ids") as ids:
            raw = None if ids is None else self._read_file(ids, id_name, f"ids/{id_name}")
        if raw is None:
            return None
        match = _ENTRY.fullmatch(raw.decode("ascii", errors="replace"))
        if match is None or match.group(3) != id_name:
            # Never quote what the entry holds: whatever it is, it is not ours to show.
            raise CorruptCheckpointError(
                f"checkpoint {unquote(id_name)!r} in {self.url} is corrupt: its id entry "
                f"'ids/{id_name}' names something that is not a checkpoint file of this store"
            )
        return match.group(1), match.group(2)

    def _read_stored(self, id_name: str, *, check: bool = True) -> tuple[str, str, bytes] | None:
        """The run directory and file an id entry names and the file's content, or
        ``None`` if either is gone (or, with ``check=False``, if either is damaged)."""
        try:
            entry = self._entry(id_name)
            if entry is None:
                return None
            with self._dir("runs", entry[0]) as run_dir:
                if run_dir is None:
                    return None
                content = self._read_file(run_dir, entry[1], f"runs/{entry[0]}/{entry[1]}")
        except CorruptCheckpointError:
            if check:
                raise
            return None
        return None if content is None else (entry[0], entry[1], content)

    def _decode_file(self, run_name: str, file_name: str, content: bytes) -> Checkpoint:
        """The checkpoint a file of ``runs/`` holds, checked against its name."""
        run_id = unquote(run_name)
        checkpoint_id = _id_of(file_name)
        inside = f"runs/{run_name}/{file_name}"
        header, sep, body = content.partition(b"\n")
        if not header.startswith(_HEADER) or not sep:
            raise CorruptCheckpointError(
                f"{self._where(run_id, checkpoint_id)} in {self.url} is corrupt: file {inside!r} "
                "has no checkpoint header"
            )
        checkpoint = self._decode_body(
            body, where=f"{self._where(run_id, checkpoint_id)} ({inside})"
        )
        if checkpoint.checkpoint_id != checkpoint_id or checkpoint.run_id != run_id:
            raise CorruptCheckpointError(
                f"{self._where(run_id, checkpoint_id)} in {self.url} is corrupt: file {inside!r} "
                f"holds {self._where(checkpoint.run_id, checkpoint.checkpoint_id)}"
            )
        return checkpoint

    def _load_sync(self, checkpoint_id: str) -> Checkpoint:
        stored = self._read_stored(_fs_name(checkpoint_id, "checkpoint id"))
        if stored is None:
            raise self._not_found(checkpoint_id)
        return self._decode_file(*stored)

    def _list_sync(self, run_id: str) -> builtins.list[CheckpointInfo]:
        run_name = _fs_name(run_id, "run id")
        with self._dir("runs", run_name) as run_dir:
            if run_dir is None:
                return []
            infos = []
            for name in _checkpoint_files(os.listdir(run_dir)):
                info = self._info_sync(run_dir, run_name, name)
                if info is not None:
                    infos.append(info)
            return infos

    def _info_sync(self, run_dir: int, run_name: str, name: str) -> CheckpointInfo | None:
        """The listing fields from the header of ``name`` (``None`` if it is gone)."""
        inside = f"runs/{run_name}/{name}"
        fd = self._open_file(run_dir, name, inside)
        if fd is None:
            return None  # deleted while we looked
        try:
            with os.fdopen(fd, "rb") as file:
                header = file.readline(64 * 1024)
                fields = json.loads(header[len(_HEADER) :]) if header.startswith(_HEADER) else None
                if isinstance(fields, dict) and "base_id" not in fields:
                    # Written before headers had base_id: a delta names its base inside.
                    try:
                        body = self._bounded_read(file, inside)
                        fields["base_id"] = self._decode_body(body).base_id
                    except CorruptCheckpointError:
                        fields["base_id"] = None
        except ValueError as exc:
            raise self._bad_header(run_name, name, exc) from exc
        try:
            if fields is None:
                raise ValueError("no checkpoint header")
            return CheckpointInfo(**fields)
        except (ValueError, TypeError) as exc:
            raise self._bad_header(run_name, name, exc) from exc

    def _bad_header(self, run_name: str, name: str, exc: Exception) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"{self._where(unquote(run_name), _id_of(name))} in {self.url} is corrupt: the header "
            f"of 'runs/{run_name}/{name}' does not decode ({exc})"
        )

    def _runs_sync(self, limit: int | None) -> builtins.list[RunInfo]:
        found: builtins.list[tuple[float, str, float]] = []
        damaged: builtins.list[RunInfo] = []  # one damaged run never fails the listing
        for run_name in self._list_dir("runs"):
            try:
                listed = self._run_times(run_name)
            except CorruptCheckpointError as exc:
                damaged.append(self._corrupt_run_info(unquote(run_name), exc))
                continue
            if listed is not None:
                found.append(listed)
        found.sort(reverse=True)
        out: builtins.list[RunInfo] = []
        for _updated, run_id, created_at in found:
            if limit is not None and len(out) >= limit:
                break
            try:
                latest = self._latest_sync(run_id)
            except CorruptCheckpointError as exc:
                out.append(self._corrupt_run_info(run_id, exc, created_at=created_at))
                continue
            if latest is not None:
                out.append(
                    self._latest_run_info(latest, created_at=min(created_at, latest.created_at))
                )
        return (out + damaged)[:limit]

    def _run_times(self, run_name: str) -> tuple[float, str, float] | None:
        """When a run's latest and first checkpoints were taken, from their headers
        (``None`` if it has none)."""
        with self._dir("runs", run_name) as run_dir:
            if run_dir is None:
                return None  # deleted while we looked
            names = _checkpoint_files(os.listdir(run_dir))
            last = None
            for name in reversed(names):  # the newest whose file is still there
                last = self._info_sync(run_dir, run_name, name)
                if last is not None:
                    break
            if last is None:
                return None  # no checkpoint (left empty, or deleted while we looked)
            first = self._info_sync(run_dir, run_name, names[0])
        created_at = last.created_at if first is None else first.created_at
        return last.created_at, unquote(run_name), created_at

    def _latest_sync(self, run_id: str) -> Checkpoint | None:
        run_name = _fs_name(run_id, "run id")
        with self._dir("runs", run_name) as run_dir:
            if run_dir is None:
                return None
            for name in reversed(_checkpoint_files(os.listdir(run_dir))):
                content = self._read_file(run_dir, name, f"runs/{run_name}/{name}")
                if content is None:
                    continue  # deleted while we looked; the one before is the latest now
                return self._decode_file(run_name, name, content)
        return None

    def _delete_sync(self, checkpoint_id: str) -> str | None:
        """Remove one checkpoint; return its run's id (``None`` if it was not there)."""
        id_name = _fs_name(checkpoint_id, "checkpoint id")
        with self._lock:
            entry = self._entry(id_name)
            if entry is None:
                return None
            # The checkpoint file goes first: a crash in between leaves an id entry
            # without a file, which reads as absent.
            with self._dir("runs", entry[0]) as run_dir:
                if run_dir is not None and _unlink(run_dir, entry[1]):
                    _fsync(run_dir)
            with self._dir("ids") as ids:
                if ids is not None:
                    _unlink(ids, id_name)
        self._sweep(unquote(entry[0]))
        return unquote(entry[0])

    def _states_sync(self, run_name: str) -> builtins.list[Any] | None:
        """The states of the run's stored checkpoints (what its blobs must stay for), or
        ``None`` if one does not decode (its references are unknown: keep every blob)."""
        states: builtins.list[Any] = []
        with self._dir("runs", run_name) as run_dir:
            if run_dir is None:
                return states
            for name in _checkpoint_files(os.listdir(run_dir)):
                content = self._read_file(run_dir, name, f"runs/{run_name}/{name}")
                if content is None:
                    continue
                try:
                    decoded = self._decode_file(run_name, name, content)
                except CorruptCheckpointError:
                    return None
                states += [decoded.state, decoded.metadata]  # (a pinned document's blob)
        return states

    def _prune_sync(self, run_id: str, keep_last: int, remove_dir: bool) -> int:
        removed = self._prune_files(run_id, keep_last, remove_dir)
        if remove_dir:
            self._remove_run_dir(_fs_name(run_id, "run id"))
        self._sweep(run_id, gone=remove_dir)
        return removed

    def _prune_files(self, run_id: str, keep_last: int, remove_dir: bool) -> int:
        run_name = _fs_name(run_id, "run id")
        with self._lock, self._dir("runs", run_name) as run_dir:
            if run_dir is None:
                return 0
            names = _checkpoint_files(os.listdir(run_dir))
            cut = max(len(names) - keep_last, 0)
            # prune_plan's rule, reading the kept checkpoints' verified bodies: older
            # checkpoints go unless a kept one names them as its base, and the first stays
            # while anything is kept (it holds the topology).
            needed = {_id_of(names[0])} if keep_last and names else set()
            for name in names[cut:]:
                content = self._read_file(run_dir, name, f"runs/{run_name}/{name}")
                if content is None:
                    continue
                base_id = self._decode_file(run_name, name, content).base_id
                if base_id is not None:
                    needed.add(base_id)
            doomed = [name for name in names[:cut] if _id_of(name) not in needed]
            removed = 0
            for name in doomed:
                removed += _unlink(run_dir, name)
            if doomed:
                _fsync(run_dir)
            with self._dir("ids") as ids:
                if ids is not None:
                    for name in doomed:
                        _unlink(ids, name.split("-", 2)[2][: -len(_SUFFIX)])
            cutoff = time.time() - self.stale_after
            for name in os.listdir(run_dir):
                # Temporary files: all of them when the directory goes (a save that crashed
                # before its rename), else only stale ones (a save may be in flight).
                if name.startswith(_TEMP_PREFIX) and (remove_dir or _mtime(run_dir, name) < cutoff):
                    _unlink(run_dir, name)
        return removed

    def _remove_run_dir(self, run_name: str) -> None:
        with self._dir("runs") as runs:
            if runs is None:
                return
            try:
                os.rmdir(run_name, dir_fd=runs)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # a save raced us in
                    raise
