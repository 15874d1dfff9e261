"""What the memory, file and SQLite stores share: naming, argument checks, lifecycle."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar
from urllib.parse import parse_qsl

from plait.checkpoint import Checkpoint, check_keep_last
from plait.errors import CheckpointError, StoreUnavailableError

__all__ = [
    "StoreBase",
    "where",
    "check_keep_last",
    "duplicate_error",
    "split_query",
]

_S = TypeVar("_S", bound="StoreBase")


def where(run_id: str, checkpoint_id: str) -> str:
    """How errors name one stored checkpoint: ``run 'r1', checkpoint 'c7'``."""
    return f"run {run_id!r}, checkpoint {checkpoint_id!r}"


def duplicate_error(checkpoint: Checkpoint, url: str) -> CheckpointError:
    """The error for saving an id that is stored already with other contents."""
    return CheckpointError(
        f"{where(checkpoint.run_id, checkpoint.checkpoint_id)} is already stored in {url} "
        "with different contents; checkpoint ids must be unique (saving the same "
        "checkpoint again is allowed and does nothing)"
    )


def split_query(url: str, *, allowed: frozenset[str]) -> tuple[str, dict[str, str]]:
    """Split ``url`` into the part before ``?`` and its query options.

    :raises ValueError: an option not in ``allowed``, naming the ones that are.
    """
    head, _, query = url.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} in checkpoint store url {url!r}; "
            f"known options: {known}"
        )
    return head, options


class StoreBase:
    """Lifecycle every store here shares: ``url``, ``repr``, ``aclose`` and ``async with``."""

    url: str
    _closed: bool = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url!r}>"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError(f"checkpoint store {self.url} is closed")

    async def __aenter__(self: _S) -> _S:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store; later calls raise :class:`~plait.errors.StoreUnavailableError`."""
        self._closed = True
