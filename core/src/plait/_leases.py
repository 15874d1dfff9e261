"""One writer per run: the lease records every checkpoint store keeps, and their rules.

A durable run holds its run's lease from start to end. A lease has a *fencing token*, an
integer the store raises at every acquisition and never hands out twice for one run;
every ``save(checkpoint, lease=...)`` is refused unless the run's current token is the
one given, so a worker that lost its lease (paused, partitioned, presumed dead) can no
longer write.

A lease is free when it was released, when its time-to-live ran out without renewal, or
at once when its holder is known to be dead: on the same host, a pid that no longer
exists (or this very process, when no run here holds it any more). Hosts are compared by
:func:`socket.gethostname`; containers that share a hostname across machines should rely
on the TTL only (give each its own hostname).

Store authors use :meth:`LeaseHolder.here`, :func:`is_free`, :func:`granted`,
:func:`released`, :func:`held_error` and :func:`lost_error`; the contract suite checks the
rest.

.. versionadded:: 0.1
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from typing import Any

import attrs

from ._errors import RunLeaseError

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "LeaseHolder",
    "granted",
    "held_error",
    "is_free",
    "lost_error",
    "released",
]

#: Seconds a lease lives without renewal (a running run renews it every third of that).
DEFAULT_LEASE_TTL = 30.0

# Owners of the leases runs in this process hold right now: a lease that names this
# process but no live owner was left behind (a run that never released it) and is free.
_live_owners: set[str] = set()


@attrs.frozen
class LeaseHolder:
    """Who holds a lease: host, process id, when it took it, and a unique owner id."""

    host: str
    pid: int
    since: float
    owner: str

    @classmethod
    def here(cls) -> LeaseHolder:
        """A holder for this process, now."""
        return cls(socket.gethostname(), os.getpid(), time.time(), uuid.uuid4().hex)

    def describe(self) -> str:
        """``host h, pid 123, since 2025-01-02T03:04:05Z``."""
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since))
        return f"host {self.host}, pid {self.pid}, since {since}"

    def to_json(self) -> str:
        """The holder as JSON text, for a store's lease row."""
        return json.dumps(attrs.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes | None) -> LeaseHolder | None:
        """Read :meth:`to_json` back; ``None`` for anything else (a damaged record)."""
        try:
            data: Any = json.loads(text) if text is not None else None
            holder = cls(**data)
            if not isinstance(holder.pid, int) or not isinstance(holder.host, str):
                return None
            return holder
        except (TypeError, ValueError):
            return None


@attrs.frozen
class Lease:
    """A granted lease: the run, its fencing token, the holder and when it expires
    (seconds since the epoch)."""

    run_id: str
    token: int
    holder: LeaseHolder
    expires_at: float


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OSError:
        return True
    return True


def is_free(holder: LeaseHolder | None, expires_at: float, now: float | None = None) -> bool:
    """Whether a stored lease may be taken: released or expired (``expires_at`` passed),
    unreadable, or held by a process known to be dead."""
    if holder is None:
        return True
    if expires_at <= (time.time() if now is None else now):
        return True
    if holder.host != socket.gethostname():
        return False
    if holder.pid == os.getpid():
        return holder.owner not in _live_owners
    return not _pid_alive(holder.pid)


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
