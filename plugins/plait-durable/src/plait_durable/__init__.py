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
both also a name of this package. Run inspectors (``plait-ui``, ``plait-cli``) use
the read side below (the run index, checkpoint views, diffs, forks, the event journal).

This is the user surface. Checkpoint stores (``plait-stores``, ``plait-redis``,
``plait-postgres``) are written against the store kit, :mod:`plait_durable.kit`: its
base implements the protocol's glue over a store's primitives and carries the rules
every store applies (leases, prune, the wording of errors).

The errors durable runs raise are here too (:class:`CheckpointNotFoundError`,
:class:`RunLeaseError`, :class:`CorruptCheckpointError` …), each a
:class:`plait.CheckpointError`, the root the kernel keeps.

Names are imported on first use: loading plugins imports only this module.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._blobs import (
        BlobWriter as BlobWriter,
        blob_hash as blob_hash,
        blob_refs as blob_refs,
        externalize_state as externalize_state,
        has_blobs as has_blobs,
        load_blob as load_blob,
        resolve_state as resolve_state,
        unpack_blob as unpack_blob,
        unreferenced as unreferenced,
    )
    from ._calljournal import (
        RunJournalWriter as RunJournalWriter,
        run_journal as run_journal,
    )
    from ._document import (
        DOCUMENT_KEY as DOCUMENT_KEY,
        document_metadata as document_metadata,
        stored_document as stored_document,
    )
    from ._durable import (
        Checkpoints as Checkpoints,
        opened_store as opened_store,
    )
    from ._errors import (
        CheckpointAuthError as CheckpointAuthError,
        CheckpointDecodeError as CheckpointDecodeError,
        CheckpointEncodeError as CheckpointEncodeError,
        CheckpointNotFoundError as CheckpointNotFoundError,
        CorruptCheckpointError as CorruptCheckpointError,
        ResponseTypeError as ResponseTypeError,
        RunLeaseError as RunLeaseError,
        StoreUnavailableError as StoreUnavailableError,
        TopologyMismatchError as TopologyMismatchError,
        WorkflowChangedError as WorkflowChangedError,
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
    from ._journalevents import (
        JOURNAL_KINDS as JOURNAL_KINDS,
        JournalEvent as JournalEvent,
    )
    from ._options import DurableOptions as DurableOptions
    from ._resume import recorded_fingerprint as recorded_fingerprint
    from ._runindex import (
        MAX_JOURNAL_PAGE as MAX_JOURNAL_PAGE,
        EventJournal as EventJournal,
        RunSummary as RunSummary,
        read_journal as read_journal,
    )
    from ._runpages import (
        DEFAULT_PAGE as DEFAULT_PAGE,
        RunIndex as RunIndex,
        RunPage as RunPage,
        RunQuery as RunQuery,
        list_runs as list_runs,
    )
    from ._runview import (
        EDITABLE as EDITABLE,
        Change as Change,
        CheckpointView as CheckpointView,
        checkpoint_view as checkpoint_view,
        diff_views as diff_views,
        fork_run as fork_run,
    )
    from ._stores import CORRUPT as CORRUPT, parse_age as parse_age
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
    "run", "opened", "load", "restore", "snapshot", "pending_requests", "fingerprint"
)  # fmt: skip


#: The one durability, made on first use (the kernel keeps what the hook gives).
_DURABILITY = lazy("plait_durable._durable:Checkpoints", provides=_PROVIDES)


@plait.hookimpl
def plait_durability() -> object:
    """Give the durability (:class:`Checkpoints`)."""
    return _DURABILITY


@plait.hookimpl
def plait_register_run_options(register: Register) -> None:
    """Declare the options of durable runs (:class:`DurableOptions`): ``checkpoint`` and
    those it goes with."""
    from ._options import DurableOptions

    register("durable", DurableOptions)


@plait.hookimpl
def plait_register_type_hooks(register: Register) -> None:
    """Register Pydantic (v2) models' own ``model_dump``/``model_validate`` as their
    checkpoint encoding (:mod:`plait_durable._pydantic`), when pydantic is installed.
    Registered lazily, requiring pydantic: they apply once something imported pydantic (a
    model can exist only then), so a run whose messages are not models never imports it."""
    if importlib.util.find_spec("pydantic") is not None:
        hooks = lazy(
            "plait_durable._pydantic:HOOKS",
            provides=("type", "structure", "unstructure"),
            requires="pydantic",  # applies once pydantic is imported: a model exists
        )
        register("durable.pydantic", hooks)


# each name is imported on first use: loading plugins imports only this module
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
