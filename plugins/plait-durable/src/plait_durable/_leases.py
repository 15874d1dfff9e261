"""One writer per run: the lease rules every checkpoint store shares.

A store keeps, per run, a lease (:class:`~plait_durable.Lease`): a fencing token, who holds it
(:class:`~plait_durable.LeaseHolder`) and when it expires. Whether a stored lease may be taken,
which token comes next, and how a refusal is worded are the same in every store:

- :func:`take_lease` decides, inside the store's transaction or lock, whether the stored
  lease may be taken and returns the lease to write (the next token);
- :func:`is_free` says whether a stored lease is released, expired, unreadable or held by
  a process known to be dead;
- :func:`granted` and :func:`released` record which leases runs in this process hold, so a
  lease left behind by this process (a run that never released it) is free;
- :func:`held_error` and :func:`lost_error` word the two refusals.
"""

from __future__ import annotations

import os
import socket
import time

from ._errors import RunLeaseError
from .checkpoint import Lease, LeaseHolder

__all__ = ["granted", "held_error", "is_free", "lost_error", "released", "take_lease"]

# Owners of the leases runs in this process hold right now: a lease that names this
# process but no live owner was left behind (a run that never released it) and is free.
_live_owners: set[str] = set()


def is_free(holder: LeaseHolder | None, expires_at: float, now: float | None = None) -> bool:
    """Whether a stored lease may be taken: released or expired (``expires_at`` passed),
    unreadable, or held by a process known to be dead."""
    if holder is None:
        return True
    if expires_at <= (time.time() if now is None else now):
        return True
    if holder.host == socket.gethostname() and holder.pid == os.getpid():
        return holder.owner not in _live_owners
    return holder.gone()


def granted(lease: Lease) -> Lease:
    """Record that a run in this process holds ``lease``; return it."""
    _live_owners.add(lease.holder.owner)
    return lease


def released(lease: Lease) -> None:
    """Record that ``lease`` is no longer held by this process."""
    _live_owners.discard(lease.holder.owner)


def held_error(run_id: str, holder: LeaseHolder, url: str) -> RunLeaseError:
    """The error for acquiring a lease a live worker holds."""
    return RunLeaseError(
        f"run {run_id!r} in {url} is being run by another worker ({holder.describe()}); "
        "one writer per run: wait for it to finish, or for its lease to expire if it died"
    )


def lost_error(lease: Lease, url: str, holder: LeaseHolder | None = None) -> RunLeaseError:
    """The error for using a lease that was taken over (its token is no longer current)."""
    by = f" by another worker ({holder.describe()})" if holder is not None else ""
    return RunLeaseError(
        f"the lease of run {lease.run_id!r} in {url} was taken over{by}; this worker "
        f"(token {lease.token}) may no longer write its checkpoints"
    )


def take_lease(
    run_id: str,
    current: tuple[int, LeaseHolder | None, float] | None,
    holder: LeaseHolder | None,
    ttl: float,
    url: str,
) -> Lease:
    """The lease to store for ``run_id``, given the stored ``(token, holder, expires_at)``
    (``None`` if the run never had one): the next token, ``holder`` (default: this
    process), expiring ``ttl`` seconds from now. Call it inside the store's transaction or
    lock, then write the returned lease's token, holder and expiry.

    :raises RunLeaseError: the stored lease is held by a live worker.
    :raises ValueError: ``ttl`` is not a positive number.
    """
    if not ttl > 0:
        raise ValueError(f"lease ttl must be a positive number of seconds, got {ttl!r}")
    now = time.time()
    if current is not None and not is_free(current[1], current[2], now):
        assert current[1] is not None
        raise held_error(run_id, current[1], url)
    token = (current[0] if current is not None else 0) + 1
    return granted(Lease(run_id, token, holder or LeaseHolder.here(), now + ttl))
