"""``file://DIR``: one file per checkpoint, written atomically.

Layout under ``DIR``::

    runs/<run>/<seq:012d>-<superstep:010d>-<checkpoint>.ckpt   the checkpoints
    ids/<checkpoint>                                           "<run>/<file name>"

File names start with a zero-padded sequence number, so a sorted directory listing is the
run's insertion order (superstep numbers repeat across resumes; the sequence does not)
and ``latest``, ``prune`` and ``delete_run`` never open a file they do not need. Each
``.ckpt`` file is one header line (the listing fields as JSON) followed by the bytes of
:func:`~plait.checkpoint.encode_checkpoint`. ``ids/`` lets ``load(checkpoint_id)`` find a
file without scanning every run. Names are percent-encoded, so any run id is a safe name.

A save writes a temporary file in the target directory, fsyncs it, renames it over the
final name with :func:`os.replace` and fsyncs the directory: after a crash a checkpoint is
wholly there or absent. The id entry is written before the checkpoint file, so the
checkpoint file's rename is the single commit point; an id entry whose file is missing is
treated as absent. All file I/O runs in worker threads.

One process writes one run at a time (the runner does); different runs, and readers,
may share the directory freely.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, unquote

import anyio.to_thread
from plait.checkpoint import (
    Checkpoint,
    CheckpointInfo,
    check_keep_last,
    decode_checkpoint,
    encode_checkpoint,
)
from plait.errors import CheckpointNotFoundError, CorruptCheckpointError, StoreUnavailableError
from plait.stores import CheckpointStoreBase, duplicate_error, info_fields, where

from ._common import split_query

__all__ = ["FileCheckpointStore"]

_T = TypeVar("_T")
_HEADER = b"PLAITFILE1 "
_SUFFIX = ".ckpt"
_TEMP_PREFIX = ".plait-"
_MAX_NAME = 200  # bytes; leaves room for the sequence prefix under the usual 255

# One lock per directory for the whole process: two stores on one directory must not
# hand out the same sequence number.
_dir_locks: dict[str, threading.Lock] = {}
_dir_locks_guard = threading.Lock()


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


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems refuse to fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _make_dir(path: Path) -> None:
    """Create ``path`` (and parents) durably: fsync each new directory's parent."""
    if path.is_dir():
        return
    _make_dir(path.parent)
    try:
        path.mkdir()
    except FileExistsError:
        return
    _fsync_dir(path.parent)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _seq_of(file_name: str) -> int:
    return int(file_name.split("-", 1)[0])


def _id_of(file_name: str) -> str:
    return unquote(file_name.split("-", 2)[2][: -len(_SUFFIX)])


class FileCheckpointStore(CheckpointStoreBase):
    """Checkpoints as files under one directory (``file://DIR``).

    :param directory: created on the first save if it does not exist.

    .. versionadded:: 0.1
    """

    def __init__(self, directory: str | os.PathLike[str], *, url: str | None = None) -> None:
        self.directory = Path(directory)
        self.url = url or f"file://{os.fspath(directory)}"
        self._runs = self.directory / "runs"
        self._ids = self.directory / "ids"
        self._lock = _lock_for(self.directory)

    @classmethod
    def from_url(cls, url: str) -> FileCheckpointStore:
        """Open ``file://DIR`` (``file:///abs/dir`` or ``file://relative/dir``)."""
        head, _ = split_query(url, allowed=frozenset())
        if not head.lower().startswith("file://") or len(head) == len("file://"):
            raise ValueError(f"not a file store url: {url!r} (expected file://DIR)")
        return cls(unquote(head[len("file://") :]), url=url)

    # -- the protocol ------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        """Write ``checkpoint`` durably (saving the same checkpoint again does nothing)."""
        header = json.dumps(info_fields(checkpoint), ensure_ascii=True).encode("ascii")
        content = _HEADER + header + b"\n" + encode_checkpoint(checkpoint)
        await self._run(self._save_sync, checkpoint, content)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Read, verify and decode the checkpoint ``checkpoint_id``."""
        return await self._run(self._load_sync, checkpoint_id)

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved (reads headers only)."""
        return await self._run(self._list_sync, run_id)

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The checkpoint of ``run_id`` saved last, or ``None``."""
        return await self._run(self._latest_sync, run_id)

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        await self._run(self._delete_sync, checkpoint_id)

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went (reads the kept checkpoints' headers only)."""
        check_keep_last(keep_last)
        return await self._run(self._prune_sync, run_id, keep_last, False)

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its directory; return how many went."""
        return await self._run(self._prune_sync, run_id, 0, True)

    # -- worker-thread side --------------------------------------------------------

    async def _run(self, func: Callable[..., _T], *args: object) -> _T:
        self._check_open()
        try:
            return await anyio.to_thread.run_sync(func, *args)
        except OSError as exc:
            raise StoreUnavailableError(
                f"file checkpoint store {self.url} cannot be used: {exc}"
            ) from exc

    def _run_dir(self, run_id: str) -> Path:
        return self._runs / _fs_name(run_id, "run id")

    def _names(self, run_dir: Path) -> builtins.list[str]:
        try:
            names = os.listdir(run_dir)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if n.endswith(_SUFFIX) and not n.startswith("."))

    def _save_sync(self, checkpoint: Checkpoint, content: bytes) -> None:
        id_path = self._ids / _fs_name(checkpoint.checkpoint_id, "checkpoint id")
        run_dir = self._run_dir(checkpoint.run_id)
        with self._lock:
            existing = self._read_stored(id_path)
            if existing is not None:
                if existing[1] != content:
                    raise duplicate_error(checkpoint, self.url)
                return
            _make_dir(run_dir)
            _make_dir(self._ids)
            names = self._names(run_dir)
            seq = _seq_of(names[-1]) + 1 if names else 1
            # The superstep in the name is for people looking at the directory; the
            # header holds the real value (and a negative one would add a "-").
            superstep = max(checkpoint.superstep, 0)
            file_name = f"{seq:012d}-{superstep:010d}-{id_path.name}{_SUFFIX}"
            _write_atomic(id_path, f"{run_dir.name}/{file_name}".encode("ascii"))
            _write_atomic(run_dir / file_name, content)  # the commit point

    def _read_stored(self, id_path: Path) -> tuple[Path, bytes] | None:
        """The file an id entry names and its content, or ``None`` if either is gone."""
        try:
            relative = id_path.read_bytes().decode("ascii")
            path = self._runs / relative
            return path, path.read_bytes()
        except FileNotFoundError:
            return None

    def _decode(self, path: Path, content: bytes) -> Checkpoint:
        run_id = unquote(path.parent.name)
        checkpoint_id = _id_of(path.name)
        header, sep, body = content.partition(b"\n")
        if not header.startswith(_HEADER) or not sep:
            raise CorruptCheckpointError(
                f"{where(run_id, checkpoint_id)} in {self.url} is corrupt: file {path} "
                "has no checkpoint header"
            )
        checkpoint = decode_checkpoint(body, where=f"{where(run_id, checkpoint_id)} ({path})")
        if checkpoint.checkpoint_id != checkpoint_id or checkpoint.run_id != run_id:
            raise CorruptCheckpointError(
                f"{where(run_id, checkpoint_id)} in {self.url} is corrupt: file {path} holds "
                f"{where(checkpoint.run_id, checkpoint.checkpoint_id)}"
            )
        return checkpoint

    def _load_sync(self, checkpoint_id: str) -> Checkpoint:
        stored = self._read_stored(self._ids / _fs_name(checkpoint_id, "checkpoint id"))
        if stored is None:
            raise CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in {self.url}")
        return self._decode(*stored)

    def _list_sync(self, run_id: str) -> builtins.list[CheckpointInfo]:
        run_dir = self._run_dir(run_id)
        infos = []
        for name in self._names(run_dir):
            info = self._info_sync(run_id, run_dir / name)
            if info is not None:
                infos.append(info)
        return infos

    def _info_sync(self, run_id: str, path: Path) -> CheckpointInfo | None:
        """The listing fields from the header of ``path`` (``None`` if it is gone)."""
        try:
            with open(path, "rb") as file:
                header = file.readline(64 * 1024)
                fields = json.loads(header[len(_HEADER) :]) if header.startswith(_HEADER) else None
                if isinstance(fields, dict) and "base_id" not in fields:
                    # Written before headers had base_id: a delta names its base inside.
                    try:
                        fields["base_id"] = decode_checkpoint(file.read()).base_id
                    except CorruptCheckpointError:
                        fields["base_id"] = None
        except FileNotFoundError:
            return None  # deleted while we looked
        except ValueError as exc:
            raise self._bad_header(run_id, path, exc) from exc
        try:
            if fields is None:
                raise ValueError("no checkpoint header")
            return CheckpointInfo(**fields)
        except (ValueError, TypeError) as exc:
            raise self._bad_header(run_id, path, exc) from exc

    def _bad_header(self, run_id: str, path: Path, exc: Exception) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"{where(run_id, _id_of(path.name))} in {self.url} is corrupt: the header of "
            f"{path} does not decode ({exc})"
        )

    def _latest_sync(self, run_id: str) -> Checkpoint | None:
        run_dir = self._run_dir(run_id)
        for name in reversed(self._names(run_dir)):
            try:
                content = (run_dir / name).read_bytes()
            except FileNotFoundError:
                continue  # deleted while we looked; the one before is the latest now
            return self._decode(run_dir / name, content)
        return None

    def _delete_sync(self, checkpoint_id: str) -> None:
        id_path = self._ids / _fs_name(checkpoint_id, "checkpoint id")
        with self._lock:
            try:
                relative = id_path.read_bytes().decode("ascii")
            except FileNotFoundError:
                return
            path = self._runs / relative
            # The checkpoint file goes first: a crash in between leaves an id entry
            # without a file, which reads as absent.
            if _unlink(path):
                _fsync_dir(path.parent)
            _unlink(id_path)

    def _prune_sync(self, run_id: str, keep_last: int, remove_dir: bool) -> int:
        run_dir = self._run_dir(run_id)
        with self._lock:
            names = self._names(run_dir)
            cut = max(len(names) - keep_last, 0)
            # prune_plan's rule, reading only the kept checkpoints' headers: older
            # checkpoints go unless a kept one names them as its base.
            needed = set()
            for name in names[cut:]:
                info = self._info_sync(run_id, run_dir / name)
                if info is not None and info.base_id is not None:
                    needed.add(info.base_id)
            doomed = [name for name in names[:cut] if _id_of(name) not in needed]
            removed = 0
            for name in doomed:
                removed += _unlink(run_dir / name)
            if doomed:
                _fsync_dir(run_dir)
            for name in doomed:
                _unlink(self._ids / name.split("-", 2)[2][: -len(_SUFFIX)])
            if remove_dir:
                self._remove_run_dir(run_dir)
            return removed

    def _remove_run_dir(self, run_dir: Path) -> None:
        try:
            leftovers = os.listdir(run_dir)
        except FileNotFoundError:
            return
        for name in leftovers:
            if name.startswith(_TEMP_PREFIX):  # from a save that crashed before its rename
                _unlink(run_dir / name)
        try:
            run_dir.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # a save raced us in
                raise
