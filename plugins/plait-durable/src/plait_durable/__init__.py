"""Durable runs for Plait: checkpoints written at each superstep's barrier, runs resumed
from them (in this process or another, days later), content-addressed values, workflow
fingerprints, and the read side a run inspector needs (a run index, checkpoint views,
diffs, forks, the event journal).

The kernel runs supersteps and defines the seams (:class:`plait.spi.Durability`, the
runner's commit seam :class:`plait.spi.RunCommit`); installing ``plait-durable`` registers
the durability that ``Workflow.run(checkpoint=...)``, ``Workflow.resume``,
``Workflow.pending_requests`` and ``Workflow.fingerprint`` call
(``plait_register_durability``). What a checkpoint is comes with it: the records and the
store protocols (:mod:`plait_durable.checkpoint`: :class:`Checkpoint`,
:class:`CheckpointStore`, :class:`BlobStore`, :func:`open_store` …) and the value codec
(:mod:`plait_durable.codec`: :func:`encode_value`, :func:`decode_value` …), every name of
both also a name of this package. Checkpoint stores (``plait-stores``,
``plait-redis``, ``plait-postgres``) and run inspectors (``plait-ui``, ``plait-cli``) use the
helpers below: store authors the bytes a checkpoint is stored as (:func:`encode_checkpoint`,
:func:`decode_checkpoint`), the lease rules (:func:`take_lease` …), prune's rule
(:func:`prune_plan`) and the lifecycle, naming, listing rows and wording every store shares
(:class:`CheckpointStoreBase`, :func:`redact_url`, :func:`run_info` …).

Names are imported on first use: loading plugins imports only this module.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._blobs import (
        BlobWriter,
        blob_hash,
        blob_refs,
        child_refs,
        externalize_state,
        has_blobs,
        load_blob,
        resolve_state,
        unpack_blob,
        unreferenced,
        unreferenced_by,
    )
    from ._durable import SNAPSHOT_EVERY, Checkpointer, Checkpoints, failure_record, resolve_store
    from ._fingerprint import fingerprint_changes, workflow_fingerprint
    from ._format import decode_checkpoint, dump_json, encode_checkpoint, load_json
    from ._journal import RunJournal
    from ._leases import granted, held_error, is_free, lost_error, released, take_lease
    from ._runindex import (
        DEFAULT_PAGE,
        JOURNAL_KINDS,
        MAX_JOURNAL_PAGE,
        RUN_COLUMNS,
        CheckpointView,
        EventJournal,
        JournalEvent,
        RunIndex,
        RunPage,
        RunQuery,
        RunSummary,
        check_journal_read,
        checkpoint_view,
        diff_views,
        fork_run,
        list_runs,
        page_of_rows,
        page_sql,
        parse_int_cursor,
        read_journal,
    )
    from ._runview import EDITABLE, Change
    from ._stores import (
        CORRUPT,
        INFO_FIELDS,
        CheckpointStoreBase,
        InfoRow,
        check_keep_last,
        check_runs_limit,
        corrupt_run_info,
        duplicate_error,
        error_summary,
        info_fields,
        info_row,
        latest_run_info,
        parse_age,
        prune_plan,
        redact_url,
        run_info,
        where,
    )
    from .checkpoint import (
        FORMAT_VERSION,
        BlobStore,
        Checkpoint,
        CheckpointInfo,
        CheckpointStore,
        CheckpointStoreFactory,
        Lease,
        LeaseHolder,
        RunInfo,
        open_store,
    )
    from .codec import (
        DecodeError,
        EncodeError,
        declared_types,
        decode_value,
        encode_value,
        type_ref,
    )

#: Where each public name lives (imported on first use).
_HOME = {
    "BlobWriter": "_blobs",
    "blob_hash": "_blobs",
    "blob_refs": "_blobs",
    "child_refs": "_blobs",
    "externalize_state": "_blobs",
    "has_blobs": "_blobs",
    "load_blob": "_blobs",
    "resolve_state": "_blobs",
    "unpack_blob": "_blobs",
    "unreferenced": "_blobs",
    "unreferenced_by": "_blobs",
    "SNAPSHOT_EVERY": "_durable",
    "Checkpointer": "_durable",
    "Checkpoints": "_durable",
    "failure_record": "_durable",
    "resolve_store": "_durable",
    "fingerprint_changes": "_fingerprint",
    "workflow_fingerprint": "_fingerprint",
    "decode_checkpoint": "_format",
    "dump_json": "_format",
    "encode_checkpoint": "_format",
    "load_json": "_format",
    "RunJournal": "_journal",
    "granted": "_leases",
    "held_error": "_leases",
    "is_free": "_leases",
    "lost_error": "_leases",
    "released": "_leases",
    "take_lease": "_leases",
    "CheckpointView": "_runindex",
    "Change": "_runview",
    "DEFAULT_PAGE": "_runindex",
    "EDITABLE": "_runview",
    "EventJournal": "_runindex",
    "JOURNAL_KINDS": "_runindex",
    "JournalEvent": "_runindex",
    "MAX_JOURNAL_PAGE": "_runindex",
    "RUN_COLUMNS": "_runindex",
    "RunIndex": "_runindex",
    "RunPage": "_runindex",
    "RunQuery": "_runindex",
    "RunSummary": "_runindex",
    "check_journal_read": "_runindex",
    "checkpoint_view": "_runindex",
    "diff_views": "_runindex",
    "fork_run": "_runindex",
    "list_runs": "_runindex",
    "page_of_rows": "_runindex",
    "page_sql": "_runindex",
    "parse_int_cursor": "_runindex",
    "read_journal": "_runindex",
    "CORRUPT": "_stores",
    "INFO_FIELDS": "_stores",
    "CheckpointStoreBase": "_stores",
    "InfoRow": "_stores",
    "check_keep_last": "_stores",
    "check_runs_limit": "_stores",
    "corrupt_run_info": "_stores",
    "duplicate_error": "_stores",
    "error_summary": "_stores",
    "info_fields": "_stores",
    "info_row": "_stores",
    "latest_run_info": "_stores",
    "parse_age": "_stores",
    "prune_plan": "_stores",
    "redact_url": "_stores",
    "run_info": "_stores",
    "where": "_stores",
    "FORMAT_VERSION": "checkpoint",
    "BlobStore": "checkpoint",
    "Checkpoint": "checkpoint",
    "CheckpointInfo": "checkpoint",
    "CheckpointStore": "checkpoint",
    "CheckpointStoreFactory": "checkpoint",
    "Lease": "checkpoint",
    "LeaseHolder": "checkpoint",
    "RunInfo": "checkpoint",
    "open_store": "checkpoint",
    "DecodeError": "codec",
    "EncodeError": "codec",
    "declared_types": "codec",
    "decode_value": "codec",
    "encode_value": "codec",
    "type_ref": "codec",
}

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
    "DecodeError",
    "EncodeError",
    "declared_types",
    "decode_value",
    "encode_value",
    "type_ref",
    "CORRUPT",
    "INFO_FIELDS",
    "CheckpointStoreBase",
    "InfoRow",
    "check_keep_last",
    "check_runs_limit",
    "corrupt_run_info",
    "decode_checkpoint",
    "dump_json",
    "duplicate_error",
    "encode_checkpoint",
    "error_summary",
    "granted",
    "held_error",
    "info_fields",
    "info_row",
    "is_free",
    "latest_run_info",
    "load_json",
    "lost_error",
    "parse_age",
    "prune_plan",
    "redact_url",
    "released",
    "run_info",
    "take_lease",
    "where",
    "BlobWriter",
    "Change",
    "CheckpointView",
    "Checkpointer",
    "Checkpoints",
    "DEFAULT_PAGE",
    "EDITABLE",
    "EventJournal",
    "JOURNAL_KINDS",
    "JournalEvent",
    "MAX_JOURNAL_PAGE",
    "RUN_COLUMNS",
    "RunIndex",
    "RunJournal",
    "RunPage",
    "RunQuery",
    "RunSummary",
    "SNAPSHOT_EVERY",
    "blob_hash",
    "blob_refs",
    "check_journal_read",
    "checkpoint_view",
    "child_refs",
    "diff_views",
    "externalize_state",
    "failure_record",
    "fingerprint_changes",
    "fork_run",
    "has_blobs",
    "load_blob",
    "list_runs",
    "page_of_rows",
    "page_sql",
    "parse_int_cursor",
    "plait_register_durability",
    "read_journal",
    "resolve_state",
    "unpack_blob",
    "resolve_store",
    "unreferenced",
    "unreferenced_by",
    "workflow_fingerprint",
]

__getattr__ = lazy_exports(__name__, _HOME)

#: What :class:`plait.spi.Durability` asks of the registered object (checked without
#: importing it: ``_durable`` and the runner's durable path load on first durable call).
_PROVIDES = (
    "run", "open_store", "load", "restore", "snapshot", "pending_requests", "fingerprint"
)  # fmt: skip


@plait.hookimpl
def plait_register_durability(register: Register) -> None:
    """Register the durability ``"checkpoints"`` (:class:`Checkpoints`)."""
    register("checkpoints", lazy("plait_durable._durable:Checkpoints", provides=_PROVIDES))


def __dir__() -> list[str]:
    return list(__all__)
