"""The base of every checkpoint store: the glue written once, over a few primitives.

A store keeps bytes its own way (a dict, files, SQLite, Redis, PostgreSQL); what lies
around them is the same in every store and lives here, in :class:`CheckpointStoreBase`:

- the lifecycle: ``url``, ``repr``, ``aclose``, ``async with``, and a refusal once the
  store is closed (:meth:`CheckpointStoreBase._check_open`);
- the protocol's glue: :meth:`~CheckpointStoreBase.save` and
  :meth:`~CheckpointStoreBase.save_with_events` encode the checkpoint and its journal
  events, :meth:`~CheckpointStoreBase.append_events` and
  :meth:`~CheckpointStoreBase.read_events` check and number the journal,
  :meth:`~CheckpointStoreBase.load`, :meth:`~CheckpointStoreBase.latest` and
  :meth:`~CheckpointStoreBase.runs` decode what the store read, naming the checkpoint
  and the store in every error, :meth:`~CheckpointStoreBase.prune` and
  :meth:`~CheckpointStoreBase.release_lease` check their arguments and the process's
  leases;
- the rules and wording a store applies inside its own transaction or lock, as methods
  and class attributes, so a store imports only :mod:`plait_durable.kit`.

What a store writes itself, each in one transaction or under one lock:

==========================  ========================================================
``_write``                  store one encoded checkpoint, its journal lines and blobs
``_append``                 append journal lines (JSON text) to a run's journal
``_events``                 read ``(seq, text)`` journal lines after a sequence number
``_read``                   ``(run id, bytes)`` of one checkpoint, or ``None``
``_newest``                 ``(checkpoint id, bytes)`` of a run's last, or ``None``
``_heads``                  each run's ``(run id, last id, bytes, first created_at)``
``_prune``                  delete all but the newest ``keep_last`` of a run
``_release``                clear a lease's holder if its token is current
==========================  ========================================================

``_write``, ``_append``, ``_events``, ``_prune`` and ``_release`` are abstract: a store
without one cannot be made. ``_read``, ``_newest`` and ``_heads`` are what the default
``load``, ``latest`` and ``_runs`` read through: a store defines each, or overrides its
reader (the file store reads its own way), and a class that does neither is refused
when it is defined (:attr:`CheckpointStoreBase.READERS`). Then the rest of
:class:`~plait_durable.CheckpointStore`: ``list``, ``delete``, ``delete_run``,
``acquire_lease``, ``renew_lease``, plus ``get_blobs`` and ``blob_hashes``
(:class:`~plait_durable.BlobStore`) and ``list_runs`` (:class:`~plait_durable.RunIndex`).
Test a store with :class:`plait_testing.stores.CheckpointStoreContract`.

How a store starts::

    from plait_durable.kit import CheckpointStoreBase

    class DictStore(CheckpointStoreBase):
        def __init__(self) -> None:
            self.url = "dict://"
            self._data: dict[str, tuple[str, bytes]] = {}

        async def _write(self, checkpoint, data, events, lease, blobs):
            stored = self._data.setdefault(checkpoint.checkpoint_id, (checkpoint.run_id, data))
            if stored[1] != data:
                raise self._duplicate(checkpoint)
            ...

        async def _read(self, checkpoint_id):
            return self._data.get(checkpoint_id)
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from plait import CheckpointError
from typing_extensions import Self

from . import _blobs, _format, _leases, _runindex, _stores
from ._errors import CheckpointNotFoundError, StoreUnavailableError
from ._runindex import MAX_JOURNAL_PAGE
from .checkpoint import Checkpoint, Lease, LeaseHolder, RunInfo

if TYPE_CHECKING:
    from ._journalevents import JournalEvent
    from ._runpages import RunPage, RunQuery

__all__ = ["CheckpointStoreBase"]


class CheckpointStoreBase(abc.ABC):
    """The base of a checkpoint store: its lifecycle, the protocol's glue over the
    store's primitives (see the module docstring), and the rules every store applies.

    A subclass sets ``url`` (through :meth:`redact_url` if it can hold a password) and
    calls ``self._check_open()`` before any work of its own; the glue does so for the
    methods it implements. ``async with store:`` closes the store on the way out. A
    subclass that holds connections or files overrides :meth:`aclose`, calling ``await
    super().aclose()`` first, so a store is closed even if releasing them fails.
    """

    #: The store's URL, without a password: how messages name the store.
    url: str
    #: What kind of store this is, as its errors say it ("SQLite", "Redis" …): they read
    #: "SQLite checkpoint store URL …" (empty: "checkpoint store URL …").
    KIND: ClassVar[str] = ""
    _closed: bool = False

    #: The listing fields of a checkpoint (:class:`~plait_durable.CheckpointInfo`) in
    #: order: the columns a SQL store selects so that ``CheckpointInfo(*row)`` rebuilds it.
    INFO_FIELDS: ClassVar[tuple[str, ...]] = _stores.INFO_FIELDS
    #: The columns of a SQL store's run index table, in the order of
    #: :meth:`~plait_durable.RunSummary.as_row`.
    RUN_COLUMNS: ClassVar[tuple[str, ...]] = _runindex.RUN_COLUMNS

    # -- the rules, as a store calls them --------------------------------------------

    #: ``redact_url(url)``: ``url`` with its password replaced by ``***``.
    redact_url = staticmethod(_stores.redact_url)
    #: ``_parse_age(text)``: an age such as ``7d`` or ``12h`` in seconds.
    _parse_age = staticmethod(_stores.parse_age)
    #: ``_info_row(checkpoint)``: the listing fields in :attr:`INFO_FIELDS` order.
    _info_row = staticmethod(_stores.info_row)
    #: ``_info_fields(checkpoint)``: the listing fields by name, JSON-ready.
    _info_fields = staticmethod(_stores.info_fields)
    #: ``_prune_plan(infos, keep_last)``: the ids a prune deletes, oldest first.
    _prune_plan = staticmethod(_stores.prune_plan)
    #: ``_child_refs(blob)``: the hashes a stored blob names, to keep beside it.
    _child_refs = staticmethod(_blobs.child_refs)
    #: ``_blob_refs(state)``: the hashes a checkpoint's state names.
    _blob_refs = staticmethod(_blobs.blob_refs)
    #: ``_max_blob()``: the most bytes a store reads for one blob.
    _max_blob = staticmethod(_blobs.max_blob)
    #: ``_unpack_blob(data, limit)``: a stored blob's JSON bytes.
    _unpack_blob = staticmethod(_blobs.unpack_blob)

    # the run index's pages (:mod:`plait_durable._runpages`) are imported when a store is
    # first asked for one: a run that only saves never builds their records

    @staticmethod
    def _page_sql(
        query: RunQuery, *, table: str = "plait_runs", placeholder: str = "?"
    ) -> tuple[str, tuple[Any, ...]]:
        """The one SQL query of a run index page over ``table``, and its parameters
        (:func:`plait_durable._runpages.page_sql`)."""
        from ._runpages import page_sql

        return page_sql(query, table=table, placeholder=placeholder)

    @staticmethod
    def _page_of_rows(query: RunQuery, rows: Sequence[Sequence[Any]]) -> RunPage:
        """The page :meth:`_page_sql`'s rows make."""
        from ._runpages import page_of_rows

        return page_of_rows(query, rows)

    @staticmethod
    def _cursor_position(cursor: str | None) -> int | None:
        """The integer a store's run index cursor holds (``None`` for the first page).

        :raises ValueError: ``cursor`` is not one this index made.
        """
        from ._runpages import parse_int_cursor

        return parse_int_cursor(cursor)

    #: ``_unreferenced(stored, blobs)``: the hashes among ``blobs`` that no checkpoint
    #: of ``stored`` (encoded bytes) reaches: what a sweep deletes.
    _unreferenced = staticmethod(_blobs.unreferenced_by)
    #: ``_unreferenced_states(states, blobs)``: :meth:`_unreferenced` given the states of
    #: the checkpoints that stay rather than their bytes.
    _unreferenced_states = staticmethod(_blobs.unreferenced)
    #: ``_encode(checkpoint)``: the self-checking bytes a store keeps.
    _encode = staticmethod(_format.encode_checkpoint)
    #: ``_decode_body(data, where=...)``: :meth:`_encode`'s bytes decoded and verified, for
    #: a store that checks what they hold itself (prefer :meth:`_decode`).
    _decode_body = staticmethod(_format.decode_checkpoint)
    #: ``_where(run_id, checkpoint_id)``: how errors name one stored checkpoint.
    _where = staticmethod(_stores.where)
    #: ``_latest_run_info(checkpoint, created_at=...)``: a run's listing from its latest
    #: checkpoint, for a store that lists runs itself rather than through :meth:`_heads`.
    _latest_run_info = staticmethod(_stores.latest_run_info)
    #: ``_corrupt_run_info(run_id, error, created_at=...)``: the listing of a run whose
    #: latest checkpoint does not decode.
    _corrupt_run_info = staticmethod(_stores.corrupt_run_info)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url!r}>"

    def _check_open(self) -> None:
        """Raise :class:`~plait_durable.StoreUnavailableError` if the store is closed."""
        if self._closed:
            raise self._unavailable("is closed")

    def _unavailable(self, what: str) -> StoreUnavailableError:
        """The error for a store that cannot be used now (unreachable, timed out, locked,
        damaged, closed): "KIND checkpoint store URL ``what``". Raise it ``from`` the
        error that caused it."""
        return StoreUnavailableError(f"{self.KIND} checkpoint store {self.url} {what}".lstrip())

    def _not_found(self, checkpoint_id: str) -> CheckpointNotFoundError:
        """The error for loading checkpoint ``checkpoint_id``, which this store does not
        keep."""
        return CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in {self.url}")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store; later calls raise :class:`~plait_durable.StoreUnavailableError`."""
        self._closed = True

    # -- wording and checks a store's transaction needs -------------------------------

    def _decode(self, data: bytes, run_id: str, checkpoint_id: str) -> Checkpoint:
        """Decode stored bytes, checking they are checkpoint ``checkpoint_id`` of
        ``run_id``; an error names both and this store."""
        return self._decode_named(data, run_id, checkpoint_id, self.url)

    @staticmethod
    def _decode_named(
        data: bytes, run_id: str, checkpoint_id: str, url: str | None = None
    ) -> Checkpoint:
        """:meth:`_decode` where no store is at hand (a migration's back-fill): errors
        name the store ``url`` if given."""
        named = _stores.where(run_id, checkpoint_id)
        return _format.decode_checkpoint(
            data,
            where=named if url is None else f"{named} in {url}",
            expect_run=run_id,
            expect_id=checkpoint_id,
        )

    def _duplicate(self, checkpoint: Checkpoint) -> CheckpointError:
        """The error for saving an id this store keeps with other contents (saving the
        same bytes again is not an error: compare them and do nothing)."""
        return _stores.duplicate_error(checkpoint, self.url)

    def _lost(self, lease: Lease, holder: LeaseHolder | None = None) -> CheckpointError:
        """The error for writing with ``lease`` once another worker took it over
        (``holder``, if known)."""
        return _leases.lost_error(lease, self.url, holder)

    def _take_lease(
        self,
        run_id: str,
        current: tuple[int, LeaseHolder | None, float] | None,
        holder: LeaseHolder | None,
        ttl: float,
    ) -> Lease:
        """Inside the store's transaction or lock: the lease to write for ``run_id``
        given the stored ``(token, holder, expires_at)`` (``None`` if it never had
        one): the next token, ``holder`` (default: this process), ``ttl`` seconds.

        :raises RunLeaseError: a live worker holds the stored lease.
        :raises ValueError: ``ttl`` is not a positive number.
        """
        return _leases.take_lease(run_id, current, holder, ttl, self.url)

    # -- the protocol, over the primitives ----------------------------------------------

    async def save(
        self,
        checkpoint: Checkpoint,
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Store ``checkpoint`` and its new ``blobs`` in one transaction (saving the same
        checkpoint again does nothing); with ``lease``, only while it is the run's
        current lease."""
        self._check_open()
        await self._write(checkpoint, _format.encode_checkpoint(checkpoint), (), lease, blobs)

    async def save_with_events(
        self,
        checkpoint: Checkpoint,
        events: Sequence[JournalEvent],
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """:meth:`save` (with its ``blobs``) and :meth:`append_events` in one
        transaction (:class:`plait_durable.EventJournal`): nobody sees one without the
        other."""
        self._check_open()
        data = _format.encode_checkpoint(checkpoint)
        await self._write(checkpoint, data, [e.to_json() for e in events], lease, blobs)

    async def append_events(
        self, run_id: str, events: Sequence[JournalEvent], *, lease: Lease | None = None
    ) -> None:
        """Append ``events`` to the journal of ``run_id`` in one transaction; with
        ``lease``, only while it is the run's current lease."""
        self._check_open()
        stored = [event.to_json() for event in events]
        if stored:
            await self._append(run_id, stored, lease)

    async def read_events(
        self, run_id: str, *, after: int = 0, limit: int = MAX_JOURNAL_PAGE
    ) -> Sequence[JournalEvent]:
        """The journal events of ``run_id`` after ``after``, oldest first, at most ``limit``."""
        from ._journalevents import JournalEvent  # made when a journal is first read

        _runindex.check_journal_read(after, limit)
        self._check_open()
        rows = await self._events(run_id, after, limit)
        named = f"run {run_id!r} in {self.url}"
        return [JournalEvent.from_json(text, seq=seq, where=named) for seq, text in rows]

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Read, verify and decode the checkpoint ``checkpoint_id``."""
        self._check_open()
        found = await self._read(checkpoint_id)
        if found is None:
            raise self._not_found(checkpoint_id)
        return self._decode(found[1], found[0], checkpoint_id)

    async def latest(self, run_id: str) -> Checkpoint | None:
        """The checkpoint of ``run_id`` saved last, or ``None``."""
        self._check_open()
        found = await self._newest(run_id)
        return None if found is None else self._decode(found[1], run_id, found[0])

    async def runs(self, *, limit: int | None = None) -> Sequence[RunInfo]:
        """Every run, newest first (by its latest checkpoint), at most ``limit``; a run
        whose latest checkpoint does not decode is listed with status ``corrupt``."""
        _stores.check_runs_limit(limit)
        self._check_open()
        return await self._runs(limit)

    async def _runs(self, limit: int | None) -> Sequence[RunInfo]:
        """:meth:`runs` from :meth:`_heads`, decoding each listed run's latest
        checkpoint (a store that lists runs otherwise overrides this, not :meth:`runs`)."""
        return [self._run_info(*head) for head in await self._heads(limit)]

    def _run_info(
        self, run_id: str, checkpoint_id: str, data: bytes, created_at: float | None
    ) -> RunInfo:
        """The listing of run ``run_id`` from the stored bytes of its latest checkpoint
        (``created_at``: when its first was taken): status ``corrupt`` if they do not
        decode, so one damaged run never fails the whole listing."""
        return _stores.run_info(
            data, run_id=run_id, checkpoint_id=checkpoint_id, url=self.url, created_at=created_at
        )

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` (and what they need);
        return how many went."""
        _stores.check_keep_last(keep_last)
        self._check_open()
        return await self._prune(run_id, keep_last)

    async def release_lease(self, lease: Lease) -> None:
        """Give ``lease`` up; its token stays used."""
        _leases.released(lease)
        self._check_open()
        await self._release(lease)

    # -- the primitives a store writes --------------------------------------------------

    @abc.abstractmethod
    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        events: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """In one transaction: store ``data`` (``checkpoint`` encoded) unless the id is
        stored (the same bytes: do nothing; others: raise :meth:`_duplicate`), its new
        ``blobs`` and its journal ``events`` (JSON text, numbered on from the run's
        last), and index the run; with ``lease``, only while its token is the run's
        (else raise :meth:`_lost`)."""

    @abc.abstractmethod
    async def _append(self, run_id: str, events: Sequence[str], lease: Lease | None) -> None:
        """In one transaction: append ``events`` (JSON text, at least one) to the
        journal of ``run_id``, numbered on from its last; with ``lease`` as
        :meth:`_write`."""

    @abc.abstractmethod
    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The ``(seq, text)`` journal lines of ``run_id`` whose seq is above ``after``,
        oldest first, at most ``limit``."""

    @abc.abstractmethod
    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Delete the checkpoints :meth:`_prune_plan` names and the blobs nothing
        left reaches; return how many checkpoints went."""

    @abc.abstractmethod
    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if its token is still the run's."""

    # -- the primitives the default readers use -----------------------------------------

    #: each read primitive, and the reader built on it: a store defines the primitive,
    #: or overrides the reader (a store that reads its own way, as the file store does);
    #: checked when the store's class is defined, not when a read first needs it
    READERS: ClassVar[Mapping[str, str]] = {"_read": "load", "_newest": "latest", "_heads": "_runs"}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for primitive, reader in CheckpointStoreBase.READERS.items():
            overridden = getattr(cls, reader) is not getattr(CheckpointStoreBase, reader)
            if not overridden and not hasattr(cls, primitive):
                raise TypeError(
                    f"checkpoint store {cls.__qualname__} defines neither {primitive} nor "
                    f"{reader}: a store reads through the primitive, or overrides the reader"
                )

    if TYPE_CHECKING:  # defined by each store that does not override their readers

        async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
            """``(run id, stored bytes)`` of ``checkpoint_id``, or ``None``."""
            ...

        async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
            """``(checkpoint id, stored bytes)`` of the checkpoint of ``run_id`` saved
            last, or ``None``."""
            ...

        async def _heads(self, limit: int | None) -> Sequence[tuple[str, str, bytes, float | None]]:
            """Each run's ``(run id, last checkpoint id, its bytes, when its first
            checkpoint was taken)``, newest run first, at most ``limit``."""
            ...
