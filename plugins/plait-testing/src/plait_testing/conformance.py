"""Conformance suites for checkpoint store and worker authors: a crash torture suite and a
lease suite, as pytest test classes to mix into a store's test class.

Both use the fixtures :class:`plait_testing.stores.CheckpointStoreContract` asks for: a
``store`` fixture (an open store) and ``reopen(store)`` (a second, independent store
object on the same backing, as another process would open). So a store that passes the
contract adds them as two more bases::

    class TestMyStore(CheckpointStoreContract, CrashConformance, LeaseConformance):
        ...

They need ``plait-durable`` and ``plait-builders`` (``pip install
plait-testing[durable,schedules]``).

:class:`CrashConformance`
    A run is killed at every commit point (just before, and just after, each checkpoint
    write) and at seeded random moments, then resumed through another store object; its
    outputs must equal an uninterrupted run's, every step of it must have run, and a step
    may have run again only in the superstep the kill interrupted. A kill here is what
    ``kill -9`` leaves a store: the dead run's lease names a process that is gone, it
    releases nothing, and no write starts after the kill (a write in flight at a random
    kill is cut off where it is). It runs in the test's process, so it runs on an
    in-memory store too; ``tests/durable/test_kill_points.py`` in Plait's repository does
    the same with real ``SIGKILL``\\s of subprocesses.

:class:`LeaseConformance`
    Racing takeovers (one winner, fresh tokens), fencing after a pause (a holder that
    stalled past its lease writes nothing once another took it over, through any store
    object), and clock skew: a holder whose clock is off by less than :data:`SKEW_BOUND`
    of ``lease_ttl`` keeps its lease while it renews (Plait's runs renew every third of
    ``lease_ttl``); beyond it, a rival can take the lease early, and fencing still refuses
    every write of the skewed holder.

A lease's expiry is the writer's clock plus ``ttl``, compared with the reader's clock: a
holder whose clock runs ``s`` seconds behind writes leases that end ``s`` seconds early
in everyone else's time, which is what the skew tests write (``ttl - s``).
"""

from __future__ import annotations

import os
import random
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from plait import Never, WorkflowContext, executor
from plait_durable import CheckpointStore, Lease, LeaseHolder, RunLeaseError

from .stores import SameBacking, _elsewhere, dead_pid, make_checkpoint, new_run_id

__all__ = [
    "SKEW_BOUND",
    "CrashConformance",
    "KillingStore",
    "LeaseConformance",
    "Killed",
    "torture_workflow",
]

#: The clock skew between hosts a lease tolerates, as a fraction of ``lease_ttl``: a
#: holder renews every third of it, so a lease that ends up to two thirds early in a
#: rival's time is still renewed before the rival sees it expire (less any pause of the
#: renewer). The lease conformance tests skew by up to half of ``lease_ttl``.
SKEW_BOUND = 2 / 3

#: Steps of the torture workflow's chain (one superstep each).
CHAIN = 5


class Killed(Exception):
    """What a killed :class:`KillingStore` raises to a call made after the kill (the
    run's own cleanup, which a dead process never makes); the write that killed it never
    returns, until the test cancels the run."""


class KillingStore:
    """A store that dies like a ``kill -9``-ed process: every method goes to ``store``
    until the kill; from then on nothing reaches it (writes, lease renewals and releases
    are dropped), and the write that killed it never returns.

    :param store: the store the run writes to.
    :param kill_at: the commit (``save`` or ``save_many`` call, counted from 0) that kills
        it, or ``None`` (only :meth:`kill` kills it).
    :param after: kill just after that commit is written (else just before).
    """

    def __init__(self, store: Any, *, kill_at: int | None = None, after: bool = False) -> None:
        self.store = store
        self.kill_at = kill_at
        self.after = after
        #: commits seen so far (written or not)
        self.commits = 0
        #: whether it was killed
        self.dead = False
        self.killed = anyio.Event()
        self._holder = LeaseHolder(socket.gethostname(), dead_pid(), time.time(), "")

    def kill(self) -> None:
        """Kill it now: nothing reaches the store from here on."""
        self.dead = True
        self.killed.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _gone(self) -> None:
        if self.dead:  # (a cleanup after the kill: a dead process makes none)
            raise Killed("the process is gone")

    async def _commit(self, write: Callable[[], Any]) -> None:
        self._gone()
        index, self.commits = self.commits, self.commits + 1
        if index == self.kill_at and not self.after:
            self.kill()
            await anyio.sleep_forever()
        await write()
        if index == self.kill_at:
            self.kill()
            await anyio.sleep_forever()

    async def save(self, checkpoint: Any, *, lease: Lease | None = None) -> None:
        await self._commit(lambda: self.store.save(checkpoint, lease=lease))

    async def save_many(self, checkpoints: Any, *, lease: Lease | None = None) -> None:
        await self._commit(lambda: self.store.save_many(checkpoints, lease=lease))

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        self._gone()
        # the lease names a process of this host that is gone: free at once after the kill,
        # as a real kill -9's lease is on its host
        holder = LeaseHolder(self._holder.host, self._holder.pid, time.time(), uuid.uuid4().hex)
        lease: Lease = await self.store.acquire_lease(run_id, ttl=ttl, holder=holder)
        return lease

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        if self.dead:
            return lease
        renewed: Lease = await self.store.renew_lease(lease, ttl=ttl)
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        if not self.dead:
            await self.store.release_lease(lease)


def torture_workflow(effects: list[tuple[int, str, str]], sleep: float = 0.0) -> Any:
    """The workflow the crash suite runs: ``src`` fans out to ``quick`` and a chain of
    :data:`CHAIN` steps that keep executor state, and a fan-in ``join`` waits for both
    (so a held message is in every checkpoint). Every invocation appends ``(superstep,
    executor id, idempotency key)`` to ``effects`` (its side effect) before it sends."""
    from plait_builders import WorkflowBuilder

    def record(ctx: WorkflowContext[Any, Any]) -> None:
        effects.append((ctx.superstep, ctx.executor_id, ctx.idempotency_key))

    @executor(id="src")
    async def src(x: int, ctx: WorkflowContext[int]) -> None:
        record(ctx)
        await ctx.send_message(x)

    @executor(id="quick")
    async def quick(x: int, ctx: WorkflowContext[int]) -> None:
        record(ctx)
        await ctx.send_message(x * 1000)

    def slow(i: int) -> Any:
        @executor(id=f"slow{i}")
        async def step(x: int, ctx: WorkflowContext[int]) -> None:
            record(ctx)
            ctx.state["visits"] = ctx.state.get("visits", 0) + 1
            await anyio.sleep(sleep)
            await ctx.send_message(x + i + ctx.state["visits"])

        return step

    @executor(id="join")
    async def join(parts: list[int], ctx: WorkflowContext[Never, list[int]]) -> None:
        record(ctx)
        await ctx.yield_output(parts)

    chain = [slow(i) for i in range(CHAIN)]
    builder = WorkflowBuilder("torture").add_fan_out(src, [quick, chain[0]])
    for a, b in zip(chain, chain[1:]):
        builder.add_edge(a, b)
    return builder.add_fan_in([quick, chain[-1]], join).set_start(src).build()


class CrashConformance(SameBacking):
    """The crash torture suite (see the module's docstring). Mix it into a store's test
    class, which provides the ``store`` fixture and ``reopen(store)``.

    :cvar random_kills: kills at seeded random moments (``PLAIT_TORTURE_KILLS`` overrides).
    :cvar seed: their seed (``PLAIT_TORTURE_SEED`` overrides).
    """

    random_kills = 6
    seed = 41

    async def _clean(self, store: Any) -> tuple[Any, list[tuple[int, str, str]], int, float]:
        effects: list[tuple[int, str, str]] = []
        counting = KillingStore(store)
        began = time.monotonic()
        result = await torture_workflow(effects, 0.005).run(
            7, checkpoint=counting, run_id=new_run_id("clean")
        )
        assert result.status.value == "idle", result
        return result.outputs, effects, counting.commits, time.monotonic() - began

    async def _victim_then_resume(
        self, store: Any, victim: KillingStore, delay: float | None
    ) -> tuple[Any, list[tuple[int, str, str]], int]:
        """Run on ``victim`` until it is killed (at its commit, or after ``delay``
        seconds), then resume through another store object; the outputs, every side
        effect of both, and how many of them the victim made."""
        run_id = new_run_id("torture")
        effects: list[tuple[int, str, str]] = []
        finished: list[Any] = []

        async def victim_run() -> None:
            workflow = torture_workflow(effects, 0.005)
            try:
                finished.append(await workflow.run(7, checkpoint=victim, run_id=run_id))
            except Exception:
                if not victim.dead:
                    raise
                # killed: a call it made after the kill, before the cancellation reached
                # it (a store that writes in a thread), met the dead store
                await anyio.sleep_forever()

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(victim_run)
                if delay is not None:
                    await anyio.sleep(delay)
                    victim.kill()
                else:
                    await victim.killed.wait()
                group.cancel_scope.cancel()
        before = len(effects)
        resumer = self.reopen(store)
        try:
            with anyio.fail_after(120):
                if finished:  # (a random kill after the run had ended)
                    return finished[0].outputs, effects, before
                if await resumer.latest(run_id) is None:  # killed before its first commit
                    result = await torture_workflow(effects).run(
                        7, checkpoint=resumer, run_id=run_id
                    )
                else:
                    result = await torture_workflow(effects).resume(run_id, resumer)
        finally:
            with anyio.move_on_after(10, shield=True):
                await resumer.aclose()
        assert result.status.value == "idle", result
        return result.outputs, effects, before

    @staticmethod
    def _check(
        clean: list[tuple[int, str, str]],
        outputs: Any,
        expected: Any,
        effects: list[tuple[int, str, str]],
        before: int,
        where: str,
    ) -> None:
        assert outputs == expected, f"{where}: outputs {outputs!r}, clean {expected!r}"
        ran = Counter((superstep, eid) for superstep, eid, _ in effects)
        assert set(ran) == {(s, e) for s, e, _ in clean}, f"{where}: steps lost or added"
        victim = {(s, e) for s, e, _ in effects[:before]}
        last = max((s for s, _ in victim), default=-1)
        for (superstep, eid), count in ran.items():
            # a step runs again only in the superstep the kill interrupted (at most once)
            limit = 2 if superstep == last else 1
            assert count <= limit, f"{where}: {eid} of superstep {superstep} ran {count}x"

    async def test_a_run_killed_at_every_commit_point_resumes_to_the_clean_outputs(
        self, store: CheckpointStore
    ) -> None:
        expected, clean, commits, _ = await self._clean(store)
        assert commits >= CHAIN, f"the run committed {commits} times"
        for kill_at in range(commits):
            for after in (False, True):
                victim = KillingStore(self.reopen(store), kill_at=kill_at, after=after)
                try:
                    outputs, effects, before = await self._victim_then_resume(store, victim, None)
                finally:
                    with anyio.move_on_after(10, shield=True):
                        await victim.store.aclose()
                where = f"killed {'after' if after else 'before'} commit {kill_at}"
                self._check(clean, outputs, expected, effects, before, where)

    async def test_a_run_killed_at_random_moments_resumes_to_the_clean_outputs(
        self, store: CheckpointStore
    ) -> None:
        expected, clean, _, took = await self._clean(store)
        kills = int(os.environ.get("PLAIT_TORTURE_KILLS", self.random_kills))
        rng = random.Random(int(os.environ.get("PLAIT_TORTURE_SEED", self.seed)))
        for n in range(kills):
            delay = rng.uniform(0, took)
            victim = KillingStore(self.reopen(store))
            try:
                outputs, effects, before = await self._victim_then_resume(store, victim, delay)
            finally:
                with anyio.move_on_after(10, shield=True):
                    await victim.store.aclose()
            self._check(clean, outputs, expected, effects, before, f"kill {n} at {delay:.3f} s")


class LeaseConformance(SameBacking):
    """The lease suite (see the module's docstring). Mix it into a store's test class,
    which provides the ``store`` fixture and ``reopen(store)``.

    :cvar racers: store objects racing for one expired lease.
    :cvar ttl: the lease time-to-live the skew tests use, in seconds (a holder half a
        ttl behind renews a sixth of it before a rival would see its lease expire: the
        margin for a loaded machine's scheduling delays).
    :cvar tries: rounds of a skew test before a machine too loaded to show anything
        fails it.
    """

    racers = 8
    ttl = 4.5
    tries = 3

    async def test_racing_takeovers_grant_the_lease_once_with_a_fresh_token(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id("race")
        old = await store.acquire_lease(run_id, ttl=0.05, holder=_elsewhere("old"))
        await anyio.sleep(0.2)  # expired, never renewed: free for the taking
        racers = [self.reopen(store) for _ in range(self.racers)]
        won: list[Lease] = []
        refused: list[RunLeaseError] = []

        async def take(racer: Any, n: int) -> None:
            try:
                won.append(await racer.acquire_lease(run_id, ttl=30, holder=_elsewhere(f"r{n}")))
            except RunLeaseError as exc:
                refused.append(exc)

        try:
            async with anyio.create_task_group() as group:
                for n, racer in enumerate(racers):
                    group.start_soon(take, racer, n)
        finally:
            for racer in racers:
                await racer.aclose()
        assert len(won) == 1 and len(refused) == self.racers - 1, (won, refused)
        assert won[0].token > old.token
        # the winner writes; the old holder cannot
        await store.save(make_checkpoint(run_id), lease=won[0])
        with pytest.raises(RunLeaseError):
            await store.save(make_checkpoint(run_id), lease=old)
        await store.release_lease(won[0])

    async def test_a_holder_paused_past_its_lease_is_fenced_after_a_takeover(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id("pause")
        paused = await store.acquire_lease(run_id, ttl=0.1, holder=_elsewhere("paused"))
        first = make_checkpoint(run_id, 0)
        await store.save(first, lease=paused)
        await anyio.sleep(0.3)  # a GC pause, a stopped VM: the lease runs out meanwhile
        other = self.reopen(store)
        try:
            taker = await other.acquire_lease(run_id, ttl=30, holder=_elsewhere("taker"))
            taken = make_checkpoint(run_id, 1, parent_id=first.checkpoint_id)
            await other.save(taken, lease=taker)
            # the paused holder wakes up: every write it tries is refused, through any
            # store object, and its release leaves the new lease alone
            for writer in (store, other):
                with pytest.raises(RunLeaseError):
                    await writer.save(make_checkpoint(run_id, 1), lease=paused)
                with pytest.raises(RunLeaseError):
                    await writer.renew_lease(paused, ttl=30)
            await store.release_lease(paused)
            with pytest.raises(RunLeaseError):
                await store.acquire_lease(run_id, ttl=30, holder=_elsewhere("third"))
            assert await store.latest(run_id) == taken
            await other.release_lease(taker)
        finally:
            await other.aclose()

    @pytest.mark.parametrize("skew", [-0.5, 0.5])
    async def test_clock_skew_within_the_bound_keeps_a_renewed_lease(
        self, store: CheckpointStore, skew: float
    ) -> None:
        """``skew`` (a fraction of ``ttl``): the holder's clock runs behind (negative) or
        ahead of the rival's. The holder renews every third of ``ttl``, as runs do.

        A loaded machine can hold this process back past the lease's length, and then a
        rival's takeover is right, not a store's fault: such a round says it was starved
        (measured, before each step) and is tried again, up to :attr:`tries` times."""
        assert abs(skew) < SKEW_BOUND
        for _ in range(self.tries):
            if await self._skewed_holder_keeps_its_lease(store, skew):
                return
        raise AssertionError(
            f"each of {self.tries} rounds was held back past the lease's length "
            "by the machine's load: nothing about the store was shown"
        )

    async def _skewed_holder_keeps_its_lease(self, store: CheckpointStore, skew: float) -> bool:
        """One round of the skew test; ``False`` when the process was starved."""
        ttl = self.ttl
        written = ttl + skew * ttl  # the lease's length in the rival's time
        run_id = new_run_id("skew")
        rival = self.reopen(store)
        try:
            lease = await store.acquire_lease(run_id, ttl=written, holder=_elsewhere("skewed"))
            renewed = time.monotonic()
            for _ in range(3):  # a ttl of renewals
                await anyio.sleep(ttl / 3)
                if time.monotonic() - renewed > written * 0.9:
                    return False  # (starved: the lease may have run out meanwhile)
                with pytest.raises(RunLeaseError):
                    await rival.acquire_lease(run_id, ttl=ttl, holder=_elsewhere("rival"))
                if time.monotonic() - renewed > written * 0.9:
                    return False
                lease = await store.renew_lease(lease, ttl=written)
                renewed = time.monotonic()
            await store.save(make_checkpoint(run_id), lease=lease)
            await store.release_lease(lease)
            taken = await rival.acquire_lease(run_id, ttl=ttl, holder=_elsewhere("rival"))
            assert taken.token > lease.token
            await rival.release_lease(taken)
            return True
        finally:
            await rival.aclose()

    async def test_clock_skew_beyond_the_bound_is_still_fenced(
        self, store: CheckpointStore
    ) -> None:
        """A holder whose clock runs further behind than the bound loses its lease early
        to a rival; it then writes nothing (the fencing token, not the clock, decides)."""
        run_id = new_run_id("skewed")
        ttl = self.ttl
        lease = await store.acquire_lease(
            run_id, ttl=ttl * (1 - SKEW_BOUND) / 4, holder=_elsewhere("behind")
        )
        await anyio.sleep(ttl / 3)  # the holder's first renewal is due only now
        rival = self.reopen(store)
        try:
            taken = await rival.acquire_lease(run_id, ttl=30, holder=_elsewhere("rival"))
            assert taken.token > lease.token
            with pytest.raises(RunLeaseError):
                await store.renew_lease(lease, ttl=ttl)
            with pytest.raises(RunLeaseError):
                await store.save(make_checkpoint(run_id), lease=lease)
            await rival.release_lease(taken)
        finally:
            await rival.aclose()
