"""``postgresql://`` and ``postgres://``: checkpoints in PostgreSQL, through psycopg 3 async.

One table, ``plait_checkpoints`` (in the connection's ``search_path``), with the listing
fields as columns and the bytes of :func:`~plait_durable.encode_checkpoint` as
``BYTEA``. ``seq`` is an identity column: it grows with every insert, so a run is ordered
by insertion even when superstep numbers repeat after a resume, and ``(run_id, seq)`` is
indexed for "latest of a run". A save is one ``INSERT`` in autocommit mode: atomic, and
durable when it returns under the server's default ``synchronous_commit = on``.

The schema is created on first use. Migrations are SQL strings applied in order inside
one transaction that first takes a transaction-scoped advisory lock, so processes
starting together do not race; each applied migration is a row of
``plait_schema_version``.

Connections come from a :class:`psycopg_pool.AsyncConnectionPool`: concurrent runs in one
process write in parallel instead of queueing on one connection, and a connection the
server dropped (restart, failover, idle timeout) is checked and replaced on checkout
instead of failing the next save. The first use connects once directly, so an
unreachable server fails at once with libpq's own message rather than after the pool's
wait.

The event journal (:class:`plait_durable.EventJournal`) is ``plait_journal`` (one row per
event, an identity ``seq`` ordering it), created the first time a journal is written
(under the migrations' advisory lock); a checkpoint and the events saved with it go in
one transaction.

One writer per run: ``plait_leases`` holds each run's lease (fencing token, holder,
expiry; rows stay after release, so tokens never repeat). A save with a lease inserts
only while that token is current, reading the lease row ``FOR SHARE`` in the same
statement, so a takeover (``FOR UPDATE``) cannot slip in between.

Time bound: every call finishes within ``timeout`` seconds (default 30, ``?timeout=`` in
the URL) or fails with :class:`~plait_durable.StoreUnavailableError`. The store sets
``statement_timeout`` and ``lock_timeout`` to that bound on its sessions, turns on TCP
keepalives and ``tcp_user_timeout``, waits at most that long for a pooled connection,
and bounds every call as a whole too, so a stalled server, a blackholed connection or a
lock held by another session never hangs a run.

psycopg's async API and its pool run on asyncio only; these stores do not run on trio.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import anyio
import psycopg
from plait import CheckpointError
from plait_durable import (
    Checkpoint,
    CheckpointInfo,
    Lease,
    LeaseHolder,
    RunPage,
    RunQuery,
    RunSummary,
)
from plait_durable.kit import CheckpointStoreBase
from psycopg_pool import AsyncConnectionPool, PoolTimeout

__all__ = ["MIGRATIONS", "PostgresCheckpointStore", "SCHEMA_VERSION", "redact_url"]

#: ``redact_url(url)``: ``url`` with its password replaced by ``***`` (the store kit's).
redact_url = CheckpointStoreBase.redact_url

#: Migrations in order; applying migration ``n`` (1-based) brings the schema to version n.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE plait_checkpoints (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        checkpoint_id text NOT NULL UNIQUE,
        run_id text NOT NULL,
        superstep bigint NOT NULL,
        parent_id text,
        status text NOT NULL,
        created_at double precision NOT NULL,
        data bytea NOT NULL
    );
    CREATE INDEX plait_checkpoints_run_seq ON plait_checkpoints (run_id, seq);
    """,
    # The full checkpoint a delta builds on, which prune keeps while a kept row names it.
    # Rows written before this column get it from their encoded state: the JSON body after
    # the 74-byte header of encode_checkpoint ("PLAITCP1\n" + SHA-256 hex + "\n"). Only rows
    # that name a base are parsed, each in its own block, so a damaged row stays NULL
    # instead of failing the upgrade. PostgreSQL's JSON functions refuse a document with a
    # \u0000 escape anywhere in it, so those become \u0020 first: only the base id is read.
    r"""
    ALTER TABLE plait_checkpoints ADD COLUMN base_id text;
    DO $$
    DECLARE
        row_seq bigint;
    BEGIN
        FOR row_seq IN
            SELECT seq FROM plait_checkpoints WHERE position('"base":"'::bytea IN data) > 0
        LOOP
            BEGIN
                UPDATE plait_checkpoints
                    SET base_id = replace(
                        convert_from(substring(data FROM 75), 'UTF8'), E'\\u0000', E'\\u0020'
                    )::json #>> '{state,base}'
                    WHERE seq = row_seq;
            EXCEPTION WHEN others THEN
                NULL;
            END;
        END LOOP;
    END
    $$;
    """,
    """
    CREATE TABLE plait_leases (
        run_id text PRIMARY KEY,
        token bigint NOT NULL,
        holder text,
        expires_at double precision NOT NULL
    );
    """,
    # The run index (plait_durable.RunIndex): one row per run, from its latest checkpoint,
    # written in the save's transaction. Existing runs are indexed right after (in Python:
    # their bodies are decoded), in the migration's transaction.
    """
    CREATE TABLE plait_runs (
        run_id text PRIMARY KEY,
        workflow text,
        status text NOT NULL,
        superstep bigint NOT NULL,
        pending_requests bigint NOT NULL,
        error text,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        forked_from text,
        forked_from_checkpoint text,
        last_seq bigint NOT NULL
    );
    CREATE INDEX plait_runs_seq ON plait_runs (last_seq);
    CREATE INDEX plait_runs_status ON plait_runs (status, last_seq);
    CREATE INDEX plait_runs_workflow ON plait_runs (workflow, last_seq);
    CREATE INDEX plait_runs_forked ON plait_runs (forked_from, last_seq);
    """,
    # Content-addressed values (plait_durable.BlobStore): a run's blobs by SHA-256, written in
    # the transaction of the checkpoint that first references them.
    """
    CREATE TABLE plait_blobs (
        run_id text NOT NULL,
        hash text NOT NULL,
        data bytea NOT NULL,
        refs text[] NOT NULL,
        PRIMARY KEY (run_id, hash)
    );
    """,
)
#: The migration that created the run index (runs stored before it are indexed then).
_RUN_INDEX_VERSION = 4

#: The event journal's table, created on first use (not a migration: a store that never
#: keeps a journal never has it).
_JOURNAL_SCHEMA = """
    CREATE TABLE IF NOT EXISTS plait_journal (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL,
        data text NOT NULL
    );
    CREATE INDEX IF NOT EXISTS plait_journal_run_seq ON plait_journal (run_id, seq);
"""


async def _insert_events(
    conn: psycopg.AsyncConnection[Any], run_id: str, stored: Sequence[str]
) -> None:
    """Insert journal events (inside the caller's transaction)."""
    if stored:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO plait_journal (run_id, data) VALUES (%s, %s)",
                [(run_id, text) for text in stored],
            )


#: The schema version this release writes.
SCHEMA_VERSION = len(MIGRATIONS)

#: The advisory lock that serialises migrations ("plait_cp" as a 64-bit integer).
_MIGRATION_LOCK = int.from_bytes(b"plait_cp", "big")
#: The blobs named and every blob they reach, through the ``refs`` kept beside each.
_CLOSURE_SQL = """
    WITH RECURSIVE reach(hash) AS (
        SELECT unnest(%s::text[])
        UNION
        SELECT unnest(b.refs) FROM plait_blobs AS b JOIN reach AS r ON b.hash = r.hash
        WHERE b.run_id = %s
    )
    SELECT b.hash, b.data FROM plait_blobs AS b JOIN reach AS r ON b.hash = r.hash
    WHERE b.run_id = %s"""
#: A run's blob lock (transaction-scoped): saves with blobs and sweeps of the run take it.
_BLOB_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('plait_blobs:' || %s, 0))"
#: Seconds libpq waits for a connection unless the URL sets ``connect_timeout``.
DEFAULT_CONNECT_TIMEOUT = 5
#: Seconds any one call may take unless the URL sets ``timeout``.
DEFAULT_TIMEOUT = 30.0
_OWN_OPTIONS = {"pool_max_size": 4, "pool_timeout": -1.0, "timeout": DEFAULT_TIMEOUT}
_INFO = ", ".join(CheckpointStoreBase.INFO_FIELDS)
#: Each run's latest row (the highest seq: an identity never goes back) and its first
#: time; ``LIMIT NULL`` is no limit.
_RUNS_SQL = """
    SELECT c.checkpoint_id, c.run_id, c.data, g.first_at
    FROM (SELECT run_id, MAX(seq) AS last_seq, MIN(created_at) AS first_at
          FROM plait_checkpoints GROUP BY run_id) AS g
    JOIN plait_checkpoints AS c ON c.seq = g.last_seq
    ORDER BY g.last_seq DESC
    LIMIT %s::bigint"""
#: A run's index row after a save of its newest checkpoint (the first save sets
#: created_at and forked_from, later ones the rest).
_UPSERT_RUN = f"""
    INSERT INTO plait_runs ({", ".join(CheckpointStoreBase.RUN_COLUMNS)}, last_seq)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow,
        status = excluded.status, superstep = excluded.superstep,
        pending_requests = excluded.pending_requests, error = excluded.error,
        updated_at = excluded.updated_at, last_seq = excluded.last_seq
    WHERE excluded.last_seq > plait_runs.last_seq"""
#: A checkpoint with neither blobs nor journal lines, and its run's index row, in one
#: statement (its own transaction): the checkpoint is inserted (with a lease, only while
#: the lease's row holds its token: ``{lease}``), then the index row from the ``seq`` it
#: got. The first eight parameters are the checkpoint's, then the lease's two (with one),
#: then the index row's ten. One round trip, where a transaction of three statements took
#: five: on a loaded machine a worker's time went to sending statements.
_INSERT_BOTH = f"""
    WITH saved AS (
        INSERT INTO plait_checkpoints ({_INFO}, data)
        SELECT %s, %s, %s, %s, %s, %s, %s, %s {{lease}}
        ON CONFLICT (checkpoint_id) DO NOTHING RETURNING seq
    ), indexed AS (
        INSERT INTO plait_runs ({", ".join(CheckpointStoreBase.RUN_COLUMNS)}, last_seq)
        SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, seq FROM saved
        ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow,
            status = excluded.status, superstep = excluded.superstep,
            pending_requests = excluded.pending_requests, error = excluded.error,
            updated_at = excluded.updated_at, last_seq = excluded.last_seq
        WHERE excluded.last_seq > plait_runs.last_seq
    )
    SELECT seq FROM saved"""
_LEASED = "WHERE EXISTS (SELECT 1 FROM plait_leases WHERE run_id = %s AND token = %s FOR SHARE)"


class PostgresCheckpointStore(CheckpointStoreBase):
    """Checkpoints in PostgreSQL (``postgresql://user:password@host:port/db``).

    :param url: a libpq URL. Its query may set any libpq parameter (``connect_timeout``,
        ``sslmode``, ``options``, …) and three of the store's own: ``timeout`` (the
        bound on every call, seconds, default 30), ``pool_max_size`` (connections at
        most, default 4) and ``pool_timeout`` (seconds to wait for a connection from the
        pool, default: ``timeout``).

    Connection failures are :class:`~plait_durable.StoreUnavailableError` naming the URL
    without its password.
    """

    KIND = "PostgreSQL"

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("postgresql", "postgres"):
            raise ValueError(f"not a PostgreSQL store url: {self.redact_url(url)!r}")
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        own: dict[str, float] = {}
        for name, default in _OWN_OPTIONS.items():
            try:
                own[name] = float(options.pop(name, default))
            except ValueError:
                raise ValueError(f"{name} in {self.redact_url(url)!r} must be a number") from None
        self.timeout = own["timeout"]
        if not self.timeout > 0:
            raise ValueError(f"timeout in {self.redact_url(url)!r} must be a positive number")
        bound_ms = str(max(1, int(self.timeout * 1000)))
        options.setdefault(
            "connect_timeout", str(max(2, min(DEFAULT_CONNECT_TIMEOUT, int(self.timeout))))
        )
        # server-side bounds for statements and locks, and dead-peer detection on the socket
        session = f"-c statement_timeout={bound_ms} -c lock_timeout={bound_ms}"
        options["options"] = (
            f"{options['options']} {session}" if options.get("options") else session
        )
        options.setdefault("keepalives", "1")
        options.setdefault("keepalives_idle", "5")
        options.setdefault("keepalives_interval", "2")
        options.setdefault("keepalives_count", "3")
        options.setdefault("tcp_user_timeout", bound_ms)
        self.url = self.redact_url(url)
        self.pool_max_size = max(1, int(own["pool_max_size"]))
        self.pool_timeout = own["pool_timeout"] if own["pool_timeout"] > 0 else self.timeout
        self._conninfo = urlunsplit(parts._replace(query=urlencode(options, quote_via=quote)))
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening: asyncio.Lock | None = None
        self._journal_ready = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(cls, url: str) -> PostgresCheckpointStore:
        """Open a ``postgresql://`` or ``postgres://`` URL."""
        return cls(url)

    # -- connections -------------------------------------------------------------------

    def _failed(self, exc: BaseException) -> BaseException:
        """The store kit's unavailable error for ``exc``, caused by it."""
        text = str(exc).strip() or type(exc).__name__
        error = self._unavailable(f"is unreachable or failed: {text}")
        error.__cause__ = exc
        return error

    async def _get_pool(self) -> AsyncConnectionPool[Any]:
        self._check_open()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "plait-postgres needs asyncio: psycopg's async API does not run on trio"
            ) from None
        if self._loop is not None and self._loop is not loop:
            raise RuntimeError(
                f"{self!r} was first used in another event loop; open one store per loop"
            )
        self._loop = loop
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                try:
                    conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
                    async with conn:
                        await self._migrate(conn)
                except psycopg.Error as exc:
                    raise self._failed(exc) from exc
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._conninfo,
                    min_size=1,
                    max_size=self.pool_max_size,
                    timeout=self.pool_timeout,
                    kwargs={"autocommit": True},
                    check=AsyncConnectionPool.check_connection,
                    open=False,
                    name="plait-checkpoints",
                )
                try:
                    await pool.open(wait=True, timeout=self.pool_timeout)
                except PoolTimeout as exc:
                    await pool.close()
                    raise self._failed(exc) from exc
                self._pool = pool
        return self._pool

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        try:
            with anyio.fail_after(self.timeout):
                pool = await self._get_pool()
                async with pool.connection() as conn:
                    yield conn
        except TimeoutError as exc:
            raise self._failed(
                TimeoutError(f"no answer within {self.timeout} s (the URL's timeout)")
            ) from exc
        except PoolTimeout as exc:  # before psycopg.Error: it is a subclass
            raise self._failed(await self._why_no_connection(exc)) from exc
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    async def _why_no_connection(self, waited: PoolTimeout) -> BaseException:
        """libpq's reason when the pool had no connection to give (it only says it waited)."""
        try:
            conn = await psycopg.AsyncConnection.connect(self._conninfo)
        except psycopg.Error as exc:
            return exc
        await conn.close()
        return PoolTimeout(
            f"all {self.pool_max_size} pooled connections stayed busy for {self.pool_timeout} s"
            " (raise pool_max_size or pool_timeout in the URL)"
        )

    async def _migrate(self, conn: psycopg.AsyncConnection[Any]) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS plait_schema_version ("
                " version integer PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cursor = await conn.execute(
                "SELECT coalesce(max(version), 0) FROM plait_schema_version"
            )
            row = await cursor.fetchone()
            current = int(row[0]) if row else 0
            if current > SCHEMA_VERSION:
                raise CheckpointError(
                    f"PostgreSQL checkpoint store {self.url} has schema version {current}, "
                    f"newer than this plait-postgres knows ({SCHEMA_VERSION}); "
                    "upgrade plait-postgres"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                await conn.execute(MIGRATIONS[version - 1])
                await conn.execute(
                    "INSERT INTO plait_schema_version (version) VALUES (%s)", (version,)
                )
            if current < _RUN_INDEX_VERSION <= SCHEMA_VERSION:
                cursor = await conn.execute("SELECT DISTINCT run_id FROM plait_checkpoints")
                for (run_id,) in await cursor.fetchall():
                    await self._reindex_run(conn, run_id)

    # -- the protocol ------------------------------------------------------------------

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        stored: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """Insert the checkpoint, its new ``blobs``, its run's index row and its journal
        lines in one transaction (with ``lease``, only while its row holds the token)."""
        if not stored and not blobs:
            await self._write_one(checkpoint, data, lease)
            return
        if stored:
            await self._journal_table()
        async with self._connection() as conn, conn.transaction():
            if blobs:
                # the run's blob lock: a sweep waits for this commit, so it sees the
                # checkpoint that uses a blob it would otherwise think unreferenced
                await conn.execute(_BLOB_LOCK, (checkpoint.run_id,))
                async with conn.cursor() as cursor:
                    await cursor.executemany(
                        "INSERT INTO plait_blobs (run_id, hash, data, refs)"
                        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        [
                            (checkpoint.run_id, h, bytes(b), self._child_refs(bytes(b)))
                            for h, b in sorted(blobs.items())
                        ],
                    )
            if lease is None:
                cursor = await conn.execute(
                    f"INSERT INTO plait_checkpoints ({_INFO}, data)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (checkpoint_id) DO NOTHING RETURNING seq",
                    (*self._info_row(checkpoint), data),
                )
            else:
                cursor = await conn.execute(
                    f"INSERT INTO plait_checkpoints ({_INFO}, data)"
                    " SELECT %s, %s, %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM"
                    " plait_leases WHERE run_id = %s AND token = %s FOR SHARE)"
                    " ON CONFLICT (checkpoint_id) DO NOTHING RETURNING seq",
                    (*self._info_row(checkpoint), data, checkpoint.run_id, lease.token),
                )
            inserted = await cursor.fetchone()
            if inserted is not None:  # the run's index row, in the same transaction
                summary = RunSummary.from_checkpoints(
                    checkpoint,
                    created_at=checkpoint.created_at,
                    first_metadata=checkpoint.metadata,
                )
                await conn.execute(_UPSERT_RUN, (*summary.as_row(), inserted[0]))
                await _insert_events(conn, checkpoint.run_id, stored)
                return
            await self._not_written(conn, checkpoint, data, lease)

    async def _write_one(self, checkpoint: Checkpoint, data: bytes, lease: Lease | None) -> None:
        """:meth:`_write` of a checkpoint with neither blobs nor journal lines: one
        statement (:data:`_INSERT_BOTH`)."""
        summary = RunSummary.from_checkpoints(
            checkpoint, created_at=checkpoint.created_at, first_metadata=checkpoint.metadata
        )
        guard: tuple[Any, ...] = () if lease is None else (checkpoint.run_id, lease.token)
        async with self._connection() as conn:
            cursor = await conn.execute(
                _INSERT_BOTH.format(lease="" if lease is None else _LEASED),
                (*self._info_row(checkpoint), data, *guard, *summary.as_row()),
            )
            if await cursor.fetchone() is not None:
                return
            await self._not_written(conn, checkpoint, data, lease)

    async def _not_written(
        self, conn: Any, checkpoint: Checkpoint, data: bytes, lease: Lease | None
    ) -> None:
        """Why a checkpoint's insert wrote nothing: the lease was lost (another holder), or
        the id is taken; the same bytes stored under it already are no error."""
        cursor = await conn.execute(
            "SELECT data FROM plait_checkpoints WHERE checkpoint_id = %s",
            (checkpoint.checkpoint_id,),
        )
        row = await cursor.fetchone()
        if row is None and lease is not None:
            raise self._lost(lease, await self._holder(conn, checkpoint.run_id))
        if row is None or bytes(row[0]) != data:
            raise self._duplicate(checkpoint)

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (one that is missing is left out)."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT hash, data FROM plait_blobs WHERE run_id = %s AND hash = ANY(%s::text[])",
                (run_id, wanted),
                binary=True,  # bytea as it is, not hex text to decode: half the bytes
            )
            return {digest: bytes(data) for digest, data in await cursor.fetchall()}

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` and every blob they reach, in one
        query (a recursive walk over each blob's references)."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        async with self._connection() as conn:
            cursor = await conn.execute(_CLOSURE_SQL, (wanted, run_id, run_id), binary=True)
            return {digest: bytes(data) for digest, data in await cursor.fetchall()}

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds."""
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT hash FROM plait_blobs WHERE run_id = %s ORDER BY hash", (run_id,)
            )
            return [row[0] for row in await cursor.fetchall()]

    async def _sweep(self, conn: psycopg.AsyncConnection[Any], run_id: str) -> None:
        """Delete the blobs of ``run_id`` no remaining checkpoint reaches (in the caller's
        transaction, holding the run's blob lock, so no save with blobs is half-way)."""
        await conn.execute(_BLOB_LOCK, (run_id,))
        cursor = await conn.execute(
            "SELECT hash, data FROM plait_blobs WHERE run_id = %s", (run_id,)
        )
        held = {digest: bytes(data) for digest, data in await cursor.fetchall()}
        if not held:
            return
        cursor = await conn.execute(
            "SELECT data FROM plait_checkpoints WHERE run_id = %s", (run_id,)
        )
        # a checkpoint that does not decode makes its references unknown: then nothing
        # is doomed, and every blob is kept
        doomed = self._unreferenced([bytes(data) for (data,) in await cursor.fetchall()], held)
        if doomed:
            await conn.execute(
                "DELETE FROM plait_blobs WHERE run_id = %s AND hash = ANY(%s::text[])",
                (run_id, sorted(doomed)),
            )

    async def _journal_table(self) -> None:
        """Create the journal's table on first use (under the migrations' lock)."""
        if self._journal_ready:
            return
        async with self._connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute(_JOURNAL_SCHEMA)
        self._journal_ready = True

    async def _journal_exists(self, conn: psycopg.AsyncConnection[Any]) -> bool:
        if not self._journal_ready:
            cursor = await conn.execute("SELECT to_regclass('plait_journal') IS NOT NULL")
            row = await cursor.fetchone()
            self._journal_ready = bool(row and row[0])
        return self._journal_ready

    async def _append(self, run_id: str, stored: Sequence[str], lease: Lease | None) -> None:
        """Append journal lines of ``run_id`` in one transaction (with ``lease``, reading
        its row ``FOR SHARE`` as a save does)."""
        await self._journal_table()
        async with self._connection() as conn, conn.transaction():
            if lease is not None:
                cursor = await conn.execute(
                    "SELECT token FROM plait_leases WHERE run_id = %s FOR SHARE", (run_id,)
                )
                row = await cursor.fetchone()
                if row is None or row[0] != lease.token:
                    raise self._lost(lease, await self._holder(conn, run_id))
            await _insert_events(conn, run_id, stored)

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The journal lines of ``run_id`` after ``after``: one indexed query."""
        async with self._connection() as conn:
            if not await self._journal_exists(conn):
                return []
            cursor = await conn.execute(
                "SELECT seq, data FROM plait_journal WHERE run_id = %s AND seq > %s"
                " ORDER BY seq LIMIT %s",
                (run_id, after, limit),
            )
            return [(seq, text) for seq, text in await cursor.fetchall()]

    @staticmethod
    async def _holder(conn: psycopg.AsyncConnection[Any], run_id: str) -> LeaseHolder | None:
        cursor = await conn.execute("SELECT holder FROM plait_leases WHERE run_id = %s", (run_id,))
        row = await cursor.fetchone()
        return LeaseHolder.from_json(row[0]) if row else None

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :class:`~plait_durable.Lease`)."""
        async with self._connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO plait_leases (run_id, token, holder, expires_at)"
                " VALUES (%s, 0, NULL, 0) ON CONFLICT (run_id) DO NOTHING",
                (run_id,),
            )
            cursor = await conn.execute(
                "SELECT token, holder, expires_at FROM plait_leases WHERE run_id = %s FOR UPDATE",
                (run_id,),
            )
            row = await cursor.fetchone()
            assert row is not None
            current = (int(row[0]), LeaseHolder.from_json(row[1]), float(row[2]))
            lease = self._take_lease(run_id, current, holder, ttl)
            await conn.execute(
                "UPDATE plait_leases SET token = %s, holder = %s, expires_at = %s"
                " WHERE run_id = %s",
                (lease.token, lease.holder.to_json(), lease.expires_at, run_id),
            )
        return lease

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now, unless it was taken over."""
        renewed = Lease(lease.run_id, lease.token, lease.holder, time.time() + ttl)
        async with self._connection() as conn:
            cursor = await conn.execute(
                "UPDATE plait_leases SET expires_at = %s WHERE run_id = %s AND token = %s",
                (renewed.expires_at, lease.run_id, lease.token),
            )
            if cursor.rowcount != 1:
                raise self._lost(lease, await self._holder(conn, lease.run_id))
        return renewed

    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if its token is still the run's."""
        async with self._connection() as conn:
            await conn.execute(
                "UPDATE plait_leases SET holder = NULL, expires_at = 0"
                " WHERE run_id = %s AND token = %s",
                (lease.run_id, lease.token),
            )

    async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
        """The run and bytes of ``checkpoint_id``."""
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT run_id, data FROM plait_checkpoints WHERE checkpoint_id = %s",
                (checkpoint_id,),
            )
            row = await cursor.fetchone()
        return None if row is None else (row[0], bytes(row[1]))

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved."""
        async with self._connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_INFO} FROM plait_checkpoints WHERE run_id = %s ORDER BY seq",
                (run_id,),
            )
            rows = await cursor.fetchall()
        return [CheckpointInfo(*row) for row in rows]

    async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
        """The id and bytes of the checkpoint of ``run_id`` saved last."""
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT checkpoint_id, data FROM plait_checkpoints WHERE run_id = %s"
                " ORDER BY seq DESC LIMIT 1",
                (run_id,),
            )
            row = await cursor.fetchone()
        return None if row is None else (row[0], bytes(row[1]))

    async def _heads(self, limit: int | None) -> Sequence[tuple[str, str, bytes, float | None]]:
        """Each run's latest row and first time: one query grouping by run."""
        async with self._connection() as conn:
            cursor = await conn.execute(_RUNS_SQL, (limit,))
            rows = await cursor.fetchall()
        return [(run_id, last, bytes(data), first) for last, run_id, data, first in rows]

    async def list_runs(self, query: RunQuery) -> RunPage:
        """A page of the run index (:class:`plait_durable.RunIndex`), newest first: one
        query on ``plait_runs``, by an index on the column filtered and ``last_seq``."""
        sql, params = self._page_sql(query, placeholder="%s")
        async with self._connection() as conn:
            cursor = await conn.execute(sql, params)
            rows = await cursor.fetchall()
        return self._page_of_rows(query, rows)

    async def _reindex_run(self, conn: psycopg.AsyncConnection[Any], run_id: str) -> None:
        """Rebuild the index row of ``run_id`` from its stored checkpoints (inside the
        caller's transaction): after a delete its latest or first checkpoint may be gone."""
        await conn.execute("DELETE FROM plait_runs WHERE run_id = %s", (run_id,))
        cursor = await conn.execute(
            "SELECT seq, checkpoint_id, data, status, superstep, created_at"
            " FROM plait_checkpoints WHERE run_id = %s ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        latest = await cursor.fetchone()
        if latest is None:
            return
        cursor = await conn.execute(
            "SELECT checkpoint_id, created_at, data FROM plait_checkpoints WHERE run_id = %s"
            " ORDER BY seq LIMIT 1",
            (run_id,),
        )
        first = await cursor.fetchone()
        assert first is not None
        try:
            checkpoint = self._decode_named(bytes(latest[2]), run_id, latest[1])
            first_body = self._decode_named(bytes(first[2]), run_id, first[0])
        except CheckpointError as exc:
            # listed from its columns, saying why the rest is missing (loading it says it too)
            row = (run_id, None, latest[3], latest[4], 0, str(exc), first[1], latest[5], None, None)
            await conn.execute(_UPSERT_RUN, (*row, latest[0]))
            return
        summary = RunSummary.from_checkpoints(
            checkpoint, created_at=first[1], first_metadata=first_body.metadata
        )
        await conn.execute(_UPSERT_RUN, (*summary.as_row(), latest[0]))

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "DELETE FROM plait_checkpoints WHERE checkpoint_id = %s RETURNING run_id",
                (checkpoint_id,),
            )
            gone = await cursor.fetchone()
            if gone is not None:
                await self._reindex_run(conn, gone[0])
                await self._sweep(conn, gone[0])

    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went."""
        async with self._connection() as conn, conn.transaction():
            # prune_plan's rule, with the bases read from the kept checkpoints' verified
            # bodies; the first checkpoint stays while anything is kept (the topology).
            cursor = await conn.execute(
                "SELECT seq, checkpoint_id, data FROM plait_checkpoints WHERE run_id = %s"
                " ORDER BY seq DESC LIMIT %s FOR UPDATE",
                (run_id, keep_last),
            )
            kept = await cursor.fetchall()
            needed: set[str] = set()
            for _seq, checkpoint_id, data in kept:
                body = self._decode(bytes(data), run_id, checkpoint_id)
                if body.base_id is not None:
                    needed.add(body.base_id)
            if kept:
                cursor = await conn.execute(
                    "SELECT checkpoint_id FROM plait_checkpoints WHERE run_id = %s"
                    " ORDER BY seq LIMIT 1",
                    (run_id,),
                )
                first = await cursor.fetchone()
                if first is not None:
                    needed.add(first[0])
            below = min((row[0] for row in kept), default=None)
            cursor = await conn.execute(
                "DELETE FROM plait_checkpoints WHERE run_id = %s"
                " AND (%s::bigint IS NULL OR seq < %s::bigint)"
                " AND NOT (checkpoint_id = ANY(%s::text[]))",
                (run_id, below, below, sorted(needed)),
            )
            removed = cursor.rowcount
            await self._reindex_run(conn, run_id)
            await self._sweep(conn, run_id)
            return removed

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its journal; return how many
        checkpoints went."""
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "DELETE FROM plait_checkpoints WHERE run_id = %s", (run_id,)
            )
            await conn.execute("DELETE FROM plait_runs WHERE run_id = %s", (run_id,))
            if await self._journal_exists(conn):
                await conn.execute("DELETE FROM plait_journal WHERE run_id = %s", (run_id,))
            removed = cursor.rowcount
            await self._sweep(conn, run_id)
            return removed

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await super().aclose()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
