"""Durable runs for Plait: checkpoints written at each superstep's barrier, runs resumed
from them (in this process or another, days later), content-addressed values, workflow
fingerprints, and the read side a run inspector needs (a run index, checkpoint views,
diffs, forks, the event journal).

The kernel runs supersteps and defines the seams (:class:`plait.spi.Durability`, the
runner's commit seam :class:`plait.spi.RunCommit`); installing ``plait-durable`` registers
the durability that ``Workflow.run(checkpoint=...)``, ``Workflow.resume``,
``Workflow.pending_requests`` and ``Workflow.fingerprint`` call
(``plait_durability``). What a checkpoint is comes with it: the records and the
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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import lazy, lazy_exports

if TYPE_CHECKING:
    from ._blobs import (
        BlobWriter as BlobWriter,
        blob_hash as blob_hash,
        blob_refs as blob_refs,
        child_refs as child_refs,
        externalize_state as externalize_state,
        has_blobs as has_blobs,
        load_blob as load_blob,
        max_blob as max_blob,
        max_expansion as max_expansion,
        resolve_state as resolve_state,
        unpack_blob as unpack_blob,
        unreferenced as unreferenced,
        unreferenced_by as unreferenced_by,
    )
    from ._durable import (
        Checkpointer as Checkpointer,
        Checkpoints as Checkpoints,
        failure_record as failure_record,
        resolve_store as resolve_store,
    )
    from ._fingerprint import (
        fingerprint_changes as fingerprint_changes,
        workflow_fingerprint as workflow_fingerprint,
    )
    from ._format import (
        decode_checkpoint as decode_checkpoint,
        dump_json as dump_json,
        encode_checkpoint as encode_checkpoint,
        load_json as load_json,
    )
    from ._journal import RunJournal as RunJournal
    from ._leases import (
        granted as granted,
        held_error as held_error,
        is_free as is_free,
        lost_error as lost_error,
        released as released,
        take_lease as take_lease,
    )
    from ._runindex import (
        DEFAULT_PAGE as DEFAULT_PAGE,
        JOURNAL_KINDS as JOURNAL_KINDS,
        MAX_JOURNAL_PAGE as MAX_JOURNAL_PAGE,
        RUN_COLUMNS as RUN_COLUMNS,
        CheckpointView as CheckpointView,
        EventJournal as EventJournal,
        JournalEvent as JournalEvent,
        RunIndex as RunIndex,
        RunPage as RunPage,
        RunQuery as RunQuery,
        RunSummary as RunSummary,
        check_journal_read as check_journal_read,
        checkpoint_view as checkpoint_view,
        diff_views as diff_views,
        fork_run as fork_run,
        list_runs as list_runs,
        page_of_rows as page_of_rows,
        page_sql as page_sql,
        parse_int_cursor as parse_int_cursor,
        read_journal as read_journal,
    )
    from ._runview import EDITABLE as EDITABLE, Change as Change
    from ._stores import (
        CORRUPT as CORRUPT,
        INFO_FIELDS as INFO_FIELDS,
        CheckpointStoreBase as CheckpointStoreBase,
        InfoRow as InfoRow,
        check_keep_last as check_keep_last,
        check_runs_limit as check_runs_limit,
        corrupt_run_info as corrupt_run_info,
        duplicate_error as duplicate_error,
        error_summary as error_summary,
        info_fields as info_fields,
        info_row as info_row,
        latest_run_info as latest_run_info,
        parse_age as parse_age,
        prune_plan as prune_plan,
        redact_url as redact_url,
        run_info as run_info,
        where as where,
    )
    from .checkpoint import (
        FORMAT_VERSION as FORMAT_VERSION,
        BlobStore as BlobStore,
        Checkpoint as Checkpoint,
        CheckpointInfo as CheckpointInfo,
        CheckpointStore as CheckpointStore,
        CheckpointStoreFactory as CheckpointStoreFactory,
        Lease as Lease,
        LeaseHolder as LeaseHolder,
        RunInfo as RunInfo,
        open_store as open_store,
    )
    from .codec import (
        DecodeError as DecodeError,
        EncodeError as EncodeError,
        declared_types as declared_types,
        decode_value as decode_value,
        encode_value as encode_value,
        type_ref as type_ref,
    )


#: What :class:`plait.spi.Durability` asks of the registered object (checked without
#: importing it: ``_durable`` and the runner's durable path load on first durable call).
_PROVIDES = (
    "run", "open_store", "load", "restore", "snapshot", "pending_requests", "fingerprint"
)  # fmt: skip


#: The one durability, made on first use (the kernel keeps what the hook gives).
_DURABILITY = lazy("plait_durable._durable:Checkpoints", provides=_PROVIDES)


@plait.hookimpl
def plait_durability() -> object:
    """Give the durability (:class:`Checkpoints`)."""
    return _DURABILITY


# each name is imported on first use: loading plugins imports only this module
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
