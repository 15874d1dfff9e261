"""Helpers for checkpoint store authors: the lifecycle, naming and errors every store shares.

A checkpoint store (:class:`~plait.spi.CheckpointStore`) has its own way of keeping
bytes, but the glue around them is the same in every store, and users should meet it
worded the same way whichever store they chose:

- :class:`CheckpointStoreBase` gives a store ``url``, ``repr``, ``aclose`` and
  ``async with``, and refuses work once the store is closed (call ``self._check_open()``
  first in every method);
- :func:`redact_url` keeps a password out of ``url``, and so out of every message;
- :func:`where` names a checkpoint in errors, and :func:`duplicate_error` refuses an id
  that is stored already with other contents;
- :func:`take_lease` decides whether a run's stored lease may be taken and with which
  fencing token, the same way in every store (:class:`~plait.spi.Lease`);
- :data:`INFO_FIELDS`, :func:`info_row` and :func:`info_fields` lay out the listing
  fields (:class:`~plait.spi.CheckpointInfo`) as a row or a JSON object, and
  ``CheckpointInfo(*row)`` / ``CheckpointInfo(**fields)`` read them back.

``prune``'s argument check and its rule are :func:`plait.spi.check_keep_last` and
:func:`plait.spi.prune_plan`. Test a store with
:class:`plait.testing.stores.CheckpointStoreContract`.

How a store starts::

    from plait.spi import encode_checkpoint
    from plait.spi import CheckpointStoreBase, duplicate_error

    class DictStore(CheckpointStoreBase):
        def __init__(self) -> None:
            self.url = "dict://"
            self._data: dict[str, bytes] = {}

        async def save(self, checkpoint):
            self._check_open()
            data = encode_checkpoint(checkpoint)
            if self._data.setdefault(checkpoint.checkpoint_id, data) != data:
                raise duplicate_error(checkpoint, self.url)
            ...

.. versionadded:: 0.1
"""

from __future__ import annotations

import re
import time
from types import TracebackType
from typing import Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from plait import CheckpointError, CorruptCheckpointError, StoreUnavailableError
from plait.spi import (
    Checkpoint,
    CheckpointInfo,
    Lease,
    LeaseHolder,
    RunInfo,
    decode_checkpoint,
    granted,
    held_error,
    is_free,
)
from typing_extensions import Self

__all__ = [
    "INFO_FIELDS",
    "CheckpointStoreBase",
    "InfoRow",
    "duplicate_error",
    "info_fields",
    "info_row",
    "parse_age",
    "redact_url",
    "run_info",
    "take_lease",
    "where",
]

#: The fields of :class:`~plait.spi.CheckpointInfo` in order: the columns a SQL
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

#: The values of :data:`INFO_FIELDS`, as :func:`info_row` returns them.
InfoRow: TypeAlias = tuple[str, str, int, str | None, str, float, str | None]


_AGE = re.compile(r"(\d+)([smhdw])")
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """An age or a retention period in seconds: a plain number of seconds, or ``30m``,
    ``12h``, ``7d``, ``2w`` (or several: ``1d12h``).

    :raises ValueError: the text is not such a duration; the message shows the forms.

    .. versionadded:: 0.1
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

    Pass it as ``where=`` to :func:`~plait.spi.decode_checkpoint`, so a corrupt
    checkpoint is reported naming its run.
    """
    return f"run {run_id!r}, checkpoint {checkpoint_id!r}"


def run_info(
    data: bytes, *, run_id: str, checkpoint_id: str, url: str, created_at: float | None
) -> RunInfo:
    """The listing of a run from its latest checkpoint's stored bytes, as ``runs()``
    returns it: :meth:`RunInfo.from_latest`, or :meth:`RunInfo.corrupt` when the bytes do
    not decode, so one damaged run never fails the whole listing.

    .. versionadded:: 0.1
    """
    try:
        latest = decode_checkpoint(
            data,
            where=f"{where(run_id, checkpoint_id)} in {url}",
            expect_run=run_id,
            expect_id=checkpoint_id,
        )
    except CorruptCheckpointError as exc:
        return RunInfo.corrupt(run_id, exc, created_at=created_at or 0.0)
    return RunInfo.from_latest(latest, created_at=created_at)


def duplicate_error(checkpoint: Checkpoint, url: str) -> CheckpointError:
    """The error for saving an id that ``url`` stores already with other contents.

    Saving the very same checkpoint again is not an error: a store compares the bytes of
    :func:`~plait.spi.encode_checkpoint` and does nothing when they match.
    """
    return CheckpointError(
        f"{where(checkpoint.run_id, checkpoint.checkpoint_id)} is already stored in {url} "
        "with different contents; checkpoint ids must be unique (saving the same "
        "checkpoint again is allowed and does nothing)"
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


def info_row(checkpoint: Checkpoint | CheckpointInfo) -> InfoRow:
    """The listing fields of ``checkpoint``, in the order of :data:`INFO_FIELDS`.

    Takes a :class:`~plait.spi.Checkpoint` too, so a save need not build its
    :attr:`~plait.spi.Checkpoint.info` first.
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


class CheckpointStoreBase:
    """The lifecycle of a checkpoint store: ``url``, ``repr``, ``aclose`` and ``async with``.

    A subclass sets ``url`` (through :func:`redact_url` if it can hold a password) and
    calls ``self._check_open()`` before any work. ``async with store:`` closes the store
    on the way out. A subclass that holds connections or files overrides :meth:`aclose`,
    calling ``await super().aclose()`` first, so a store is closed even if releasing
    them fails.
    """

    #: The store's URL, without a password: how messages name the store.
    url: str
    _closed: bool = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url!r}>"

    def _check_open(self) -> None:
        """Raise :class:`~plait.StoreUnavailableError` if the store is closed."""
        if self._closed:
            raise StoreUnavailableError(f"checkpoint store {self.url} is closed")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store; later calls raise :class:`~plait.StoreUnavailableError`."""
        self._closed = True
