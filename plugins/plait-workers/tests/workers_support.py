"""What plait-workers' tests share besides fixtures: reading the effects file, waiting for
a condition, and a run's latest status (a module of its own, not ``conftest``: another
plugin's tests have a ``conftest`` too, and importing one by that name picks whichever
pytest loaded last)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).parent
#: what the ``start_worker`` fixture gives: start a worker process
WorkerFactory = Callable[..., "subprocess.Popen[str]"]


def read_effects(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Wait until ``check()`` is truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    found = None
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"after {timeout} s: {what} (last seen: {found!r})")


def latest_status(store: str, run_id: str) -> tuple[str, int] | None:
    """The status and superstep of the run's latest checkpoint, or ``None``."""
    from plait_durable import opened_store

    async def look() -> tuple[str, int] | None:
        async with opened_store(store) as opened:
            latest = await opened.latest(run_id)
            return None if latest is None else (latest.status, latest.superstep)

    return anyio.run(look)
