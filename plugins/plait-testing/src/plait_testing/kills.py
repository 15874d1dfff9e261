"""kill -9 a run in a process of its own, then resume it in another: the harness of the
crash tests.

A crash test runs a script (``python script.py run|resume STORE_URL RUN_ID …``) in
subprocesses: an uninterrupted run, a victim it kills with ``SIGKILL`` and a fresh process
that resumes the victim's run, and compares what they print. This module is that harness;
it reads the victim's progress through ``plait-durable`` (``plait-testing[durable]``):

- :func:`spawn` starts the script (its own folder on ``PYTHONPATH``, so it imports its
  neighbours), :func:`finish` waits for it and returns what it printed, failing with its
  stderr when it failed;
- :func:`latest_superstep` is the superstep of a run's newest checkpoint in a store;
- :func:`wait_until` waits for an event (a checkpoint, a file), failing at once when the
  process it waits on died and after a generous ``timeout`` that a loaded machine does not
  reach; :func:`kill` sends ``SIGKILL`` and checks the process died of it, and
  :func:`killed` checks it of a victim that kills itself;
- :func:`hold` is for the script's side: a victim that must die at an exact point writes a
  marker file there and waits forever, so the test kills it at that point whatever the
  machine's load (a test that polls for a checkpoint while the run goes on may be too late
  on a busy machine).

For example::

    victim = spawn(SCRIPT, "run", url, run_id, env={"HOLD_AT": "5"})
    wait_until(marker.exists, "the victim held at turn 5", process=victim)
    kill(victim)
    out = finish(spawn(SCRIPT, "resume", url, run_id))
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import anyio

__all__ = ["finish", "hold", "kill", "killed", "latest_superstep", "spawn", "wait_until"]

#: how long :func:`finish` and :func:`wait_until` wait by default: far above what a run of a
#: crash test takes on a loaded two-core machine, so only a hang reaches it
TIMEOUT = 180.0


def spawn(script: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``python script *args`` with text pipes, this process's environment plus
    ``env``, and the script's folder first on ``PYTHONPATH``."""
    path = os.pathsep.join([str(script.parent), *sys.path])
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {}), "PYTHONPATH": path},
    )


def finish(process: subprocess.Popen[str], *, timeout: float = TIMEOUT) -> str:
    """Wait for ``process``; what it printed to stdout. An :class:`AssertionError` with its
    stderr when it exited with anything but 0."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"exited with {process.returncode}:\n{err}"
    return out


def latest_superstep(url: str, run_id: str) -> int:
    """The superstep of ``run_id``'s newest checkpoint in the store at ``url``; -1 when it
    has none yet."""
    from plait_durable import open_store

    async def look() -> int:
        store = open_store(url)
        try:
            latest = await store.latest(run_id)
            return -1 if latest is None else latest.superstep
        finally:
            await store.aclose()

    return anyio.run(look)


def wait_until(
    happened: Callable[[], bool],
    what: str,
    *,
    process: subprocess.Popen[str] | None = None,
    timeout: float = TIMEOUT,
    every: float = 0.01,
) -> None:
    """Poll ``happened`` every ``every`` seconds until it is true. An
    :class:`AssertionError` naming ``what`` when ``process`` ended first (with its output)
    or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while not happened():
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the process ended before {what}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"not in {timeout} s: {what}"
        time.sleep(every)


def kill(process: subprocess.Popen[str]) -> None:
    """``SIGKILL`` ``process`` and wait for it; an :class:`AssertionError` when it had
    ended already (the kill proved nothing)."""
    process.send_signal(signal.SIGKILL)
    killed(process)


def killed(process: subprocess.Popen[str], *, timeout: float = TIMEOUT) -> None:
    """Wait for ``process`` to die of ``SIGKILL`` (sent by :func:`kill`, or by a victim
    that kills itself at an exact point); an :class:`AssertionError` with its output when
    it ended any other way."""
    out, err = process.communicate(timeout=timeout)
    code = process.returncode
    assert code == -signal.SIGKILL, f"ended with {code} before the kill:\n{out}\n{err}"


async def hold(marker: Path) -> None:
    """Write ``marker`` and wait forever: for a victim script, where a test kills it."""
    await anyio.Path(marker).write_text("held\n")
    await anyio.sleep_forever()
