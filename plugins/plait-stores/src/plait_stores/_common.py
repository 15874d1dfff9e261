"""What the memory, file and SQLite stores share beyond :mod:`plait_durable.kit`
(``CheckpointStoreBase`` …): URL options, and reading a blob tree whole
(``get_blob_closure``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from urllib.parse import parse_qsl

from plait_durable.kit import CheckpointStoreBase

__all__ = ["blob_closure", "split_query"]

#: A blob that inflates to this many bytes or more is not walked by :func:`blob_closure`:
#: the size of a bundle (64 KB of a tree's items, held inline: it names no blob).
WALK_LIMIT = 64 * 1024


def split_query(url: str, *, allowed: frozenset[str]) -> tuple[str, dict[str, str]]:
    """Split ``url`` into the part before ``?`` and its query options.

    :raises ValueError: an option not in ``allowed``, naming the ones that are.
    """
    head, _, query = url.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} in checkpoint store url {url!r}; "
            f"known options: {known}"
        )
    return head, options


def blob_closure(
    read: Callable[[list[str]], Mapping[str, bytes]], hashes: Collection[str]
) -> dict[str, bytes]:
    """The blobs among ``hashes`` and those they reach, read a level at a time by ``read``
    (``hashes -> {hash: bytes}``, leaving out what it does not hold) inside one call of
    the store's worker thread, so a resume costs one hop to that thread rather than one
    per tree level.

    A blob that inflates to :data:`WALK_LIMIT` bytes or more is returned but
    not walked: a bundle holds items, never references, and parsing one here would parse
    it twice (the kernel parses every blob it reads). Whatever such a blob reaches is left
    out, and the reader fetches it level by level (``get_blobs``), as from any store. Nothing
    here is trusted: the reader verifies every blob against its hash.
    """
    found: dict[str, bytes] = {}
    asked: set[str] = set()
    frontier = sorted(set(hashes))
    while frontier:
        asked.update(frontier)
        got = read(frontier)
        found.update(got)
        reached: set[str] = set()
        for data in got.values():
            try:
                plain = CheckpointStoreBase._unpack_blob(bytes(data), WALK_LIMIT - 1)
            except ValueError:  # too large to walk here, or not a blob of ours
                continue
            if len(plain) >= WALK_LIMIT:  # stored uncompressed
                continue
            reached.update(CheckpointStoreBase._child_refs(plain))
        frontier = sorted(reached - asked)
    return found
