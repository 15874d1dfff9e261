"""Pinned documents: the workflow document a run was started from, kept with the run.

A workflow loaded from a document (YAML steps, a JSON DAG, a flow file; from a path or
from text) carries the text its loader parsed (:func:`plait_documents.source_document`,
a :class:`~plait_documents.SourceDocument`). Every durable run of such a workflow,
whoever starts or resumes it (``workflow.run(..., checkpoint=...)`` in Python,
``plait run``/``resume``, a worker, ``plait ui``), records it in its checkpoints' metadata
under :data:`DOCUMENT_KEY` (:func:`document_metadata`): its name (the file name, no
folder), format and SHA-256, and its text. Where the store keeps blobs
(:func:`~plait_durable.has_blobs`), the text is one content-addressed blob of the run,
the blob space its values use, written with the first checkpoint that names it and never
again: every later checkpoint, and every resume of the run on the same version, names
the same blob (the checkpointer of :mod:`plait_durable._checkpointer`), so a run holds one
blob per version of its document. A prune keeps a blob that a kept checkpoint's metadata
names (the sweep of :mod:`plait_durable._blobs`). A store without blobs keeps the text inline.

:func:`stored_document` reads it back and checks the text against the recorded hash.
What a checkpoint says is untrusted unless the store is sealed: a caller decides what may
run (``plait-versions``' policy ``pin``). A run's ``checkpoint_metadata`` cannot set the
key: the durability alone writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from plait_documents import SourceDocument

from ._blobs import BlobWriter, _dumps, _ref_of, blob_hash, has_blobs, load_blob, unpack_blob
from ._errors import CorruptCheckpointError

if TYPE_CHECKING:
    from .checkpoint import BlobStore, Checkpoint, CheckpointStore

__all__ = ["DOCUMENT_KEY", "document_blob", "document_metadata", "stored_document"]

#: The checkpoint metadata key of a run's pinned document.
DOCUMENT_KEY = "document"


def document_metadata(document: SourceDocument, writer: BlobWriter | None = None) -> dict[str, Any]:
    """What a checkpoint's ``metadata[DOCUMENT_KEY]`` holds of ``document``: its name,
    format, SHA-256 and text; with ``writer`` (a store that keeps blobs), the text as a
    reference to one blob ``writer`` hands to the store unless it knows the store holds
    it."""
    record: dict[str, Any] = {"name": document.name, "sha256": document.sha256}
    if document.format is not None:
        record["format"] = document.format
    data = _dumps(document.text) if writer is not None else None
    if writer is None or data is None:  # (a lone surrogate orjson will not write: inline)
        record["text"] = document.text
    else:
        record["text"] = {"__plait__": "blob", "h": writer._put_data(data)}
    return record


def document_blob(metadata: Mapping[str, Any]) -> str | None:
    """The hash of the blob ``metadata`` (a checkpoint's) names for its pinned document,
    or ``None``."""
    record = metadata.get(DOCUMENT_KEY)
    return _ref_of(record.get("text")) if isinstance(record, Mapping) else None


async def stored_document(store: CheckpointStore, checkpoint: Checkpoint) -> SourceDocument | None:
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
    document = SourceDocument(name, format, text)
    if document.sha256 != sha256:
        raise CorruptCheckpointError(f"{where} does not match its recorded SHA-256 {sha256}")
    return document
