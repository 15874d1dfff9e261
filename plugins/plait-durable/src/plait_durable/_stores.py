"""The rules and wording every checkpoint store shares, behind the store kit.

:class:`plait_durable.kit.CheckpointStoreBase` calls these, so users meet the same
words whichever store they chose:

- :func:`redact_url` keeps a password out of a store's ``url``, and so out of every
  message;
- :func:`where` names a checkpoint in errors, and :func:`duplicate_error` refuses an id
  that is stored already with other contents;
- :func:`check_keep_last` and :func:`prune_plan` are ``prune``'s argument check and its
  rule, :func:`check_runs_limit` is ``runs``'s;
- :func:`run_info` lists a run from its latest checkpoint's bytes
  (:func:`latest_run_info`, or :func:`corrupt_run_info` when they do not decode);
- :data:`INFO_FIELDS`, :func:`info_row` and :func:`info_fields` lay out the listing
  fields (:class:`~plait_durable.CheckpointInfo`) as a row or a JSON object, and
  ``CheckpointInfo(*row)`` / ``CheckpointInfo(**fields)`` read them back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar
from urllib.parse import urlsplit, urlunsplit

from plait import CheckpointError

from ._errors import CorruptCheckpointError
from ._format import decode_checkpoint
from .checkpoint import Checkpoint, RunInfo

if TYPE_CHECKING:
    from ._info import CheckpointInfo

__all__ = [
    "CORRUPT",
    "INFO_FIELDS",
    "InfoRow",
    "check_keep_last",
    "check_runs_limit",
    "corrupt_run_info",
    "duplicate_error",
    "error_summary",
    "info_fields",
    "info_row",
    "latest_run_info",
    "parse_age",
    "prune_plan",
    "redact_url",
    "run_info",
    "where",
]

#: The fields of :class:`~plait_durable.CheckpointInfo` in order: the columns a SQL
#: store selects so that ``CheckpointInfo(*row)`` rebuilds the listing.
INFO_FIELDS: tuple[str, ...] = (
    "checkpoint_id",
    "run_id",
    "superstep",
    "parent_id",
    "status",
    "created_at",
    "base_id",
)

_Info = TypeVar("_Info", bound=RunInfo)

#: The values of :data:`INFO_FIELDS`, as :func:`info_row` returns them.
InfoRow: TypeAlias = tuple[str, str, int, str | None, str, float, str | None]


_AGE = re.compile(r"(\d+)([smhdw])")
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """An age or a retention period in seconds: a plain number of seconds, or ``30m``,
    ``12h``, ``7d``, ``2w`` (or several: ``1d12h``).

    :raises ValueError: the text is not such a duration; the message shows the forms.
    """
    compact = text.strip().lower()
    if compact.isdigit():
        return float(compact)
    parts = _AGE.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(
            f"{text!r} is not an age: write a number and a unit, s, m, h, d or w "
            "(30m, 12h, 7d, 1d12h)"
        )
    return float(sum(int(n) * _AGE_UNITS[u] for n, u in parts))


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for ``url`` attributes and errors.

    ``redis://u:pw@h:1/0`` becomes ``redis://u:***@h:1/0``; a URL without a password
    comes back unchanged.
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def where(run_id: str, checkpoint_id: str) -> str:
    """How errors name one stored checkpoint: ``run 'r1', checkpoint 'c7'``.

    Pass it as ``where=`` to :func:`~plait_durable.decode_checkpoint`, so a corrupt
    checkpoint is reported naming its run.
    """
    return f"run {run_id!r}, checkpoint {checkpoint_id!r}"


#: The status :func:`corrupt_run_info` gives a run whose latest checkpoint does not decode.
CORRUPT = "corrupt"


class LatestCheckpoint(Protocol):
    """What a listing reads of a run's latest checkpoint (a :class:`plait_durable.Checkpoint`)."""

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


def latest_run_info(
    latest: LatestCheckpoint,
    *,
    created_at: float | None = None,
    kind: Callable[..., _Info] = RunInfo,  # type: ignore[assignment]
    **more: Any,
) -> _Info:
    """The listing of the run whose latest checkpoint is ``latest`` (``created_at``: when
    its first checkpoint was taken; ``latest``'s own time if not given): its workflow
    (``metadata["workflow"]``), status, superstep, pending requests and, for a failed run,
    the error its checkpoint records (:func:`error_summary`); its metadata as read.

    ``kind`` is the record made (:class:`~plait_durable.RunInfo`, or a subclass given its
    own fields in ``more``: the run index's :class:`~plait_durable.RunSummary`).
    """
    workflow = latest.metadata.get("workflow")
    requests = latest.state.get("requests")
    return kind(
        run_id=latest.run_id,
        workflow=workflow if isinstance(workflow, str) else None,
        status=latest.status,
        superstep=latest.superstep,
        pending_requests=len(requests) if isinstance(requests, list) else 0,
        error=error_summary(latest.metadata.get("error")),
        created_at=latest.created_at if created_at is None else created_at,
        updated_at=latest.created_at,
        metadata=latest.metadata,
        **more,
    )


def corrupt_run_info(run_id: str, error: Exception, *, created_at: float = 0.0) -> RunInfo:
    """The listing of a run whose latest checkpoint does not decode: status
    :data:`CORRUPT`, ``error`` the decoding error's message on one line, so one damaged
    run does not hide the others.
    """
    return RunInfo(
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


def run_info(
    data: bytes, *, run_id: str, checkpoint_id: str, url: str, created_at: float | None
) -> RunInfo:
    """The listing of a run from its latest checkpoint's stored bytes, as ``runs()``
    returns it: :func:`latest_run_info`, or :func:`corrupt_run_info` when the bytes do
    not decode, so one damaged run never fails the whole listing.
    """
    try:
        latest = decode_checkpoint(
            data,
            where=f"{where(run_id, checkpoint_id)} in {url}",
            expect_run=run_id,
            expect_id=checkpoint_id,
        )
    except CorruptCheckpointError as exc:
        return corrupt_run_info(run_id, exc, created_at=created_at or 0.0)
    return latest_run_info(latest, created_at=created_at)


def check_keep_last(keep_last: int) -> int:
    """Return ``keep_last`` if it is a valid ``prune(keep_last=...)`` argument.

    :raises ValueError: ``keep_last`` is negative or not an integer (``bool`` included).
    """
    if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 0:
        raise ValueError(f"prune(keep_last=...) needs an integer >= 0, got {keep_last!r}")
    return keep_last


def prune_plan(infos: Sequence[CheckpointInfo], keep_last: int) -> list[str]:
    """The ids :meth:`CheckpointStore.prune` deletes to keep the newest ``keep_last``.

    ``infos`` are one run's checkpoints, oldest first (as ``list`` returns them), with
    ``base_id`` read from verified bodies. Every checkpoint but the newest ``keep_last``
    goes, except the bases those kept checkpoints name (:attr:`CheckpointInfo.base_id`),
    so a kept delta stays resumable, and except the run's first checkpoint while anything
    is kept (it holds the topology that a refused resume compares against). The ids come
    oldest first.

    :raises ValueError: ``keep_last`` is negative or not an integer.
    """
    check_keep_last(keep_last)
    cut = max(len(infos) - keep_last, 0)
    needed = {info.base_id for info in infos[cut:] if info.base_id is not None}
    if keep_last and infos:
        needed.add(infos[0].checkpoint_id)
    return [info.checkpoint_id for info in infos[:cut] if info.checkpoint_id not in needed]


def check_runs_limit(limit: int | None) -> int | None:
    """Return ``limit`` if it is a valid ``runs(limit=...)`` argument.

    :raises ValueError: ``limit`` is negative or not an integer (``bool`` included).
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"runs(limit=...) needs None or an integer >= 0, got {limit!r}")
    return limit


def duplicate_error(checkpoint: Checkpoint, url: str) -> CheckpointError:
    """The error for saving an id that ``url`` stores already with other contents.

    Saving the very same checkpoint again is not an error: a store compares the bytes of
    :func:`~plait_durable.encode_checkpoint` and does nothing when they match.
    """
    return CheckpointError(
        f"{where(checkpoint.run_id, checkpoint.checkpoint_id)} is already stored in {url} "
        "with different contents; checkpoint ids must be unique (saving the same "
        "checkpoint again is allowed and does nothing)"
    )


def info_row(checkpoint: Checkpoint | CheckpointInfo) -> InfoRow:
    """The listing fields of ``checkpoint``, in the order of :data:`INFO_FIELDS`.

    Takes a :class:`~plait_durable.Checkpoint` too, so a save need not build its
    :attr:`~plait_durable.Checkpoint.info` first.
    """
    return (
        checkpoint.checkpoint_id,
        checkpoint.run_id,
        checkpoint.superstep,
        checkpoint.parent_id,
        checkpoint.status,
        checkpoint.created_at,
        checkpoint.base_id,
    )


def info_fields(checkpoint: Checkpoint | CheckpointInfo) -> dict[str, Any]:
    """The listing fields of ``checkpoint`` by name (:data:`INFO_FIELDS` order), JSON-ready."""
    return dict(zip(INFO_FIELDS, info_row(checkpoint)))
