"""The store kit: every name a checkpoint store's author imports, and no more.

A store subclasses :class:`CheckpointStoreBase`, which implements the protocol's glue
(saving with journal events, reading the journal, loading, listing runs, pruning's and
leasing's checks) over a few primitives the store writes, and carries the rules and
wording every store applies (``self._duplicate(checkpoint)``, ``self._lost(lease)``,
``self._take_lease(...)``, ``self._prune_plan(...)`` …). The records a store keeps and
returns are the others: :class:`Checkpoint`, :class:`CheckpointInfo`, :class:`Lease`,
:class:`LeaseHolder`, :class:`RunInfo`, and the run index's :class:`RunQuery`,
:class:`RunPage` and :class:`RunSummary`.

What a user of a store calls (``open_store``, the run index, checkpoint views …) is
:mod:`plait_durable`'s. Test a store with
:class:`plait_testing.stores.CheckpointStoreContract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from ._runindex import RunPage as RunPage, RunQuery as RunQuery, RunSummary as RunSummary
    from ._storekit import CheckpointStoreBase as CheckpointStoreBase
    from .checkpoint import (
        Checkpoint as Checkpoint,
        CheckpointInfo as CheckpointInfo,
        Lease as Lease,
        LeaseHolder as LeaseHolder,
        RunInfo as RunInfo,
    )


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
