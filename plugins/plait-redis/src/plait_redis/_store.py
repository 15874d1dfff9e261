"""``redis://`` and ``rediss://``: checkpoints in Redis, through redis-py's asyncio client.

Keys (``PREFIX`` is ``plait:`` unless the URL says ``?prefix=``)::

    PREFIX cp:<checkpoint>   hash: run_id, seq, info (listing fields, JSON), data (bytes)
    PREFIX run:<run>         sorted set: checkpoint ids scored by seq
    PREFIX seq               counter: the last seq handed out
    PREFIX runs              sorted set: run ids scored by the seq of their latest save
    PREFIX lease:<run>       hash: token, holder (JSON), expires — the run's lease
    PREFIX blobs:<run>       hash: sha256 hex -> bytes, the run's blobs (plait_durable.BlobStore)
    PREFIX blobrefs:<run>    hash: sha256 hex -> the hashes that blob names (space-separated)
    PREFIX journal:<run>     sorted set: the run's journal events ("<seq> <JSON>") by seq
    PREFIX journal-seq:<run> counter: the last journal seq handed out for the run

``seq`` comes from ``INCR`` on one counter, so it grows with every save even when
superstep numbers repeat after a resume; a run's sorted set orders it by ``seq``, and
``runs`` orders the runs by their latest save (``ZADD GT`` in the save's transaction; a
run's entry goes when its last checkpoint does). (One
counter for all runs rather than one per run: nothing to clean up when a run goes, and
no way for a deleted counter to restart below a racing save.) A save writes
the hash and the sorted-set entry in one ``MULTI``/``EXEC`` transaction (after ``WATCH``
on the hash, so two saves of one id cannot both write): a checkpoint is wholly there or
absent. A checkpoint's new blobs go into the run's blob hash (``HSETNX``) in that same
transaction. How durable an ``EXEC`` is depends on the server's persistence settings
(``appendonly yes`` with ``appendfsync always`` for "durable before the next superstep").

One writer per run: a save with a lease ``WATCH``es the run's lease hash and writes only
while its token is the lease's, in the same ``MULTI``/``EXEC``; taking a lease over
changes the hash, so a stale writer's ``EXEC`` fails and it sees the new token. Lease
hashes stay after release (tokens never repeat for a run).

Retention: with ``?retention=SECONDS`` (or ``30m``, ``12h``, ``7d``, ``2w``) in the URL,
every key of a run (its checkpoints, its sorted set, its lease) expires that long after the
run's last save: each save renews them all in its transaction (one script, server-side),
so a delta never outlives its base, and ``runs()`` drops a run whose keys are gone.

Time bound: every call finishes within ``timeout`` seconds (default 30, ``?timeout=`` in
the URL; it is also the socket timeout unless ``socket_timeout`` is set) or fails with
:class:`~plait_durable.StoreUnavailableError`.

redis-py's asyncio client needs asyncio; these stores do not run on trio.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import redis.asyncio
import redis.exceptions
from plait_durable import (
    Checkpoint,
    CheckpointInfo,
    CorruptCheckpointError,
    Lease,
    LeaseHolder,
    RunInfo,
    RunPage,
    RunQuery,
    RunSummary,
)
from plait_durable.kit import CheckpointStoreBase
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

__all__ = ["RedisCheckpointStore", "redact_url"]

#: ``redact_url(url)``: ``url`` with its password replaced by ``***`` (the store kit's).
redact_url = CheckpointStoreBase.redact_url

#: Seconds to wait for a TCP connection unless the URL sets ``socket_connect_timeout``.
DEFAULT_CONNECT_TIMEOUT = 5.0
#: Seconds any one call may take unless the URL sets ``timeout``.
DEFAULT_TIMEOUT = 30.0
_UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class RedisCheckpointStore(CheckpointStoreBase):
    """Checkpoints in Redis (``redis://[:password@]host:port/db?prefix=plait:``).

    :param url: a redis-py URL; its query may set ``prefix`` (the key prefix, default
        ``plait:``) and any redis-py connection option (``socket_connect_timeout``,
        ``socket_timeout``, …). ``rediss://`` connects over TLS.

    The client connects on first use. Connection failures (after a few quick retries)
    are :class:`~plait_durable.StoreUnavailableError` naming the URL without its password.
    """

    KIND = "Redis"

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("redis", "rediss", "unix"):
            raise ValueError(f"not a Redis store url: {self.redact_url(url)!r}")
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        self.prefix = options.pop("prefix", "plait:")
        try:
            self.timeout = float(options.pop("timeout", DEFAULT_TIMEOUT))
        except ValueError:
            raise ValueError(f"timeout in {self.redact_url(url)!r} must be seconds") from None
        options.setdefault("socket_timeout", str(self.timeout))
        retention = options.pop("retention", None)
        self.retention: int | None = None
        if retention is not None:
            try:
                self.retention = max(int(self._parse_age(retention)), 1)
            except ValueError as exc:
                raise ValueError(f"retention in {self.redact_url(url)!r}: {exc}") from None
        if "decode_responses" in options:
            raise ValueError(
                f"{self.redact_url(url)!r}: decode_responses cannot be set; checkpoints are bytes"
            )
        options.setdefault("socket_connect_timeout", str(DEFAULT_CONNECT_TIMEOUT))
        self.url = self.redact_url(url)
        self._client_url = urlunsplit(parts._replace(query=urlencode(options)))
        self._client: redis.asyncio.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(cls, url: str) -> RedisCheckpointStore:
        """Open a ``redis://`` or ``rediss://`` URL."""
        return cls(url)

    def __repr__(self) -> str:
        return f"<RedisCheckpointStore {self.url!r} prefix={self.prefix!r}>"

    # -- keys and the client -----------------------------------------------------------

    def _cp_key(self, checkpoint_id: str) -> str:
        return f"{self.prefix}cp:{checkpoint_id}"

    def _run_key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    def _seq_key(self) -> str:
        return f"{self.prefix}seq"

    def _runs_key(self) -> str:
        return f"{self.prefix}runs"

    @asynccontextmanager
    async def _redis(self) -> AsyncIterator[redis.asyncio.Redis]:
        """The client, with connection failures turned into StoreUnavailableError."""
        self._check_open()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "plait-redis needs asyncio: redis-py's asyncio client does not run on trio"
            ) from None
        if self._client is None:
            self._client = redis.asyncio.Redis.from_url(
                self._client_url,
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=3),
            )
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(
                f"{self!r} was first used in another event loop; open one store per loop"
            )
        try:
            with anyio.fail_after(self.timeout):
                yield self._client
        except TimeoutError as exc:
            raise self._unavailable(f"did not answer within {self.timeout} s") from exc
        except _UNAVAILABLE as exc:
            raise self._unavailable(f"is unreachable: {exc}") from exc

    def _lease_key(self, run_id: str) -> str:
        return f"{self.prefix}lease:{run_id}"

    def _blobs_key(self, run_id: str) -> str:
        return f"{self.prefix}blobs:{run_id}"

    def _blob_refs_key(self, run_id: str) -> str:
        return f"{self.prefix}blobrefs:{run_id}"

    # -- the protocol ------------------------------------------------------------------

    def _journal_key(self, run_id: str) -> str:
        return f"{self.prefix}journal:{run_id}"

    def _journal_seq_key(self, run_id: str) -> str:
        return f"{self.prefix}journal-seq:{run_id}"

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        stored: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        """Write the checkpoint, its new ``blobs`` and its journal lines in one
        ``MULTI``/``EXEC``, ``WATCH``ing its key (and with ``lease``, the run's lease)."""
        key = self._cp_key(checkpoint.checkpoint_id)
        lease_key = self._lease_key(checkpoint.run_id)
        info = json.dumps(self._info_fields(checkpoint), ensure_ascii=False)
        async with self._redis() as client, client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    if lease is not None:
                        await pipe.watch(key, lease_key)
                        token, holder = await pipe.hmget(lease_key, ["token", "holder"])
                        if token is None or int(token) != lease.token:
                            await pipe.unwatch()  # type: ignore[no-untyped-call]
                            raise self._lost(lease, LeaseHolder.from_json(holder))
                    else:
                        await pipe.watch(key)
                    existing = await pipe.hget(key, "data")
                    if existing is not None:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        if existing != data:
                            raise self._duplicate(checkpoint)
                        return
                    seq = await client.incr(self._seq_key())
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(
                        key,
                        mapping={
                            "run_id": checkpoint.run_id,
                            "seq": seq,
                            "info": info,
                            "data": data,
                        },
                    )
                    pipe.zadd(self._run_key(checkpoint.run_id), {checkpoint.checkpoint_id: seq})
                    pipe.zadd(self._runs_key(), {checkpoint.run_id: seq}, gt=True)
                    blobs_key = self._blobs_key(checkpoint.run_id)
                    refs_key = self._blob_refs_key(checkpoint.run_id)
                    for digest, blob in sorted((blobs or {}).items()):
                        pipe.hsetnx(blobs_key, digest, blob)
                        named = self._child_refs(bytes(blob))
                        if named:
                            pipe.hsetnx(refs_key, digest, " ".join(named))
                    if stored:
                        await self._queue_events(client, pipe, checkpoint.run_id, stored)
                    if self.retention is not None:
                        pipe.expire(blobs_key, self.retention)
                        pipe.expire(refs_key, self.retention)
                        pipe.eval(
                            _RENEW_RUN,
                            2,
                            self._run_key(checkpoint.run_id),
                            lease_key,
                            self.retention,
                            self._cp_key(""),
                        )
                    await pipe.execute()
                    return
                except redis.exceptions.WatchError:
                    continue  # someone saved this id meanwhile: look again

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` (one that is missing is left out)."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        async with self._redis() as client:
            values = await client.hmget(self._blobs_key(run_id), wanted)
        return {h: _bytes(v) for h, v in zip(wanted, values) if v is not None}

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The blobs of ``run_id`` among ``hashes`` and every blob they reach, in one round
        trip (a script walks each blob's references on the server)."""
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        async with self._redis() as client:
            # the script walks the references only: bytes copied through Lua cost more
            # than a second round trip for them
            reached = await client.eval(_CLOSURE, 1, self._blob_refs_key(run_id), *wanted)
            values = await client.hmget(self._blobs_key(run_id), reached) if reached else []
        return {_text(h): _bytes(v) for h, v in zip(reached, values) if v is not None}

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The hashes of every blob ``run_id`` holds."""
        async with self._redis() as client:
            return sorted(_text(h) for h in await client.hkeys(self._blobs_key(run_id)))

    async def _queue_events(
        self, client: redis.asyncio.Redis, pipe: Any, run_id: str, stored: Sequence[str]
    ) -> None:
        """Number ``stored`` (one ``INCRBY``; a transaction that then fails leaves a gap)
        and queue them in ``pipe``'s ``MULTI``."""
        last = int(await client.incrby(self._journal_seq_key(run_id), len(stored)))
        first = last - len(stored) + 1
        members = {f"{seq} {text}": seq for seq, text in enumerate(stored, start=first)}
        pipe.zadd(self._journal_key(run_id), members)
        if self.retention is not None:
            pipe.expire(self._journal_key(run_id), self.retention)
            pipe.expire(self._journal_seq_key(run_id), self.retention)

    async def _append(self, run_id: str, stored: Sequence[str], lease: Lease | None) -> None:
        """Append journal lines of ``run_id`` in one ``MULTI``/``EXEC`` (with ``lease``,
        ``WATCH``ing it as a save does)."""
        lease_key = self._lease_key(run_id)
        async with self._redis() as client, client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    if lease is not None:
                        await pipe.watch(lease_key)
                        token, holder = await pipe.hmget(lease_key, ["token", "holder"])
                        if token is None or int(token) != lease.token:
                            await pipe.unwatch()  # type: ignore[no-untyped-call]
                            raise self._lost(lease, LeaseHolder.from_json(holder))
                    pipe.multi()  # type: ignore[no-untyped-call]
                    await self._queue_events(client, pipe, run_id, stored)
                    await pipe.execute()
                    return
                except redis.exceptions.WatchError:
                    continue  # the lease changed meanwhile: look again

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """The journal lines of ``run_id`` after ``after`` (one ``ZRANGEBYSCORE``)."""
        async with self._redis() as client:
            members = await client.zrangebyscore(
                self._journal_key(run_id), f"({after}", "+inf", start=0, num=limit
            )
        out = []
        for member in members:
            seq, _, text = _text(member).partition(" ")
            if not seq.isdigit():
                raise CorruptCheckpointError(
                    f"the journal of run {run_id!r} in {self.url} holds a damaged entry"
                )
            out.append((int(seq), text))
        return out

    async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
        """The run and bytes of ``checkpoint_id`` (one ``HMGET``)."""
        async with self._redis() as client:
            run_id, data = await client.hmget(self._cp_key(checkpoint_id), ["run_id", "data"])
        return None if data is None else (_text(run_id), _bytes(data))

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """Take the lease of ``run_id`` (see :class:`~plait_durable.Lease`)."""
        return await self._lease(run_id, None, ttl, holder)

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now, unless it was taken over."""
        return await self._lease(lease.run_id, lease, ttl, None)

    async def _release(self, lease: Lease) -> None:
        """Clear the holder of ``lease`` if its token is still the run's."""
        await self._lease(lease.run_id, lease, 0.0, None)

    async def _lease(
        self, run_id: str, lease: Lease | None, ttl: float, holder: LeaseHolder | None
    ) -> Lease:
        key = self._lease_key(run_id)
        async with self._redis() as client, client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    token, raw, expires = await pipe.hmget(key, ["token", "holder", "expires"])
                    current = None
                    if token is not None:
                        current = (int(token), LeaseHolder.from_json(raw), float(expires or 0))
                    if lease is None:
                        new = self._take_lease(run_id, current, holder, ttl)
                    elif current is None or current[0] != lease.token:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        if ttl <= 0:  # releasing a lease that was taken over: nothing to do
                            return lease
                        raise self._lost(lease, current[1] if current else None)
                    else:
                        new = Lease(run_id, lease.token, lease.holder, time.time() + ttl)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hset(
                        key,
                        mapping={
                            "token": new.token,
                            "holder": new.holder.to_json() if ttl > 0 else "",
                            "expires": new.expires_at if ttl > 0 else 0.0,
                        },
                    )
                    await pipe.execute()
                    return new
                except redis.exceptions.WatchError:
                    continue  # the lease changed meanwhile: decide again

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The checkpoints of ``run_id`` in the order they were saved."""
        async with self._redis() as client:
            ids = await client.zrange(self._run_key(run_id), 0, -1)
            return await self._infos(client, [_text(i) for i in ids])

    async def _infos(
        self, client: redis.asyncio.Redis, checkpoint_ids: Sequence[str]
    ) -> builtins.list[CheckpointInfo]:
        """The listing fields of ``checkpoint_ids``; ids whose hash is gone are left out."""
        if not checkpoint_ids:
            return []
        async with client.pipeline(transaction=False) as pipe:
            for checkpoint_id in checkpoint_ids:
                pipe.hget(self._cp_key(checkpoint_id), "info")
            raw = await pipe.execute()
        # An id whose hash is gone was deleted while we listed.
        return [CheckpointInfo(**json.loads(info)) for info in raw if info is not None]

    async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
        """The id and bytes of the checkpoint of ``run_id`` saved last."""
        async with self._redis() as client:
            while True:
                newest = await client.zrange(self._run_key(run_id), -1, -1)
                if not newest:
                    return None
                checkpoint_id = _text(newest[0])
                data = await client.hget(self._cp_key(checkpoint_id), "data")
                if data is not None:
                    return checkpoint_id, _bytes(data)
                # Deleted between the two reads; drop the stray index entry and look again.
                await client.zrem(self._run_key(run_id), checkpoint_id)

    async def delete(self, checkpoint_id: str) -> None:
        """Remove one checkpoint; nothing happens if it is not there."""
        key = self._cp_key(checkpoint_id)
        async with self._redis() as client:
            run_id = await client.hget(key, "run_id")
            if run_id is None:
                return
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                pipe.zrem(self._run_key(_text(run_id)), checkpoint_id)
                await pipe.execute()
            await self._forget_if_empty(client, _text(run_id))
            await self._sweep(client, _text(run_id))

    async def _prune(self, run_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints of ``run_id`` and the bases they
        name; return how many went (reads the kept checkpoints' listing fields only)."""
        return await self._remove(run_id, keep_last)

    async def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its journal; return how many
        checkpoints went."""
        removed = await self._remove(run_id, 0)
        async with self._redis() as client:
            await client.delete(self._journal_key(run_id), self._journal_seq_key(run_id))
        return removed

    async def _remove(self, run_id: str, keep_last: int) -> int:
        run_key = self._run_key(run_id)
        async with self._redis() as client:
            ids = [_text(i) for i in await client.zrange(run_key, 0, -1)]
            cut = max(len(ids) - keep_last, 0)
            # prune_plan's rule, with bases read from the kept checkpoints' verified
            # bodies: older checkpoints go unless a kept one names them as base, and the
            # first stays while anything is kept (it holds the topology).
            needed = {ids[0]} if keep_last and ids else set()
            for checkpoint_id in ids[cut:]:
                data = await client.hget(self._cp_key(checkpoint_id), "data")
                if data is None:
                    continue
                body = self._decode(_bytes(data), run_id, checkpoint_id)
                if body.base_id is not None:
                    needed.add(body.base_id)
            doomed = [i for i in ids[:cut] if i not in needed]
            if not doomed:
                await self._sweep(client, run_id)
                return 0
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(*(self._cp_key(i) for i in doomed))
                pipe.zrem(run_key, *doomed)
                deleted, _ = await pipe.execute()
            await self._forget_if_empty(client, run_id)
            await self._sweep(client, run_id)
        return int(deleted)

    async def _sweep(self, client: redis.asyncio.Redis, run_id: str) -> None:
        """Delete the blobs of ``run_id`` that no remaining checkpoint reaches, in a
        transaction ``WATCH``ing the run's checkpoints: a save racing in (which may use
        a blob that looked unreferenced) makes it look again."""
        blobs_key = self._blobs_key(run_id)
        run_key = self._run_key(run_id)
        async with client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(run_key, blobs_key)
                    raw = await pipe.hgetall(blobs_key)
                    held = {_text(h): _bytes(v) for h, v in raw.items()}
                    if not held:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return
                    stored = []
                    for checkpoint_id in await pipe.zrange(run_key, 0, -1):
                        data = await pipe.hget(self._cp_key(_text(checkpoint_id)), "data")
                        if data is not None:
                            stored.append(_bytes(data))
                    # a checkpoint that does not decode makes its references unknown:
                    # then nothing is doomed, and every blob is kept
                    doomed = self._unreferenced(stored, held)
                    if not doomed:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.hdel(blobs_key, *sorted(doomed))
                    pipe.hdel(self._blob_refs_key(run_id), *sorted(doomed))
                    await pipe.execute()
                    return
                except redis.exceptions.WatchError:
                    continue

    async def _forget_if_empty(self, client: redis.asyncio.Redis, run_id: str) -> None:
        """Drop ``run_id`` from ``runs`` once it has no checkpoint (one script: a save
        racing in keeps it listed)."""
        await client.eval(_FORGET_IF_EMPTY, 2, self._run_key(run_id), self._runs_key(), run_id)

    async def _runs(self, limit: int | None) -> Sequence[RunInfo]:
        """Every run, newest first (by its latest save), at most ``limit``: read from the
        ``runs`` sorted set a page at a time, decoding only each listed run's latest
        checkpoint (a run found empty meanwhile is dropped from the set)."""
        out: builtins.list[RunInfo] = []
        async with self._redis() as client:
            start = 0
            while limit is None or len(out) < limit:
                size = _RUNS_PAGE if limit is None else limit - len(out)
                page = [
                    _text(r)
                    for r in await client.zrevrange(self._runs_key(), start, start + size - 1)
                ]
                start += len(page)
                async with client.pipeline(transaction=False) as pipe:
                    for run_id in page:
                        pipe.zrange(self._run_key(run_id), 0, 0)
                        pipe.zrange(self._run_key(run_id), -1, -1)
                    ends = await pipe.execute()
                async with client.pipeline(transaction=False) as pipe:
                    for first, last in zip(ends[::2], ends[1::2], strict=True):
                        pipe.hget(self._cp_key(_text(first[0]) if first else ""), "info")
                        pipe.hget(self._cp_key(_text(last[0]) if last else ""), "data")
                    stored = await pipe.execute()
                for index, run_id in enumerate(page):
                    info, data, last = stored[2 * index], stored[2 * index + 1], ends[2 * index + 1]
                    if data is None:
                        # no checkpoint left: deleted while we looked, or expired
                        await self._forget_if_empty(client, run_id)
                        continue
                    created = json.loads(info)["created_at"] if info is not None else None
                    out.append(self._run_info(run_id, _text(last[0]), _bytes(data), created))
                if len(page) < size:
                    break
        return out[:limit]

    async def list_runs(self, query: RunQuery) -> RunPage:
        """A page of runs (:class:`plait_durable.RunIndex`), newest first, walking the
        ``runs`` sorted set from the cursor (a save's ``seq``): a page without filters reads
        only its own runs (their first and latest checkpoints); with filters, runs are read
        until one more than the page matched."""
        after = self._cursor_position(query.cursor)
        picked: builtins.list[tuple[RunSummary, float]] = []
        async with self._redis() as client:
            top: str = "+inf" if after is None else f"({after}"
            while len(picked) <= query.limit:
                found: builtins.list[Any] = await client.zrevrangebyscore(
                    self._runs_key(),
                    top,
                    "-inf",
                    start=0,
                    num=max(query.limit + 1, _RUNS_PAGE // 4),
                    withscores=True,
                )
                chunk = [(_text(member), float(score)) for member, score in found]
                if not chunk:
                    break
                for summary, score in zip(await self._summaries(client, chunk), chunk):
                    if summary is not None and query.matches(summary):
                        picked.append((summary, score[1]))
                top = f"({int(chunk[-1][1])}"
        more = len(picked) > query.limit
        page = picked[: query.limit]
        return RunPage([s for s, _ in page], str(int(page[-1][1])) if more else None)

    async def _summaries(
        self, client: redis.asyncio.Redis, chunk: Sequence[tuple[str, float]]
    ) -> builtins.list[RunSummary | None]:
        """The summary of each run in ``chunk`` (``None`` for one deleted meanwhile), from
        its first and latest checkpoints, read in two round trips."""
        async with client.pipeline(transaction=False) as pipe:
            for run_id, _ in chunk:
                pipe.zrange(self._run_key(run_id), 0, 0)
                pipe.zrange(self._run_key(run_id), -1, -1)
            ends = await pipe.execute()
        async with client.pipeline(transaction=False) as pipe:
            for first, last in zip(ends[::2], ends[1::2], strict=True):
                pipe.hget(self._cp_key(_text(first[0]) if first else ""), "data")
                pipe.hget(self._cp_key(_text(last[0]) if last else ""), "data")
            stored = await pipe.execute()
        out: builtins.list[RunSummary | None] = []
        for index, (run_id, _) in enumerate(chunk):
            first_data, last_data = stored[2 * index], stored[2 * index + 1]
            if first_data is None or last_data is None:
                out.append(None)
                continue
            bodies = []
            for data, ids in ((first_data, ends[2 * index]), (last_data, ends[2 * index + 1])):
                checkpoint_id = _text(ids[0])
                bodies.append(self._decode(_bytes(data), run_id, checkpoint_id))
            first, latest = bodies
            out.append(
                RunSummary.from_checkpoints(
                    latest, created_at=first.created_at, first_metadata=first.metadata
                )
            )
        return out

    async def aclose(self) -> None:
        """Close the client's connections."""
        await super().aclose()
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


#: Runs read per round trip when ``runs()`` has no limit.
_RUNS_PAGE = 200
#: Renew the retention of a run's keys: its sorted set, every checkpoint it lists, its
#: lease (KEYS: the run's sorted set, its lease; ARGV: seconds, the checkpoint key prefix).
_RENEW_RUN = """
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  redis.call('EXPIRE', ARGV[2] .. id, ARGV[1])
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 0
"""

#: KEYS: the run's blob references; ARGV: hashes. Returns those hashes and every hash they
#: reach (HMGET in slices: Lua's unpack is bounded); the caller reads the blobs.
_CLOSURE = """
local seen, out, frontier = {}, {}, {}
for _, h in ipairs(ARGV) do seen[h] = true; frontier[#frontier + 1] = h end
while #frontier > 0 do
  local nextf = {}
  for start = 1, #frontier, 500 do
    local slice = {}
    for i = start, math.min(start + 499, #frontier) do slice[#slice + 1] = frontier[i] end
    local refs = redis.call('HMGET', KEYS[1], unpack(slice))
    for i, h in ipairs(slice) do
      out[#out + 1] = h
      if refs[i] then
        for r in string.gmatch(refs[i], '%S+') do
          if not seen[r] then seen[r] = true; nextf[#nextf + 1] = r end
        end
      end
    end
  end
  frontier = nextf
end
return out
"""

_FORGET_IF_EMPTY = """
if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 0
"""


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _bytes(value: object) -> bytes:
    if not isinstance(value, bytes):  # only if decode_responses got past __init__
        raise TypeError(f"expected bytes from Redis, got {type(value).__name__}")
    return value
