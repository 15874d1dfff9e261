"""Pinned documents: the workflow document a run was started from, kept with the run.

A run started from a workflow document (YAML steps, a JSON DAG, a flow file) records it
in its checkpoints' metadata under :data:`DOCUMENT_KEY` (:func:`document_metadata`):
the document's name (its file name, no folder), its format, the SHA-256 of its bytes and
its text. Where the store keeps blobs (:func:`~plait_durable.has_blobs`), the
checkpointer stores the text once as one content-addressed blob of the run, the blob
space its values use, and the metadata keeps a reference to it: the same document is
stored once however many checkpoints name it, and a prune keeps a blob that a kept
checkpoint's metadata names (the sweep of :mod:`plait_durable._blobs`). A store without
blobs keeps the text inline.

:func:`stored_document` reads it back and checks the text against the recorded hash.
What a checkpoint says is untrusted unless the store is sealed: a caller decides what may
run (``plait-versions``' policy ``pin``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs

from ._blobs import BlobWriter, _dumps, _ref_of, blob_hash, has_blobs, load_blob, unpack_blob
from ._errors import CorruptCheckpointError

if TYPE_CHECKING:
    from .checkpoint import BlobStore, Checkpoint, CheckpointStore

__all__ = [
    "DOCUMENT_KEY",
    "StoredDocument",
    "document_hash",
    "document_metadata",
    "stored_document",
]

#: The checkpoint metadata key of a run's pinned document.
DOCUMENT_KEY = "document"


@attrs.frozen
class StoredDocument:
    """A run's pinned document as its checkpoint records it.

    :param name: the document's file name (``orders.yaml``), no folder.
    :param format: the loader that read it (``steps``, ``dag``, ``flow`` …), or ``None``
        (its suffix decides).
    :param sha256: the SHA-256 (hex) of its bytes (UTF-8 text), checked against them.
    :param text: the document.
    """

    name: str
    format: str | None
    sha256: str
    text: str

    @property
    def short(self) -> str:
        """The first 12 characters of :attr:`sha256`."""
        return self.sha256[:12]


def document_hash(text: str) -> str:
    """The SHA-256 (hex) of ``text``'s UTF-8 bytes: a document's hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_metadata(name: str, text: str, format: str | None = None) -> dict[str, Any]:
    """What a run's ``checkpoint_metadata[DOCUMENT_KEY]`` holds of document ``text``
    (file name ``name``, read by loader ``format``): the checkpointer turns the text into
    a blob reference where the store keeps blobs."""
    record: dict[str, Any] = {"name": name, "sha256": document_hash(text), "text": text}
    if format is not None:
        record["format"] = format
    return record


def externalize_document(metadata: dict[str, Any], writer: BlobWriter) -> None:
    """Replace the text of ``metadata``'s pinned document (if any) by a reference to one
    blob ``writer`` hands to the store (once per run: a blob it holds is not written
    again)."""
    record = metadata.get(DOCUMENT_KEY)
    if not isinstance(record, Mapping) or not isinstance(record.get("text"), str):
        return
    data = _dumps(record["text"])
    if data is None:  # pragma: no cover - a str always dumps
        return
    metadata[DOCUMENT_KEY] = {**record, "text": {"__plait__": "blob", "h": writer._put_data(data)}}


async def stored_document(store: CheckpointStore, checkpoint: Checkpoint) -> StoredDocument | None:
    """The pinned document ``checkpoint``'s metadata records, its blob read from
    ``checkpoint``'s run, or ``None`` when it records none.

    :raises CorruptCheckpointError: the record is malformed, its blob is missing or does
        not match its hash, or the text does not match the recorded SHA-256.
    """
    record = checkpoint.metadata.get(DOCUMENT_KEY)
    if record is None:
        return None
    where = (
        f"the pinned document of checkpoint {checkpoint.checkpoint_id!r} "
        f"(run {checkpoint.run_id!r})"
    )
    if not isinstance(record, Mapping):
        raise CorruptCheckpointError(f"{where} is not a record")
    name, sha256, format = record.get("name"), record.get("sha256"), record.get("format")
    if not isinstance(name, str) or not isinstance(sha256, str) or len(sha256) != 64:
        raise CorruptCheckpointError(f"{where} names no document or hash")
    if format is not None and not isinstance(format, str):
        raise CorruptCheckpointError(f"{where} has a format that is not a name")
    text = record.get("text")
    digest = _ref_of(text)
    if digest is not None:
        if not has_blobs(store):
            raise CorruptCheckpointError(f"{where} is a blob, and the store keeps none")
        got = await cast("BlobStore", store).get_blobs(checkpoint.run_id, [digest])
        data = got.get(digest)
        if data is None:
            raise CorruptCheckpointError(f"{where}: its blob {digest} is missing")
        try:
            plain = unpack_blob(bytes(data))
        except ValueError as exc:
            raise CorruptCheckpointError(f"{where}: its blob {digest} {exc}") from exc
        if blob_hash(plain) != digest:
            raise CorruptCheckpointError(f"{where}: its blob {digest} does not match its hash")
        text = load_blob(plain)
    if not isinstance(text, str):
        raise CorruptCheckpointError(f"{where} holds no text")
    if document_hash(text) != sha256:
        raise CorruptCheckpointError(f"{where} does not match its recorded SHA-256 {sha256}")
    return StoredDocument(name, format, sha256, text)
