"""What both of Plait's saq queues (:mod:`._redis`, :mod:`._postgres`) agree on about a
job: whose delivery it is, and how the sweep hands on the job of a worker that is gone."""

from __future__ import annotations

import logging

from plait_durable import LeaseHolder
from saq.job import Job, Status
from saq.utils import now

__all__ = [
    "CANCEL_META",
    "FIRST_DELIVERY",
    "REDELIVERY",
    "gone",
    "handed_on",
    "log_hand_on",
    "owned",
    "stuck",
    "taken_by",
]

logger = logging.getLogger("plait_workers")

#: A job's priority (saq's, on PostgreSQL: lower goes first) when submitted, and when put
#: back on the queue (taken over, refused for a lease, drained): a run that has started goes
#: before every run that has not. On Redis the same order is the queued list's: a
#: redelivery goes to its head.
FIRST_DELIVERY = 1
REDELIVERY = 0

#: The key of a job's ``meta`` that says its run was cancelled while its worker died: the
#: worker that takes the job next records the cancellation and runs nothing.
CANCEL_META = "plait_cancel"


def stuck(job: Job, after: float | None = None) -> bool:
    """Has ``job``'s worker stopped: running (or stopping, cancelled) and either its worker
    is a process of this host that is gone (:func:`gone`), or it has not beaten for
    ``after`` seconds (default: the job's own ``heartbeat``)?"""
    if job.status not in (Status.ACTIVE, Status.ABORTING):
        return False
    if gone(job.worker_id):
        return True
    limit = job.heartbeat if after is None else after
    return bool(limit) and (now() - job.touched) / 1000 > limit


def gone(worker_id: str | None) -> bool:
    """Is ``worker_id`` (a worker's name, ``host:pid``) a process of this host, other than
    this one, that no longer exists? Its jobs need not wait for the heartbeat's timeout:
    the rule Plait's lease applies to a holder of this host (:meth:`LeaseHolder.gone`). A
    worker of another host, a pid that lives (or was reused), or a name of another form is
    not known gone."""
    host, _, pid = (worker_id or "").rpartition(":")
    if not host or not pid.isdigit() or int(pid) == 0:
        return False
    return LeaseHolder(host, int(pid), 0.0, "").gone()


def owned(stored: Job | None, job: Job) -> bool:
    """Is ``stored`` (the job as the queue keeps it) still the delivery ``job`` is of: the
    same worker, the same attempt? The sweep that hands a job on, and the worker that takes
    it next, change one or the other; a write of a delivery that is no longer the job's
    (a worker thought dead, a late heartbeat) is dropped."""
    return (
        stored is not None and stored.worker_id == job.worker_id and stored.attempts == job.attempts
    )


def taken_by(stored: Job | None, job: Job) -> bool:
    """Is ``job`` (as a worker has just taken it: its attempt counted, its worker named)
    the next delivery of ``stored``, still waiting for its worker's first word?"""
    return (
        stored is not None
        and stored.status in (Status.QUEUED, Status.ACTIVE)
        and stored.attempts == job.attempts - 1
    )


def handed_on(job: Job, error: str) -> Job:
    """``job`` as the sweep puts it back on the queue: queued, not started, with ``error``
    saying why; a job cancelled while its worker died is marked so (:data:`CANCEL_META`).

    The lost delivery counts as an attempt: the next delivery's attempt then differs from
    every earlier one, even when the same worker took the job before (a delivery saq's
    PostgreSQL queue had fetched for a worker, which sat in the worker's memory while the
    sweep handed it on, is that worker's and has that attempt too)."""
    job.attempts += 1
    job.worker_id = None  # (the worker that died: not the next delivery's, nor gone then)
    job.priority = REDELIVERY  # (before every run not yet started)
    if job.status == Status.ABORTING:
        job.meta[CANCEL_META] = job.error or "cancelled"
    job.status = Status.QUEUED
    job.error = error
    job.started = 0
    job.completed = 0
    job.touched = now()
    return job


def log_hand_on(job: Job) -> None:
    """Log (INFO, ``plait_workers``) that the sweep hands ``job`` on: its run, the attempt
    that was lost and how long its worker had not beaten (the soak reads these lines)."""
    silent = f"{(now() - job.touched) / 1000:.2f} s" if job.touched else "ever (never started)"
    logger.info("handing on run %s: attempt %d, no heartbeat for %s", job.key, job.attempts, silent)
