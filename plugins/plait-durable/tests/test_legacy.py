"""Checkpoints in the delta layout, written by an earlier Plait (``legacy/``, by
``legacy_workflows.py`` on main at 63c9029), resume and read as they did: from the latest
checkpoint and from a delta, in a store that kept blobs and in one that kept none, each
resumed in a process of its own as an upgraded worker would, to the values a run of today's
Plait reaches."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import legacy_workflows
import pytest
from legacy_workflows import TURNS, looping, page
from plait_durable import Checkpoint, checkpoint_view, decode_checkpoint, open_store

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
LEGACY = sorted((HERE / "legacy").glob("*.json"))


def _written(path: Path) -> tuple[str, list[Checkpoint], dict[str, bytes]]:
    """The run id, the checkpoints and the run's blobs, as the earlier Plait wrote them."""
    written = json.loads(path.read_text(encoding="utf-8"))
    checkpoints = [decode_checkpoint(text.encode("utf-8")) for text in written["checkpoints"]]
    blobs = {digest: bytes.fromhex(data) for digest, data in written["blobs"].items()}
    return written["run_id"], checkpoints, blobs


async def _stored(path: Path, url: str, upto: int | None = None) -> tuple[str, list[Checkpoint]]:
    """The run of ``path`` saved into the store at ``url`` (its checkpoints up to superstep
    ``upto``, if given): its run id and those checkpoints."""
    run_id, checkpoints, blobs = _written(path)
    if upto is not None:
        checkpoints = [c for c in checkpoints if c.superstep <= upto]
    store = open_store(url)
    try:
        for checkpoint in checkpoints:
            await store.save(checkpoint, blobs=blobs)
    finally:
        await store.aclose()
    return run_id, checkpoints


async def _resume_elsewhere(url: str, id: str, answer: str | None = None) -> dict[str, Any]:
    """``legacy_workflows.py resume``, in a process of its own."""
    command = [sys.executable, str(HERE / "legacy_workflows.py"), "resume", url, id]
    done = await anyio.run_process([*command, *([answer] if answer else [])])
    return json.loads(done.stdout)  # type: ignore[no-any-return]


async def _today(answer: bool | None) -> dict[str, Any]:
    """What the same run holds when today's Plait writes and resumes it."""
    url = f"memory://{uuid.uuid4().hex}"
    workflow = looping()
    first = await workflow.run(0, checkpoint=url)
    result = first
    if answer is not None:
        (request,) = first.pending_requests
        result = await workflow.resume(first.run_id, url, responses={request.request_id: answer})
    return {
        "status": result.status.value,
        "outputs": result.outputs,
        "shared": result.shared,
        "requests": [request.request for request in result.pending_requests],
    }


@pytest.mark.parametrize("path", LEGACY, ids=[p.stem for p in LEGACY])
def test_the_fixtures_hold_full_snapshots_and_deltas_on_them(path: Path) -> None:
    _, checkpoints, blobs = _written(path)
    kinds = [c.state["kind"] for c in checkpoints]
    bases = {c.base_id for c in checkpoints if c.state["kind"] == "delta"}
    assert kinds.count("full") >= 3 and kinds.count("delta") >= 9
    assert len(bases) == 2  # deltas on the first snapshot, and on the one 32 later
    assert bool(blobs) == (path.stem == "blobs")
    shared_changes = any("shared_changes" in c.state for c in checkpoints)
    assert shared_changes == (path.stem == "inline")


@pytest.mark.parametrize("path", LEGACY, ids=[p.stem for p in LEGACY])
async def test_a_run_written_in_the_delta_layout_resumes_to_what_today_reaches(
    path: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, _ = await _stored(path, url)
    resumed = await _resume_elsewhere(url, run_id, "yes")
    assert resumed == await _today(True)
    assert resumed["outputs"] == [0, 10, 20, 30, 40, TURNS + 1]
    assert resumed["shared"] == {f"k{n}": page(n) for n in range(TURNS + 1)}


@pytest.mark.parametrize("path", LEGACY, ids=[p.stem for p in LEGACY])
async def test_a_delta_resumes_merged_onto_its_base(path: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _, checkpoints = await _stored(path, url)
    (delta,) = [c for c in checkpoints if c.superstep == 36]
    assert delta.state["kind"] == "delta" and delta.base_id is not None
    # it goes on from superstep 36: turns 36 to 40 again, then the question
    resumed = await _resume_elsewhere(url, delta.checkpoint_id)
    assert resumed == await _today(None)
    assert resumed["requests"] == [f"finish after {TURNS} turns?"]

    store = open_store(url)
    try:
        view = await checkpoint_view(store, delta.checkpoint_id)
    finally:
        await store.aclose()
    assert view.base_id == delta.base_id
    assert view.state["shared"] == {f"k{n}": page(n) for n in range(36)}
    assert view.state["executor_state"] == {"loop": {"seen": 36}}
    assert view.state["outputs"] == [0, 10, 20, 30]


async def test_a_pruned_run_keeps_the_base_of_its_latest_delta(tmp_path: Path) -> None:
    """Prune keeps what the latest checkpoint needs: a delta's base, too."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, checkpoints = await _stored(LEGACY[0], url, upto=38)
    latest = checkpoints[-1]
    assert latest.state["kind"] == "delta" and latest.base_id is not None
    store = open_store(url)
    try:
        assert await store.prune(run_id, keep_last=1) == len(checkpoints) - 3
        kept = [info.checkpoint_id for info in await store.list(run_id)]
    finally:
        await store.aclose()
    assert kept == [checkpoints[0].checkpoint_id, latest.base_id, latest.checkpoint_id]
    resumed = await _resume_elsewhere(url, run_id)
    assert resumed["requests"] == [f"finish after {TURNS} turns?"]
    assert resumed["shared"] == {f"k{n}": page(n) for n in range(TURNS + 1)}


def test_the_fixtures_name_the_module_that_wrote_them() -> None:
    """The fixtures' fingerprints name ``legacy_workflows``: imported under that name."""
    assert legacy_workflows.looping().spec.name == "legacy"
