"""Plait workers: runs on a task queue, on PostgreSQL or Redis.

``plait submit TARGET MESSAGE --checkpoint URL`` (or :func:`submit`) puts a run on a queue
and returns its id at once; ``plait worker --checkpoint URL`` (or :class:`Worker`) takes
runs from it and runs them with checkpoints and leases in that store. The queue is saq's:
it delivers each run to one worker, and hands the run of a worker that stopped beating to
another; Plait's lease stays the guarantee of one writer per run.

- :func:`submit` (:func:`submit_many` for many runs at once), :func:`cancel`,
  :func:`answer` and :func:`queued_runs`: what a program does to the queue
  (``plait submit``, ``plait cancel``, ``plait answer``, ``plait queue``);
- :class:`Worker` and :class:`WorkerSettings`: a worker (``plait worker``), which loads a
  run's workflow only as its own grants allow (:class:`RefusedRunError` otherwise);
- :class:`QueueError`: a store no queue can live on, or a run not in the state asked for.

Loading plugins imports this module alone; saq is imported when a queue is first used.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import plait
from plait.spi import lazy_exports

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    import click
    from plait_durable import RunInfo

    from ._client import (
        CANCELLED as CANCELLED,
        QueuedRun as QueuedRun,
        answer as answer,
        cancel as cancel,
        queued_runs as queued_runs,
        submit as submit,
        submit_many as submit_many,
    )
    from ._queue import (
        DEFAULT_QUEUE as DEFAULT_QUEUE,
        QueueError as QueueError,
        RunOrder as RunOrder,
    )
    from ._worker import (
        RefusedRunError as RefusedRunError,
        Worker as Worker,
        WorkerSettings as WorkerSettings,
    )


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_register_commands(cli: click.Group) -> None:
    """Add ``plait submit``, ``plait worker``, ``plait cancel``, ``plait answer`` and
    ``plait queue`` (saq is imported only when one of them runs)."""
    from ._commands import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_run_columns() -> dict[str, Any]:
    """The ``queue`` column of ``plait runs`` and ``plait ui``: the queue each run went
    through, from its checkpoint's metadata (``-`` for a run no worker ran)."""
    from ._columns import queue_cell

    return {"queue": queue_cell}


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_pending_runs(
    store: str, queues: Sequence[str]
) -> Callable[[], Awaitable[list[RunInfo]]] | None:
    """The runs on the queues of ``store`` that a listing (``plait runs``, ``plait ui``)
    cannot find in the checkpoints yet; nothing (and no connection) for a store no queue
    lives on."""
    from ._queue import SCHEMES

    scheme = store.partition("://")[0].lower().removeprefix("sealed:")
    if scheme not in SCHEMES:
        return None
    from ._listing import pending_runs

    return functools.partial(pending_runs, store, tuple(queues))


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
