"""A full disk and a read-only directory, for the file and SQLite stores (issue 14, fault
injection): the run fails with a clear ``PlaitError``, and the checkpoints written before
stay intact (each is read back and verified, and the run resumes to the right outputs).

The disk fills in a subprocess (``faulty.py``: ``RLIMIT_FSIZE``, ``SIGXFSZ`` ignored).
The read-only directory is made with ``chmod``; as root (whom permissions do not stop) the
subprocess runs under ``setpriv`` without the capabilities that bypass them.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from faulty import STEPS, build
from plait_durable import open_store

pytestmark = pytest.mark.anyio

FAULTY = Path(__file__).with_name("faulty.py")


@pytest.fixture(params=["file", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return f"file://{tmp_path / 'checkpoints'}"
    return f"sqlite:///{tmp_path / 'runs.db'}"


def _without_root_powers() -> list[str]:
    """A command prefix that makes permissions apply to this process's children too."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("as root, this test needs setpriv (Debian package util-linux)")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]


def _child(*args: str, prefix: list[str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [*(prefix or []), sys.executable, str(FAULTY), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return record


async def _verified_supersteps(url: str, run_id: str) -> list[int]:
    """Load (and so verify) every listed checkpoint of ``run_id``; their supersteps."""
    store = open_store(url)
    try:
        infos = await store.list(run_id)
        loaded = [await store.load(info.checkpoint_id) for info in infos]
    finally:
        await store.aclose()
    assert [c.checkpoint_id for c in loaded] == [i.checkpoint_id for i in infos]
    return [c.superstep for c in loaded]


async def test_a_full_disk_fails_clearly_and_keeps_earlier_checkpoints(store_url: str) -> None:
    run_id = f"full-{uuid.uuid4().hex}"
    full_at = 10
    failed = _child(store_url, run_id, "run", str(full_at))
    assert failed.get("plait") == "yes", failed
    assert failed["error"] == "StoreUnavailableError"
    assert "cannot be used" in failed["message"]
    supersteps = await _verified_supersteps(store_url, run_id)
    # the start (0) and supersteps 1 .. 9; the disk filled up during superstep 10
    assert supersteps == list(range(full_at))
    resumed = _child(store_url, run_id, "resume")
    assert resumed == {"outputs": [STEPS], "supersteps": STEPS}


def _chmod_tree(root: Path, *, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        if writable:
            path.chmod(mode | stat.S_IWUSR)
        else:
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


async def test_a_read_only_directory_fails_clearly_and_keeps_checkpoints(
    store_url: str, tmp_path: Path
) -> None:
    run_id = f"ro-{uuid.uuid4().hex}"
    paused = await build(store_url, None).run(
        0, checkpoint=store_url, run_id=run_id, max_supersteps=10, raise_on_failure=False
    )
    assert paused.supersteps == 10 and paused.outputs == []
    before = await _verified_supersteps(store_url, run_id)
    root = tmp_path / ("checkpoints" if store_url.startswith("file:") else "")
    _chmod_tree(root, writable=False)
    try:
        refused = _child(store_url, run_id, "resume", prefix=_without_root_powers())
    finally:
        _chmod_tree(root, writable=True)
    assert refused.get("plait") == "yes", refused
    assert "checkpoint store" in refused["message"], refused
    assert await _verified_supersteps(store_url, run_id) == before
    resumed = await build(store_url, None).resume(run_id, store_url)
    assert resumed.outputs == [STEPS]
