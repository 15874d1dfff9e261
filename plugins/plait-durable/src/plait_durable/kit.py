"""The store kit: what a checkpoint store's author needs beyond the records.

A store subclasses :class:`CheckpointStoreBase`, which implements the protocol's glue
(saving with journal events, reading the journal, loading, listing runs, pruning's and
leasing's checks) over a few primitives the store writes, and carries the rules and
wording every store applies as methods and class attributes
(``self._duplicate(checkpoint)``, ``self._lost(lease)``, ``self._take_lease(...)``,
``self._unavailable(what)``, ``self._not_found(checkpoint_id)``, ``self._prune_plan(...)``,
``INFO_FIELDS`` …; ``KIND`` names the kind of store in its errors). The records a store
keeps and returns are :mod:`plait_durable`'s: :class:`~plait_durable.Checkpoint`,
:class:`~plait_durable.CheckpointInfo`, :class:`~plait_durable.Lease`,
:class:`~plait_durable.LeaseHolder`, :class:`~plait_durable.RunInfo`, and the run index's
:class:`~plait_durable.RunQuery`, :class:`~plait_durable.RunPage` and
:class:`~plait_durable.RunSummary`: a store imports those eight and this one name (and
:class:`~plait_durable.CorruptCheckpointError` if it checks its own files: ten at most).

Test a store with :class:`plait_testing.stores.CheckpointStoreContract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from ._storekit import CheckpointStoreBase as CheckpointStoreBase


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
