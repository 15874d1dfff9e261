"""Small helpers shared by the peer workload modules.

The peers' async APIs are driven from a sync callable (the harness interface) through one
private event loop per workload instance: the loop is created by the factory, outside the
timed region, and every timed call is a ``loop.run_until_complete``. Creating a fresh loop
per call (``asyncio.run``) would add ~0.08 ms of loop set-up and tear-down to every run,
which is not the framework's cost; reusing a loop is also how a long-lived service would
call these frameworks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["Run", "Workload", "LoopRunner", "bind_cleanup", "close_all", "quiet_logger", "remover"]

T = TypeVar("T")

#: One complete, timed run of a workload; returns the workload's result value.
Run = Callable[[], Any]
#: Factory taking the size ``n``; does all set-up and returns a :data:`Run`.
Workload = Callable[[int], Run]


class LoopRunner:
    """Owns one event loop and runs coroutines to completion on it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` on the private loop and return its result."""
        return self._loop.run_until_complete(_as_coroutine(awaitable))

    def close(self) -> None:
        """Shut down async generators and the default executor, then close the loop."""
        if self._loop.is_closed():
            return
        try:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        finally:
            self._loop.close()


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def bind_cleanup(run: Run, *cleanups: Callable[[], object]) -> Run:
    """Attach ``cleanups`` to ``run`` as its ``close()`` attribute and return ``run``.

    The harness calls ``run.close()`` once it is done with a workload instance, outside any
    timed region, so event loops, database connections and temporary directories do not
    pile up. Cleanups run in order, at most once; a failing one does not stop the rest.
    Cleanups are never left to garbage collection: a collection can happen in the middle of
    another framework's timed run, which must neither pay for them nor have an event loop
    closed under it. :func:`close_all` runs whatever is still pending.
    """
    done = False

    def close() -> None:
        nonlocal done
        if done:
            return
        done = True
        _PENDING.discard(close)
        for cleanup in cleanups:
            with contextlib.suppress(Exception):
                cleanup()

    _PENDING.add(close)
    run.close = close  # type: ignore[attr-defined]
    return run


_PENDING: set[Callable[[], None]] = set()


def close_all() -> None:
    """Run every cleanup still pending (see :func:`bind_cleanup`).

    Call before the interpreter exits: some resources (an ``aiosqlite`` connection) own a
    non-daemon thread, which would otherwise keep the process alive.
    """
    for close in list(_PENDING):
        close()


@contextlib.contextmanager
def quiet_logger(name: str, level: int = logging.ERROR) -> Iterator[None]:
    """Temporarily raise the level of logger ``name`` (used around graph set-up only)."""
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def remover(directory: str) -> Callable[[], None]:
    """A cleanup callable that removes ``directory`` and everything in it."""
    return lambda: shutil.rmtree(directory, ignore_errors=True)
