"""kill -9 while a run writes blobs (issue 25): between a checkpoint's blobs and the
checkpoint itself, and at random points, on every store that outlives a process. Each
victim leaves no checkpoint with a dangling reference, resumes to the uninterrupted
outputs, and the next prune leaves no unreferenced blob.

The memory store does not outlive its process, so it has no kill test; its blobs are
covered by the contract suite.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from plait_durable import blob_refs, load_blob, open_store, resolve_state
from plait_testing.kills import finish, kill, killed, spawn, wait_until

GROWING = Path(__file__).with_name("growing.py")
STEPS = 24  # growing.STEPS
SEED = int(os.environ.get("PLAIT_KILL_SEED", "25"))


@pytest.fixture(params=["file", "sqlite", "redis", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return f"file://{tmp_path / 'checkpoints'}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue(
        "plait_redis_url" if request.param == "redis" else "plait_postgres_url"
    )
    return url


def _start(
    mode: str, url: str, run_id: str, kill_at: int = 0, bundles: bool = False, hold: str = ""
) -> subprocess.Popen[str]:
    """``growing.py``; ``hold``: ``N:MARKER``, held in superstep N (see its docstring)."""
    env = {
        "PLAIT_KILL_AT_BLOB_SAVE": str(kill_at),
        "PLAIT_GROWING_BUNDLES": "1" if bundles else "0",
        "PLAIT_GROWING_HOLD": hold,
    }
    return spawn(GROWING, mode, url, run_id, env=env)


def _finish(proc: subprocess.Popen[str]) -> Any:
    return json.loads(finish(proc))


async def _check_run(url: str, run_id: str) -> tuple[int, int]:
    """Every checkpoint of the run resolves (no dangling reference): how many there are,
    and how many blobs the run holds."""
    store = open_store(url)
    try:
        infos = await store.list(run_id)
        for info in infos:
            checkpoint = await store.load(info.checkpoint_id)
            await resolve_state(checkpoint.state, store=store, run_id=run_id, where=str(info))
        return len(infos), len(await store.blob_hashes(run_id))  # type: ignore[attr-defined]
    finally:
        await store.aclose()


async def _prune_and_count(url: str, run_id: str) -> tuple[set[str], set[str]]:
    """Prune to the newest checkpoint: the blobs left, and those the kept checkpoints reach."""
    store = open_store(url)
    try:
        await store.prune(run_id, keep_last=1)
        left = set(await store.blob_hashes(run_id))  # type: ignore[attr-defined]
        reached: set[str] = set()
        frontier: set[str] = set()
        for info in await store.list(run_id):
            frontier |= blob_refs((await store.load(info.checkpoint_id)).state)
        while frontier:
            got = await store.get_blobs(run_id, sorted(frontier))  # type: ignore[attr-defined]
            reached |= frontier
            frontier = set().union(*(blob_refs(load_blob(d)) for d in got.values())) - reached
        return left, reached
    finally:
        await store.aclose()


def test_a_kill_between_blobs_and_checkpoint_leaves_no_dangling_reference(
    any_store_url: str,
) -> None:
    url = any_store_url
    expected = _finish(_start("run", url, f"clean-{uuid.uuid4().hex}"))
    rng = random.Random(f"{SEED}:{url.split(':')[0]}")
    for point in sorted(rng.sample(range(2, STEPS), 3)):
        run_id = f"between-{point}-{uuid.uuid4().hex}"
        victim = _start("run", url, run_id, kill_at=point)
        killed(victim)
        checkpoints, blobs = anyio.run(_check_run, url, run_id)
        # the run's first checkpoint (the input, before superstep 0) has no blob; every
        # later one has new blobs: the save that died left no checkpoint
        assert checkpoints == point and blobs > 0
        assert _finish(_start("resume", url, run_id)) == expected
        left, reached = anyio.run(_prune_and_count, url, run_id)
        assert left == reached and left  # the orphans of the killed save are gone


def test_kills_at_random_points_resume_to_the_uninterrupted_outputs(
    any_store_url: str, tmp_path: Path
) -> None:
    url = any_store_url
    expected = _finish(_start("run", url, f"clean-{uuid.uuid4().hex}"))
    rng = random.Random(f"{SEED}:random:{url.split(':')[0]}")
    for point in [rng.randrange(0, STEPS) for _ in range(4)]:
        run_id = f"random-{point}-{uuid.uuid4().hex}"
        # held in the superstep after checkpoint `point`: the kill lands there
        marker = tmp_path / f"{run_id}.held"
        victim = _start("run", url, run_id, hold=f"{point + 1}:{marker}")
        wait_until(marker.exists, "the run held at its kill point", process=victim)
        kill(victim)
        anyio.run(_check_run, url, run_id)
        assert _finish(_start("resume", url, run_id)) == expected
        left, reached = anyio.run(_prune_and_count, url, run_id)
        assert left == reached


def test_a_kill_in_the_save_that_writes_a_bundle_leaves_no_dangling_reference(
    any_store_url: str,
) -> None:
    url = any_store_url
    expected = _finish(_start("run", url, f"clean-{uuid.uuid4().hex}", bundles=True))
    # the 32nd save with blobs writes the first bundle; the 33rd is the first after it
    for point in (32, 33):
        run_id = f"bundle-{point}-{uuid.uuid4().hex}"
        victim = _start("run", url, run_id, kill_at=point, bundles=True)
        killed(victim)
        checkpoints, _blobs = anyio.run(_check_run, url, run_id)
        assert checkpoints == point
        assert _finish(_start("resume", url, run_id, bundles=True)) == expected
        left, reached = anyio.run(_prune_and_count, url, run_id)
        assert left == reached
        bundles = anyio.run(_bundles, url, run_id, reached)
        assert bundles == 1  # the kept checkpoint reaches the transcript's first bundle


async def _bundles(url: str, run_id: str, hashes: set[str]) -> int:
    """How many of ``hashes`` are bundles: a tree node of items inline, no reference."""
    store = open_store(url)
    try:
        got = await store.get_blobs(run_id, sorted(hashes))  # type: ignore[attr-defined]
        values = [load_blob(data) for data in got.values()]
        return sum(1 for v in values if type(v) is list and len(v) == 2 and not blob_refs(v))
    finally:
        await store.aclose()
