"""Checkpoint size and overhead: prints JSON lines.

    python tests/benchmarks/bench_checkpoints.py [--sizes 10,100,1000] [--repeat 5]

For chains of n executors that each keep a one-int state (``ctx.state``), with a
checkpoint after every superstep:

* bytes per checkpoint (median, the largest after the first, which holds the topology,
  and the last) — a checkpoint holds the whole state, its values blobs and its growing
  sections trees whose unchanged parts the checkpoint before wrote, so it must not grow
  with n (when checkpoints were full snapshots and deltas, the deltas' largest was
  ``max_delta_bytes``);
* checkpoint overhead per superstep: run time with ``checkpoint="memory://"`` and
  ``"sqlite:///"`` (sync and async durability) minus the same run without checkpoints;
* peak memory (tracemalloc) of a 10,000-executor fan-out with a fan-in, no checkpoints;
* the README demo's checkpoint bytes: one run of ``docs/examples/demo/docs_review.yaml``
  over a folder of Markdown (``--demo-folder``, default this repository's ``docs/``), with
  a checkpoint after every superstep, summed as encoded (``--demo-folder ""`` skips it).
  On docs/ as of 628f91d (25 pages): 4,742,801 bytes in 15 checkpoints before plait-steps
  stored its step context once; 1,428,807 after (the same run, 5 of them full). With the
  values kept once as content-addressed blobs too (issue 25), on docs/ of 26 pages:
  127,195 bytes of checkpoints plus 554,278 bytes in 1,181 blobs, 681,473 in all (blobs
  are counted once each, as the store keeps them). With blobs compressed, the shared
  state as a tree over its items and tree nodes packed into 1 KiB blobs: 38,696 bytes of
  checkpoints plus 271,866 bytes in 767 blobs, 310,562 in all (all 15 full: with blobs a
  delta carries the whole shared state, 17 KB and more here before its values become
  blobs, so the rule that a large delta is written as a full snapshot takes them all).
  With a page's unchanging facts carried as one value (one blob every round refers to),
  on docs/ of 27 pages: 37,490 bytes in 12 checkpoints plus 270,121 in 739 blobs,
  307,611 in all. With blobs the one change-cost mechanism (no deltas, no plait-steps
  packing of outputs), on the same 27 pages: see ``docs/durable-runs.md`` ("One
  mechanism").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: durable_helpers

import workloads_plait
from durable_helpers import counting_chain
from plait_durable import encode_checkpoint, open_store


async def sizes(n: int) -> dict[str, Any]:
    url = f"memory://{uuid.uuid4().hex}"
    result = await counting_chain(n).run(0, checkpoint=url)
    store = open_store(url)
    encoded = [
        len(encode_checkpoint(cp))
        for cp in [await store.load(i.checkpoint_id) for i in await store.list(result.run_id)]
    ]
    return {
        "bench": "checkpoint_bytes",
        "n": n,
        "checkpoints": len(encoded),
        "median_bytes": statistics.median(encoded),
        "max_after_first_bytes": max(encoded[1:]),
        "first_bytes": encoded[0],
        "last_bytes": encoded[-1],
    }


def overhead(n: int, repeat: int) -> list[dict[str, Any]]:
    wf = counting_chain(n)
    loop = asyncio.new_event_loop()
    tmp = Path(tempfile.mkdtemp(prefix="plait-ckpt-"))

    def timed(**options: Any) -> float:
        times = []
        for k in range(repeat + 1):
            opts = dict(options)
            if opts.get("checkpoint") == "sqlite":
                opts["checkpoint"] = f"sqlite:///{tmp / f'{uuid.uuid4().hex}.db'}"
            start = time.perf_counter()
            loop.run_until_complete(wf.run(0, **opts))
            if k:
                times.append(time.perf_counter() - start)
        return statistics.median(times)

    bare = timed()
    rows = []
    for label, options in (
        ("memory/sync", {"checkpoint": "memory://bench"}),
        ("memory/async", {"checkpoint": "memory://bench", "durability": "async"}),
        ("sqlite/sync", {"checkpoint": "sqlite"}),
        ("sqlite/async", {"checkpoint": "sqlite", "durability": "async"}),
    ):
        total = timed(**options)
        rows.append(
            {
                "bench": "checkpoint_overhead",
                "store": label,
                "n": n,
                "run_s": round(total, 6),
                "bare_run_s": round(bare, 6),
                "overhead_per_superstep_us": round((total - bare) / (n + 1) * 1e6, 2),
            }
        )
    loop.close()
    return rows


def fanout_memory(n: int) -> dict[str, Any]:
    tracemalloc.start()
    call = workloads_plait.fanout(n)
    result = call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result == n
    return {"bench": "fanout_peak_memory", "n": n, "peak_mb": round(peak / 2**20, 1)}


ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "docs" / "examples" / "demo"


async def demo_bytes(folder: str) -> dict[str, Any]:
    """Checkpoint bytes of one run of the README demo over ``folder``."""
    import plait

    sys.path.insert(0, str(DEMO))  # the demo's python steps (docs_review.py)
    workflow = plait.load(DEMO / "docs_review.yaml", allow_imports=True)
    url = f"memory://{uuid.uuid4().hex}"
    pages = len(list(Path(folder).glob("*.md")))  # noqa: ASYNC240 - before the run
    # the demo writes .plait/demo/report.md in the working folder: a scratch one
    os.chdir(tempfile.mkdtemp(prefix="plait-demo-"))
    result = await workflow.run(str(Path(folder).resolve()), checkpoint=url)  # noqa: ASYNC240
    store = open_store(url)
    checkpoints = [await store.load(i.checkpoint_id) for i in await store.list(result.run_id)]
    sizes = [len(encode_checkpoint(cp)) for cp in checkpoints]
    # values the store keeps once as blobs (content-addressed) count too, once each
    hashes = await store.blob_hashes(result.run_id) if hasattr(store, "blob_hashes") else ()
    blobs = await store.get_blobs(result.run_id, list(hashes)) if hashes else {}
    blob_bytes = sum(len(data) for data in blobs.values())
    return {
        "bench": "demo_checkpoint_bytes",
        "pages": pages,
        "checkpoints": len(sizes),
        "checkpoint_bytes": sum(sizes),
        "blobs": len(blobs),
        "blob_bytes": blob_bytes,
        "total_bytes": sum(sizes) + blob_bytes,
        "max_bytes": max(sizes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fanout", type=int, default=10_000)
    parser.add_argument("--demo-folder", default=str(ROOT / "docs"))
    args = parser.parse_args(argv)
    if args.demo_folder:
        print(json.dumps(asyncio.run(demo_bytes(args.demo_folder))), flush=True)
    for n in [int(x) for x in args.sizes.split(",")]:
        print(json.dumps(asyncio.run(sizes(n))), flush=True)
    for row in overhead(100, args.repeat):
        print(json.dumps(row), flush=True)
    print(json.dumps(fanout_memory(args.fanout)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
