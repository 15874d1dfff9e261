"""The file store's blob packs: a run's blobs, many to a file.

A resume reads every blob its checkpoint reaches (a 1,000-item list is about 1,300
blobs); one file per blob costs an open, a stat, a read and a close each. A pack holds the
blobs of one or more saves in one file, so a resume opens a few packs and reads what it
needs from each.

A pack is written once, whole (a private temporary file, fsynced, renamed into place, the
directory fsynced), and never changed afterwards; a torn write leaves a temporary file,
never a pack. Its bytes::

    PLAITPACK1\\n
    count (u32) | CRC-32 of the index (u32)              big-endian
    index: count x (SHA-256 (32 raw bytes) | offset (u64) | length (u32))
    the blobs' bytes, at their offsets

A pack whose header or index does not check (a damaged file) holds nothing for a reader:
its blobs read as missing, which the kernel reports as a
:class:`~plait_durable.CorruptCheckpointError` naming the checkpoint and the hash; an entry
whose bytes lie past the end of the file is missing too. A pack whose index claims more
than :data:`MAX_ENTRIES` blobs, or a blob longer than a reader takes
(:meth:`plait_durable.kit.CheckpointStoreBase._max_blob`), is :class:`OversizedPack`,
checked before the index or the blob is read (a sparse file can claim gigabytes it does
not hold), which the store reports naming the pack. The bytes themselves are not checked
here: the kernel verifies every blob against its hash when it reads it.

Packs are named ``pack-<seq>.pack`` with a sequence number that only grows while the run
has packs. Each save with new blobs writes one pack; to keep their number logarithmic in
the run's length, the save merges the newest packs into it while the newest is at most
twice what is being written (:func:`merge_plan`, up to :data:`MERGE_LIMIT` bytes), and
removes them after the merged pack is in place (a crash in between leaves the same blob
in two packs, which readers and the next merge or prune take as one).

Packs are immutable, so each pack's index is read once per process and kept
(:class:`PackIndexCache`, checked against the file's inode, size and mtime).
"""

from __future__ import annotations

import os
import re
import struct
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "MAX_ENTRIES",
    "MERGE_LIMIT",
    "OversizedPack",
    "PACK_NAME",
    "PackIndex",
    "PackIndexCache",
    "encode_pack",
    "merge_plan",
    "pack_name",
    "pack_seq",
    "parse_index",
    "read_blobs",
]

MAGIC = b"PLAITPACK1\n"
_HEAD = struct.Struct(">II")
_ENTRY = struct.Struct(">32sQI")
#: What a pack's file name looks like.
PACK_NAME = re.compile(r"pack-([0-9]{12,})\.pack")
#: A save merges packs into the one it writes only while the result stays below this.
MERGE_LIMIT = 32 << 20
#: The most blobs a pack's index may claim (44 bytes an entry, so an index is read only
#: up to 44 MiB): a save writes far fewer (a million blobs are over 256 MB of values,
#: which a checkpoint's bound refuses to read back).
MAX_ENTRIES = 1 << 20


class OversizedPack(ValueError):
    """A pack claims more than a reader takes: more than :data:`MAX_ENTRIES` blobs, or a
    blob longer than the bound it is read with."""


#: hash (hex) -> (offset, length) of one pack.
PackIndex = dict[str, tuple[int, int]]


def pack_name(seq: int) -> str:
    """The file name of the pack numbered ``seq``."""
    return f"pack-{seq:012d}.pack"


def pack_seq(name: str) -> int | None:
    """The sequence number of a pack's file name, or None if ``name`` is not a pack."""
    match = PACK_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def encode_pack(blobs: Mapping[str, bytes]) -> bytes:
    """The bytes of a pack holding ``blobs`` (hash hex -> bytes), in hash order."""
    items = sorted(blobs.items())
    offset = len(MAGIC) + _HEAD.size + _ENTRY.size * len(items)
    index = bytearray()
    for digest, data in items:
        index += _ENTRY.pack(bytes.fromhex(digest), offset, len(data))
        offset += len(data)
    head = _HEAD.pack(len(items), zlib.crc32(index))
    return b"".join([MAGIC, head, bytes(index), *(bytes(data) for _, data in items)])


def _read_at(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer only at the end of the file)."""
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def parse_index(fd: int, file_size: int, max_length: int | None = None) -> PackIndex | None:
    """The index of the pack open as ``fd``, or None if it is damaged (a bad header, an
    index longer than the file, a CRC-32 that does not match); entries past
    ``file_size`` are left out.

    :raises OversizedPack: the index claims more than :data:`MAX_ENTRIES` blobs (checked
        before it is read), or a blob longer than ``max_length`` bytes.
    """
    head = _read_at(fd, len(MAGIC) + _HEAD.size, 0)
    if len(head) != len(MAGIC) + _HEAD.size or not head.startswith(MAGIC):
        return None
    count, crc = _HEAD.unpack_from(head, len(MAGIC))
    if count > MAX_ENTRIES:
        raise OversizedPack(f"its index claims {count} blobs, more than {MAX_ENTRIES}")
    if len(head) + _ENTRY.size * count > file_size:
        return None
    raw = _read_at(fd, _ENTRY.size * count, len(head))
    if len(raw) != _ENTRY.size * count or zlib.crc32(raw) != crc:
        return None
    index: PackIndex = {}
    for digest, offset, length in _ENTRY.iter_unpack(raw):
        if max_length is not None and length > max_length:
            raise OversizedPack(f"it claims a blob of {length} bytes, more than {max_length}")
        if offset + length <= file_size:
            index[digest.hex()] = (offset, length)
    return index


def read_blobs(fd: int, index: PackIndex, wanted: Iterable[str]) -> dict[str, bytes]:
    """The blobs among ``wanted`` that the pack open as ``fd`` holds: one read of the
    span they lie in when they fill most of it, else one read each."""
    spots = sorted((index[h][0], index[h][1], h) for h in wanted if h in index)
    if not spots:
        return {}
    start = spots[0][0]
    end = max(offset + length for offset, length, _ in spots)
    needed = sum(length for _, length, _ in spots)
    found: dict[str, bytes] = {}
    if needed * 2 >= end - start:
        span = memoryview(_read_at(fd, end - start, start))
        for offset, length, digest in spots:
            piece = span[offset - start : offset - start + length]
            if len(piece) == length:
                found[digest] = bytes(piece)
        return found
    for offset, length, digest in spots:
        data = _read_at(fd, length, offset)
        if len(data) == length:
            found[digest] = data
    return found


def merge_plan(sizes: Sequence[int], new: int, limit: int = MERGE_LIMIT) -> int:
    """How many of the newest packs (``sizes``, oldest first) a save of ``new`` bytes
    merges into the pack it writes: while the newest left is at most twice the merged
    size and the result stays under ``limit``. Each byte is then rewritten about
    ``log2(n)`` times over a run of ``n`` saves, and a run keeps about that many packs."""
    merged, count = new, 0
    for size in reversed(sizes):
        if size > 2 * merged or merged + size > limit:
            break
        merged += size
        count += 1
    return count


class PackIndexCache:
    """Pack indexes already read by this process, by store directory, run and pack name,
    each checked against the file's identity (a pack is immutable; a name reused after a
    run was deleted is another file)."""

    def __init__(self, limit: int = 4096) -> None:
        self._lock = threading.Lock()
        # key -> (file identity, index, its longest blob)
        self._entries: dict[
            tuple[str, str, str], tuple[tuple[int, int, int, int], PackIndex, int]
        ] = {}
        self._limit = limit

    def index(
        self, key: tuple[str, str, str], fd: int, max_length: int | None = None
    ) -> PackIndex | None:
        """The index of the pack open as ``fd`` (``key``: directory, run, pack name).

        :raises OversizedPack: as :func:`parse_index` (with ``max_length``); a cached
            index is checked against ``max_length`` again.
        """
        info = os.fstat(fd)
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        with self._lock:
            cached = self._entries.get(key)
        if cached is not None and cached[0] == identity:
            if max_length is not None and cached[2] > max_length:
                raise OversizedPack(
                    f"it claims a blob of {cached[2]} bytes, more than {max_length}"
                )
            return cached[1]
        index = parse_index(fd, info.st_size, max_length)
        if index is not None:
            with self._lock:
                if len(self._entries) >= self._limit:
                    self._entries.clear()
                longest = max((length for _, length in index.values()), default=0)
                self._entries[key] = (identity, index, longest)
        return index
