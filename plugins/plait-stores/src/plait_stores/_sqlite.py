"""``sqlite:///PATH``: the embedded default for durable runs.

One connection per store, guarded by a thread lock, used only from worker threads
(:func:`anyio.to_thread.run_sync`), so the event loop never waits on the disk. The
database is in WAL mode, so readers do not block the writer and several processes can
share one file (writers queue on SQLite's lock for up to ``timeout`` seconds).

Durability: ``synchronous=FULL`` (the default here) makes SQLite fsync the WAL at every
commit, so once ``save`` returns the checkpoint survives a power cut as well as a
crash: that is the "durable before the next superstep starts" guarantee. WAL with
``synchronous=NORMAL`` only fsyncs at WAL checkpoints; a commit survives the process
being killed but the last commits can roll back if the machine loses power. Choose
``?synchronous=normal`` when only process crashes matter and speed does.

Time bound: every call waits at most ``timeout`` seconds (default 30, ``?timeout=`` in the
URL) for another connection's lock, then fails with
:class:`~plait_durable.StoreUnavailableError`; the disk itself is not bounded.

The event journal (:class:`plait_durable.EventJournal`) is ``plait_journal`` (one row per
event, ``seq`` ordering it), created the first time a journal is written or read; a
checkpoint and the events saved with it go in one transaction.

One writer per run: ``plait_leases`` holds each run's lease (fencing token, holder,
expiry); a save with a lease inserts only while that token is current, in the same
statement.

The schema is versioned in ``plait_schema_version``; migrations run in order inside one
``BEGIN IMMEDIATE`` transaction, which holds SQLite's write lock, so two processes
opening a new file at once cannot both create the tables.

Space: a new database is created with ``auto_vacuum=INCREMENTAL``, and ``prune``,
``delete`` and ``delete_run`` hand the pages they freed back to the file system
(``PRAGMA incremental_vacuum``, then a WAL checkpoint that truncates the log), so the
file shrinks when runs go. A database created before that (``auto_vacuum=NONE``) is
switched once, by a ``VACUUM`` after the first prune that frees pages, if it is small
enough to rewrite within half the store's ``timeout`` (:data:`VACUUM_RATE`): a writer in
another process waits for the vacuum as for any lock, at most ``timeout``. A larger one
is left as it is (``sqlite3 FILE 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM'`` converts it
while no run writes).
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from plait import CheckpointError
from plait_durable import Checkpoint, Lease, LeaseHolder, RunSummary
from plait_durable.kit import CheckpointStoreBase

from ._common import blob_closure, split_query

if TYPE_CHECKING:  # the listing records are imported when a listing is first asked for
    from plait_durable import CheckpointInfo, RunPage, RunQuery

__all__ = ["SCHEMA_VERSION", "SqliteCheckpointStore", "list_runs_sql"]

_T = TypeVar("_T")

#: Migrations in order; migration ``n`` (1-based) brings the schema to version ``n``.
#: A step is a SQL statement, or a function of the connection (for a back-fill that
#: decodes stored checkpoints).
_MIGRATIONS: tuple[tuple[str | Callable[[sqlite3.Connection], None], ...], ...] = (
    (
        # seq is AUTOINCREMENT so it never goes back, even after the newest row is
        # deleted: insertion order within a run survives prunes and resumes.
        """CREATE TABLE plait_checkpoints (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            checkpoint_id TEXT NOT NULL UNIQUE,
            run_id TEXT NOT NULL,
            superstep INTEGER NOT NULL,
            parent_id TEXT,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            data BLOB NOT NULL
        )""",
        "CREATE INDEX plait_checkpoints_run_seq ON plait_checkpoints (run_id, seq)",
    ),
    (
        # The full checkpoint a delta builds on, which prune keeps while a kept row names
        # it. Rows written before this column get it from their encoded state: the body
        # after the 74-byte header of encode_checkpoint ("PLAITCP1\n" + SHA-256 hex + "\n").
        "ALTER TABLE plait_checkpoints ADD COLUMN base_id TEXT",
        """UPDATE plait_checkpoints
            SET base_id = json_extract(CAST(substr(data, 75) AS TEXT), '$.state.base')
            WHERE json_valid(CAST(substr(data, 75) AS TEXT))
              AND json_type(CAST(substr(data, 75) AS TEXT), '$.state.base') = 'text'""",
    ),
    (
        # One writer per run. Rows stay after release (holder NULL) so tokens never repeat.
        """CREATE TABLE plait_leases (
            run_id TEXT PRIMARY KEY,
            token INTEGER NOT NULL,
            holder TEXT,
            expires_at REAL NOT NULL
        )""",
    ),
    (
        # The run index (plait_durable.RunIndex): one row per run, from its latest
        # checkpoint, written in the save's transaction; list_runs reads one page of it.
        """CREATE TABLE plait_runs (
            run_id TEXT PRIMARY KEY,
            workflow TEXT,
            status TEXT NOT NULL,
            superstep INTEGER NOT NULL,
            pending_requests INTEGER NOT NULL,
            error TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            forked_from TEXT,
            forked_from_checkpoint TEXT,
            last_seq INTEGER NOT NULL
        )""",
        "CREATE INDEX plait_runs_seq ON plait_runs (last_seq)",
        "CREATE INDEX plait_runs_status ON plait_runs (status, last_seq)",
        "CREATE INDEX plait_runs_workflow ON plait_runs (workflow, last_seq)",
        "CREATE INDEX plait_runs_forked ON plait_runs (forked_from, last_seq)",
        lambda conn: _index_every_run(conn),
    ),
    (
        # Content-addressed values (plait_durable.BlobStore): a run's blobs by SHA-256, written
        # in the transaction of the checkpoint that first references them.
        """CREATE TABLE plait_blobs (
            run_id TEXT NOT NULL,
            hash TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (run_id, hash)
        )""",
    ),
)

#: The event journal's table, created on first use (not a migration: a store that never
#: keeps a journal never has it). ``seq`` is AUTOINCREMENT: it never goes back.
_JOURNAL_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS plait_journal (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS plait_journal_run_seq ON plait_journal (run_id, seq)",
)

#: The schema version this release writes.
SCHEMA_VERSION = len(_MIGRATIONS)

#: Bytes a ``VACUUM`` is assumed to rewrite per second at the least (a slow disk): a
#: database created without ``auto_vacuum`` is converted after a prune only if its size
#: is below this times half the store's ``timeout``, so a writer waiting on it is never
#: kept past its bound.
VACUUM_RATE = 10 << 20

_INFO = ", ".join(CheckpointStoreBase.INFO_FIELDS)
_SYNCHRONOUS = ("full", "extra", "normal")
#: Each run's latest row (the highest seq: seq never goes back) and its first time.
_RUNS_SQL = """
    SELECT c.checkpoint_id, c.run_id, c.data, g.first_at
    FROM (SELECT run_id, MAX(seq) AS last_seq, MIN(created_at) AS first_at
          FROM plait_checkpoints GROUP BY run_id) AS g
    JOIN plait_checkpoints AS c ON c.seq = g.last_seq
    ORDER BY g.last_seq DESC
    LIMIT ?"""
_RUN_COLUMNS = ", ".join(CheckpointStoreBase.RUN_COLUMNS)
_LOAD_SQL = "SELECT run_id, data FROM plait_checkpoints WHERE checkpoint_id = ?"
_LATEST_SQL = (
    "SELECT checkpoint_id, data FROM plait_checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1"
)
#: A run's row after a save of its newest checkpoint: the first save sets what the run's
#: first checkpoint says (created_at, forked_from), later ones the rest.
_UPSERT_RUN = f"""
    INSERT INTO plait_runs ({_RUN_COLUMNS}, last_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow,
        status = excluded.status, superstep = excluded.superstep,
        pending_requests = excluded.pending_requests, error = excluded.error,
        updated_at = excluded.updated_at, last_seq = excluded.last_seq
    WHERE excluded.last_seq > plait_runs.last_seq"""


def _create_private(path: str) -> None:
    """Create the database file readable by its user alone (``0600``) if it is not there:
    checkpoints hold a run's messages and state. SQLite gives its ``-wal`` and ``-shm``
    files the database file's permissions."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SqliteCheckpointStore(CheckpointStoreBase):
    """Checkpoints in a SQLite database file (``sqlite:///PATH``).

    :param path: the database file, created on first use (``":memory:"`` for a private
        in-memory database).
    :param synchronous: ``"full"`` (default), ``"extra"`` or ``"normal"``; see the module
        docstring for what each promises.
    :param timeout: seconds to wait for another writer's lock before failing.

    URLs: ``sqlite:///runs.db`` is ``runs.db`` relative to the working directory,
    ``sqlite:////var/lib/plait/runs.db`` is absolute; options go in the query
    (``?synchronous=normal&timeout=10``).
    """

    KIND = "SQLite"

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "full",
        timeout: float = 30.0,
        url: str | None = None,
    ) -> None:
        if synchronous.lower() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous={synchronous!r} is not one of {', '.join(_SYNCHRONOUS)}")
        self.path = str(path)
        self.url = url or f"sqlite:///{self.path}"
        self.synchronous = synchronous.lower()
        self.timeout = float(timeout)
        self.journal_mode: str | None = None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._journal_ready = False

    @classmethod
    def from_url(cls, url: str) -> SqliteCheckpointStore:
        """Open ``sqlite:///PATH`` with options ``synchronous`` and ``timeout``."""
        head, options = split_query(url, allowed=frozenset({"synchronous", "timeout"}))
        rest = head[len("sqlite://") :] if head.lower().startswith("sqlite://") else ""
        if not rest.startswith("/") or len(rest) < 2:
            raise ValueError(
                f"not a SQLite store url: {url!r} (expected sqlite:///relative/path.db or "
                "sqlite:////absolute/path.db)"
            )
        try:
            timeout = float(options.get("timeout", 30.0))
        except ValueError:
            raise ValueError(f"timeout in {url!r} must be a number of seconds") from None
        return cls(
            rest[1:], synchronous=options.get("synchronous", "full"), timeout=timeout, url=url
        )

    # -- the protocol ------------------------------------------------------------

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        events: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """Commit the checkpoint, its new ``blobs``, its run's index row and its journal
        ``events`` in one transaction."""
        if events:
            await self._run(self._save_with_events_sync, checkpoint, data, events, lease, blobs)
        else:
            await self._run(self._save_many_sync, [(checkpoint, data)], lease, blobs)

    async def save_many(
        self,
        checkpoints: Sequence[Checkpoint],
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Commit several checkpoints of one run and their new ``blobs`` in one
        transaction, in order (one fsync for all): what the ``async`` durability mode's
        writer uses when checkpoints queue up."""
        encoded = [(checkpoint, self._encode(checkpoint)) for checkpoint in checkpoints]
        await self._run(self._save_many_sync, encoded, lease, blobs)

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (one that is missing is left out)."""
        return await self._run(self._get_blobs_sync, run_id, sorted(set(hashes)))

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` and those they reach, in one call of
        the worker thread (what a bundle would reach is left to ``get_blobs``:
        :func:`~plait_stores._common.blob_closure`)."""
        return await self._run(self._get_closure_sync, run_id, sorted(set(hashes)))

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds."""
        rows = await self._run(
            self._fetch_all,
            "SELECT hash FROM plait_blobs WHERE run_id = ? ORDER BY hash",
            (run_id,),
        )
        return [row[0] for row in rows]

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :class:`~plait_durable.Lease`)."""
        return await self._run(self._acquire_sync, run_id, ttl, holder)

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now, unless it was taken over."""
        renewed = Lease(lease.run_id, lease.token, lease.holder, time.time() + ttl)
        changed = await self._run(
            self._unsynced,
            "UPDATE plait_leases SET expires_at = ? WHERE run_id = ? AND token = ?",
            (renewed.expires_at, lease.run_id, lease.token),
        )
        if not changed:
            raise await self._taken_over(lease)
        return renewed

    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if its token is still the run's."""
        await self._run(
            self._unsynced,
            "UPDATE plait_leases SET holder = NULL, expires_at = 0 WHERE run_id = ? AND token = ?",
            (lease.run_id, lease.token),
        )

    async def _taken_over(self, lease: Lease) -> CheckpointError:
        """:meth:`_lost`, naming the worker that holds the lease now."""
        row = await self._run(
            self._fetch_one, "SELECT holder FROM plait_leases WHERE run_id = ?", (lease.run_id,)
        )
        return self._lost(lease, LeaseHolder.from_json(row[0]) if row else None)

    async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
        """The run and bytes of ``checkpoint_id``."""
        row = await self._run(self._fetch_one, _LOAD_SQL, (checkpoint_id,))
        return None if row is None else (row[0], row[1])

    def _loaded(self, checkpoint_id: str, row: tuple[str, bytes] | None) -> Checkpoint:
        """The checkpoint ``checkpoint_id`` from its row (``run_id, data``), verified."""
        if row is None:
            raise self._not_found(checkpoint_id)
        return self._decode(row[1], row[0], checkpoint_id)

    async def load_with_blobs(self, checkpoint_id: str) -> tuple[Checkpoint, Mapping[str, bytes]]:
        """:meth:`load`, and the blobs its state reaches (as :meth:`get_blob_closure`
        reads them), in one call of the worker thread: what a resume reads first."""
        return await self._run(self._load_with_blobs_sync, checkpoint_id)

    async def latest_with_blobs(self, run_id: str) -> tuple[Checkpoint | None, Mapping[str, bytes]]:
        """:meth:`latest`, and the blobs its state reaches, in one call of the worker
        thread (``(None, {})`` for a run without checkpoints)."""
        return await self._run(self._latest_with_blobs_sync, run_id)

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved."""
        from plait_durable import CheckpointInfo

        rows = await self._run(
            self._fetch_all,
            f"SELECT {_INFO} FROM plait_checkpoints WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [CheckpointInfo(*row) for row in rows]

    async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
        """The id and bytes of the checkpoint of ``run_id`` saved last."""
        row = await self._run(self._fetch_one, _LATEST_SQL, (run_id,))
        return None if row is None else (row[0], row[1])

    def _latest_of(self, run_id: str, row: tuple[str, bytes] | None) -> Checkpoint | None:
        """The latest checkpoint of ``run_id`` from its row (``checkpoint_id, data``)."""
        return None if row is None else self._decode(row[1], run_id, row[0])

    async def _heads(self, limit: int | None) -> Sequence[tuple[str, str, bytes, float | None]]:
        """Each run's latest row and first time: one query grouping by run."""
        rows = await self._run(self._fetch_all, _RUNS_SQL, (-1 if limit is None else limit,))
        return [(run_id, last, data, first) for last, run_id, data, first in rows]

    async def list_runs(self, query: RunQuery) -> RunPage:
        """A page of the run index (:class:`plait_durable.RunIndex`), newest first: one
        query on ``plait_runs``, by an index on the column filtered and ``last_seq``
        (:func:`list_runs_sql`)."""
        sql, params = list_runs_sql(query)
        return self._page_of_rows(query, await self._run(self._fetch_all, sql, params))

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        await self._run(self._delete_sync, checkpoint_id)

    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went."""
        return await self._run(self._prune_sync, run_id, keep_last)

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id``; return how many went."""
        return await self._run(self._delete_run_sync, run_id)

    async def aclose(self) -> None:
        """Close the connection (in a worker thread: closing may checkpoint the WAL)."""
        await super().aclose()
        await anyio.to_thread.run_sync(self._close_sync)

    # -- the event journal (plait_durable.EventJournal) -----------------------------------

    async def _append(self, run_id: str, events: Sequence[str], lease: Lease | None) -> None:
        """Append journal lines of ``run_id`` in one transaction."""
        await self._run(self._append_events_sync, run_id, events, lease)

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The journal lines of ``run_id`` after ``after``: one indexed query."""
        return await self._run(self._read_events_sync, run_id, after, limit)

    def _journal_table(self, conn: sqlite3.Connection) -> None:
        """Create the journal's table on first use, in a transaction of its own (before
        the caller's)."""
        if self._journal_exists(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _JOURNAL_SCHEMA:
                conn.execute(statement)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._journal_ready = True

    def _journal_exists(self, conn: sqlite3.Connection) -> bool:
        """Whether the journal's table is there (a reader never creates it)."""
        if not self._journal_ready:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plait_journal'"
            ).fetchone()
            self._journal_ready = found is not None
        return self._journal_ready

    def _insert_events(self, conn: sqlite3.Connection, run_id: str, stored: Sequence[str]) -> None:
        conn.executemany(
            "INSERT INTO plait_journal (run_id, data) VALUES (?, ?)",
            [(run_id, text) for text in stored],
        )

    def _save_with_events_sync(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint,
        data: bytes,
        stored: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        self._journal_table(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if blobs:
                _insert_blobs(conn, checkpoint.run_id, blobs)
            if self._save_sync(conn, checkpoint, data, lease):
                self._insert_events(conn, checkpoint.run_id, stored)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _append_events_sync(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        stored: Sequence[str],
        lease: Lease | None,
    ) -> None:
        self._journal_table(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if lease is not None:
                row = conn.execute(
                    "SELECT token, holder FROM plait_leases WHERE run_id = ?", (run_id,)
                ).fetchone()
                if row is None or row[0] != lease.token:
                    holder = LeaseHolder.from_json(row[1]) if row else None
                    raise self._lost(lease, holder)
            self._insert_events(conn, run_id, stored)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _read_events_sync(
        self, conn: sqlite3.Connection, run_id: str, after: int, limit: int
    ) -> builtins.list[Any]:
        if not self._journal_exists(conn):
            return []
        return conn.execute(
            "SELECT seq, data FROM plait_journal WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, limit),
        ).fetchall()

    # -- worker-thread side --------------------------------------------------------

    async def _run(self, func: Callable[..., _T], *args: Any) -> _T:
        self._check_open()
        return await anyio.to_thread.run_sync(self._locked, func, args)

    def _locked(self, func: Callable[..., _T], args: tuple[Any, ...]) -> _T:
        with self._lock:
            self._check_open()
            try:
                conn = self._conn if self._conn is not None else self._connect()
                return func(conn, *args)
            except (sqlite3.OperationalError, OSError) as exc:
                raise self._unavailable(f"({self.path}) cannot be used: {exc}") from exc
            except (sqlite3.IntegrityError, sqlite3.ProgrammingError) as exc:
                raise CheckpointError(
                    f"SQLite checkpoint store {self.url} refused the checkpoint: {exc}"
                ) from exc
            except sqlite3.DatabaseError as exc:
                raise self._unavailable(
                    f"({self.path}) is damaged or is not a SQLite database: {exc}"
                ) from exc

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _create_private(self.path)
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            # before the first table exists (it cannot change afterwards without a VACUUM)
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self.journal_mode = self._enable_wal(conn)
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> str:
        mode: str = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode.lower() in ("wal", "memory"):
            return mode.lower()
        # Switching to WAL takes an exclusive lock, and SQLite answers "database is
        # locked" at once instead of calling the busy handler when another process is
        # opening the same new file: wait for it ourselves, up to ``timeout``.
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                return mode.lower()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS plait_schema_version ("
                " version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            current = conn.execute("SELECT MAX(version) FROM plait_schema_version").fetchone()[0]
            current = current or 0
            if current > SCHEMA_VERSION:
                raise CheckpointError(
                    f"SQLite checkpoint store {self.url} has schema version {current}, newer "
                    f"than this plait-stores knows ({SCHEMA_VERSION}); upgrade plait-stores"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version - 1]:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO plait_schema_version (version, applied_at) VALUES (?, ?)",
                    (version, time.time()),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _close_sync(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _save_sync(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint,
        data: bytes,
        lease: Lease | None = None,
    ) -> bool:
        """Insert ``checkpoint`` (inside the caller's transaction); whether it was new."""
        if lease is None:
            cursor = conn.execute(
                f"INSERT INTO plait_checkpoints ({_INFO}, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (checkpoint_id) DO NOTHING",
                (*self._info_row(checkpoint), data),
            )
        else:  # the fencing check and the insert are one statement
            cursor = conn.execute(
                f"INSERT INTO plait_checkpoints ({_INFO}, data) SELECT ?, ?, ?, ?, ?, ?, ?, ?"
                " WHERE EXISTS (SELECT 1 FROM plait_leases WHERE run_id = ? AND token = ?)"
                " ON CONFLICT (checkpoint_id) DO NOTHING",
                (*self._info_row(checkpoint), data, checkpoint.run_id, lease.token),
            )
        if cursor.rowcount == 0:
            row = conn.execute(
                "SELECT data FROM plait_checkpoints WHERE checkpoint_id = ?",
                (checkpoint.checkpoint_id,),
            ).fetchone()
            if row is None and lease is not None:
                holder = conn.execute(
                    "SELECT holder FROM plait_leases WHERE run_id = ?", (checkpoint.run_id,)
                ).fetchone()
                raise self._lost(lease, LeaseHolder.from_json(holder[0]) if holder else None)
            if row is None or bytes(row[0]) != data:
                raise self._duplicate(checkpoint)
            return False
        _index_saved(conn, checkpoint, cursor.lastrowid)
        return True

    def _unsynced(self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> int:
        """Run a lease statement without an fsync of its own: a lease need not survive a
        power cut (its holder does not either), and the next checkpoint's commit makes it
        durable anyway (WAL commits in order)."""
        conn.execute("PRAGMA synchronous=OFF")
        try:
            return conn.execute(sql, params).rowcount
        finally:
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")

    def _acquire_sync(
        self, conn: sqlite3.Connection, run_id: str, ttl: float, holder: LeaseHolder | None
    ) -> Lease:
        conn.execute("PRAGMA synchronous=OFF")
        try:
            return self._acquire_in(conn, run_id, ttl, holder)
        finally:
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")

    def _acquire_in(
        self, conn: sqlite3.Connection, run_id: str, ttl: float, holder: LeaseHolder | None
    ) -> Lease:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT token, holder, expires_at FROM plait_leases WHERE run_id = ?", (run_id,)
            ).fetchone()
            current = (row[0], LeaseHolder.from_json(row[1]), row[2]) if row else None
            lease = self._take_lease(run_id, current, holder, ttl)
            conn.execute(
                "INSERT INTO plait_leases (run_id, token, holder, expires_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET token = excluded.token,"
                " holder = excluded.holder, expires_at = excluded.expires_at",
                (run_id, lease.token, lease.holder.to_json(), lease.expires_at),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return lease

    def _prune_sync(self, conn: sqlite3.Connection, run_id: str, keep_last: int) -> int:
        """prune_plan's rule, with the bases read from the kept checkpoints' verified bodies."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            kept = conn.execute(
                "SELECT seq, checkpoint_id, data FROM plait_checkpoints WHERE run_id = ?"
                " ORDER BY seq DESC LIMIT ?",
                (run_id, keep_last),
            ).fetchall()
            needed = set()
            for _seq, checkpoint_id, data in kept:
                body = self._decode(data, run_id, checkpoint_id)
                if body.base_id is not None:
                    needed.add(body.base_id)
            if kept:
                first = conn.execute(
                    "SELECT checkpoint_id FROM plait_checkpoints WHERE run_id = ?"
                    " ORDER BY seq LIMIT 1",
                    (run_id,),
                ).fetchone()
                needed.add(first[0])
            below = min((row[0] for row in kept), default=None)
            marks = ", ".join("?" * len(needed))
            sql = "DELETE FROM plait_checkpoints WHERE run_id = ?"
            params: builtins.list[Any] = [run_id]
            if below is not None:
                sql += " AND seq < ?"
                params.append(below)
            if needed:
                sql += f" AND checkpoint_id NOT IN ({marks})"
                params.extend(sorted(needed))
            removed = conn.execute(sql, params).rowcount
            _reindex_run(conn, run_id)
            self._sweep_sync(conn, run_id)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if removed:
            self._reclaim(conn)
        return removed

    def _reclaim(self, conn: sqlite3.Connection) -> None:
        """Give the pages a delete freed back to the file system (see the module
        docstring): an incremental vacuum, or once, for a database created without
        ``auto_vacuum``, a ``VACUUM`` that switches it, if it is small enough."""
        if self.path == ":memory:" or not conn.execute("PRAGMA freelist_count").fetchone()[0]:
            return
        try:
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0:  # NONE: made before
                pages = conn.execute("PRAGMA page_count").fetchone()[0]
                page_size = conn.execute("PRAGMA page_size").fetchone()[0]
                if pages * page_size > VACUUM_RATE * self.timeout / 2:
                    return
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                conn.execute("VACUUM")
            else:
                # run to its end: a step of the statement frees one page, and execute steps once
                conn.executescript("PRAGMA incremental_vacuum")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:
            # another connection held its lock past the bound: what was deleted is
            # deleted, and the space is given back after the next prune
            pass

    @staticmethod
    def _get_blobs_sync(
        conn: sqlite3.Connection, run_id: str, hashes: builtins.list[str]
    ) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):  # under SQLite's bound on parameters
            part = hashes[start : start + 500]
            rows = conn.execute(
                f"SELECT hash, data FROM plait_blobs WHERE run_id = ?"
                f" AND hash IN ({', '.join('?' * len(part))})",
                (run_id, *part),
            ).fetchall()
            found.update((digest, bytes(data)) for digest, data in rows)
        return found

    @classmethod
    def _get_closure_sync(
        cls, conn: sqlite3.Connection, run_id: str, hashes: builtins.list[str]
    ) -> dict[str, bytes]:
        return blob_closure(lambda wanted: cls._get_blobs_sync(conn, run_id, wanted), hashes)

    def _load_with_blobs_sync(
        self, conn: sqlite3.Connection, checkpoint_id: str
    ) -> tuple[Checkpoint, dict[str, bytes]]:
        checkpoint = self._loaded(checkpoint_id, self._fetch_one(conn, _LOAD_SQL, (checkpoint_id,)))
        return checkpoint, self._closure_of(conn, checkpoint)

    def _latest_with_blobs_sync(
        self, conn: sqlite3.Connection, run_id: str
    ) -> tuple[Checkpoint | None, dict[str, bytes]]:
        checkpoint = self._latest_of(run_id, self._fetch_one(conn, _LATEST_SQL, (run_id,)))
        return checkpoint, {} if checkpoint is None else self._closure_of(conn, checkpoint)

    def _closure_of(self, conn: sqlite3.Connection, checkpoint: Checkpoint) -> dict[str, bytes]:
        """The blobs the state of ``checkpoint`` reaches (as :meth:`get_blob_closure`)."""
        refs = self._blob_refs(checkpoint.state)
        return self._get_closure_sync(conn, checkpoint.run_id, sorted(refs)) if refs else {}

    def _sweep_sync(self, conn: sqlite3.Connection, run_id: str) -> None:
        """Delete the blobs of ``run_id`` no remaining checkpoint reaches (inside the
        caller's transaction)."""
        blobs = dict(conn.execute("SELECT hash, data FROM plait_blobs WHERE run_id = ?", (run_id,)))
        if not blobs:
            return
        stored = conn.execute(
            "SELECT data FROM plait_checkpoints WHERE run_id = ?", (run_id,)
        ).fetchall()
        doomed = self._unreferenced((row[0] for row in stored), blobs)
        conn.executemany(
            "DELETE FROM plait_blobs WHERE run_id = ? AND hash = ?",
            [(run_id, digest) for digest in sorted(doomed)],
        )

    def _delete_sync(self, conn: sqlite3.Connection, checkpoint_id: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT run_id FROM plait_checkpoints WHERE checkpoint_id = ?", (checkpoint_id,)
            ).fetchone()
            if row is not None:
                conn.execute(
                    "DELETE FROM plait_checkpoints WHERE checkpoint_id = ?", (checkpoint_id,)
                )
                _reindex_run(conn, row[0])
                self._sweep_sync(conn, row[0])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if row is not None:
            self._reclaim(conn)

    def _delete_run_sync(self, conn: sqlite3.Connection, run_id: str) -> int:
        conn.execute("BEGIN IMMEDIATE")
        try:
            removed = conn.execute(
                "DELETE FROM plait_checkpoints WHERE run_id = ?", (run_id,)
            ).rowcount
            conn.execute("DELETE FROM plait_runs WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM plait_blobs WHERE run_id = ?", (run_id,))
            if self._journal_exists(conn):
                conn.execute("DELETE FROM plait_journal WHERE run_id = ?", (run_id,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if removed:
            self._reclaim(conn)
        return removed

    def _save_many_sync(
        self,
        conn: sqlite3.Connection,
        encoded: builtins.list[tuple[Checkpoint, bytes]],
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Checkpoints of one run, their blobs and their run's index row in one
        transaction: the blobs first, so no committed checkpoint lacks one."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if blobs:
                _insert_blobs(conn, _one_run(encoded), blobs)
            for checkpoint, data in encoded:
                self._save_sync(conn, checkpoint, data, lease)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _fetch_one(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Any:
        return conn.execute(sql, params).fetchone()

    @staticmethod
    def _fetch_all(
        conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]
    ) -> builtins.list[Any]:
        return conn.execute(sql, params).fetchall()

    @staticmethod
    def _execute(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> int:
        return conn.execute(sql, params).rowcount


def _insert_blobs(conn: sqlite3.Connection, run_id: str, blobs: Mapping[str, bytes]) -> None:
    """Insert the blobs ``run_id`` lacks (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO plait_blobs (run_id, hash, data) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        [(run_id, digest, bytes(blob)) for digest, blob in sorted(blobs.items())],
    )


def _one_run(encoded: Sequence[tuple[Checkpoint, bytes]]) -> str:
    """The run the checkpoints of a save with blobs belong to (blobs are a run's)."""
    runs = {checkpoint.run_id for checkpoint, _ in encoded}
    if len(runs) != 1:
        raise ValueError(f"a save with blobs takes checkpoints of one run, got {sorted(runs)}")
    return runs.pop()


# -- the run index ----------------------------------------------------------------------


def _run_row(
    checkpoint: Checkpoint, created_at: float, first_metadata: Any, seq: int
) -> tuple[Any, ...]:
    summary = RunSummary.from_checkpoints(
        checkpoint, created_at=created_at, first_metadata=first_metadata
    )
    return (*summary.as_row(), seq)


def _index_saved(conn: sqlite3.Connection, checkpoint: Checkpoint, seq: int | None) -> None:
    """Index the run of ``checkpoint``, just inserted as row ``seq`` (inside the save's
    transaction)."""
    assert seq is not None
    conn.execute(_UPSERT_RUN, _run_row(checkpoint, checkpoint.created_at, checkpoint.metadata, seq))


def _reindex_run(conn: sqlite3.Connection, run_id: str) -> None:
    """Rebuild the index row of ``run_id`` from its stored checkpoints (after a delete:
    its latest or first checkpoint may be gone)."""
    conn.execute("DELETE FROM plait_runs WHERE run_id = ?", (run_id,))
    latest = conn.execute(
        "SELECT seq, checkpoint_id, data, status, superstep, created_at FROM plait_checkpoints"
        " WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if latest is None:
        return
    first = conn.execute(
        "SELECT checkpoint_id, created_at, data FROM plait_checkpoints WHERE run_id = ?"
        " ORDER BY seq LIMIT 1",
        (run_id,),
    ).fetchone()
    try:
        decode = CheckpointStoreBase._decode_named
        checkpoint = decode(latest[2], run_id, latest[1])
        first_body = decode(first[2], run_id, first[0])
    except CheckpointError as exc:
        # listed from its columns, saying why the rest is missing (loading it says it too)
        row = (run_id, None, latest[3], latest[4], 0, str(exc), first[1], latest[5], None, None)
        conn.execute(_UPSERT_RUN, (*row, latest[0]))
        return
    conn.execute(_UPSERT_RUN, _run_row(checkpoint, first[1], first_body.metadata, latest[0]))


def _index_every_run(conn: sqlite3.Connection) -> None:
    """The run index's back-fill: one row per run already stored."""
    for (run_id,) in conn.execute("SELECT DISTINCT run_id FROM plait_checkpoints").fetchall():
        _reindex_run(conn, run_id)


def list_runs_sql(query: RunQuery) -> tuple[str, tuple[Any, ...]]:
    """The one query of :meth:`SqliteCheckpointStore.list_runs` and its parameters
    (:meth:`plait_durable.kit.CheckpointStoreBase._page_sql`).

    :raises ValueError: a malformed cursor.
    """
    return CheckpointStoreBase._page_sql(query)
