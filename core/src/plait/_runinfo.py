"""The run listing: what :meth:`plait.spi.CheckpointStore.runs` says about each run.

:class:`RunInfo`, :func:`error_summary` and :func:`check_runs_limit` are exported by
:mod:`plait.checkpoint` too, beside the store protocol they serve.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

__all__ = ["CORRUPT", "RunInfo", "check_runs_limit", "error_summary"]

#: The status :meth:`RunInfo.corrupt` gives a run whose latest checkpoint does not decode.
CORRUPT = "corrupt"


class LatestCheckpoint(Protocol):
    """What a listing reads of a run's latest checkpoint (a :class:`plait.spi.Checkpoint`)."""

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def superstep(self) -> int: ...

    @property
    def created_at(self) -> float: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...

    @property
    def state(self) -> Mapping[str, Any]: ...


@attrs.frozen
class RunInfo:
    """What :meth:`CheckpointStore.runs` lists about one run, from its latest checkpoint.

    :param run_id: the run.
    :param workflow: the workflow's name (the checkpoint's ``metadata["workflow"]``), or
        ``None`` when the checkpoint does not say (a sealed checkpoint keeps its metadata
        in its sealed payload).
    :param status: the latest checkpoint's status (``running``, ``idle``,
        ``idle_with_pending_requests``, ``failed``), or ``corrupt`` when it does not
        decode (:meth:`corrupt`).
    :param superstep: the latest checkpoint's superstep.
    :param pending_requests: how many requests for outside input the run waits on.
    :param error: for a failed run, one line naming the executor, the error's type and
        its message (:func:`error_summary`); ``None`` otherwise.
    :param created_at: when the run's first checkpoint was taken (seconds since the epoch).
    :param updated_at: when its latest checkpoint was taken.

    .. versionadded:: 0.1
    """

    run_id: str
    workflow: str | None
    status: str
    superstep: int
    pending_requests: int
    error: str | None
    created_at: float
    updated_at: float

    @classmethod
    def from_latest(cls, latest: LatestCheckpoint, *, created_at: float | None = None) -> RunInfo:
        """The listing of the run whose latest checkpoint is ``latest`` (``created_at``:
        when its first checkpoint was taken; ``latest``'s own time if not given)."""
        workflow = latest.metadata.get("workflow")
        requests = latest.state.get("requests")
        return cls(
            run_id=latest.run_id,
            workflow=workflow if isinstance(workflow, str) else None,
            status=latest.status,
            superstep=latest.superstep,
            pending_requests=len(requests) if isinstance(requests, list) else 0,
            error=error_summary(latest.metadata.get("error")),
            created_at=latest.created_at if created_at is None else created_at,
            updated_at=latest.created_at,
        )

    @classmethod
    def corrupt(cls, run_id: str, error: Exception, *, created_at: float = 0.0) -> RunInfo:
        """The listing of a run whose latest checkpoint does not decode: status
        ``corrupt``, ``error`` the decoding error's message on one line, so one damaged
        run does not hide the others.

        .. versionadded:: 0.1
        """
        return cls(
            run_id=run_id,
            workflow=None,
            status=CORRUPT,
            superstep=-1,
            pending_requests=0,
            error=" ".join(str(error).split()) or type(error).__name__,
            created_at=created_at,
            updated_at=created_at,
        )


def error_summary(error: Any) -> str | None:
    """One line for a failed checkpoint's ``metadata["error"]`` (``{"executor", "type",
    "message", "superstep"}``): ``ValueError in 'parse' (superstep 3): bad input``.
    ``None`` when ``error`` is not such a mapping."""
    if not isinstance(error, dict):
        return None
    kind = error.get("type") or "error"
    executor = error.get("executor")
    where = f" in {executor!r}" if isinstance(executor, str) else ""
    superstep = error.get("superstep")
    if isinstance(superstep, int) and not isinstance(superstep, bool):
        where += f" (superstep {superstep})"
    message = " ".join(str(error.get("message") or "").split())
    return f"{kind}{where}: {message}" if message else f"{kind}{where}"


def check_runs_limit(limit: int | None) -> int | None:
    """Return ``limit`` if it is a valid ``runs(limit=...)`` argument.

    :raises ValueError: ``limit`` is negative or not an integer (``bool`` included).
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"runs(limit=...) needs None or an integer >= 0, got {limit!r}")
    return limit
