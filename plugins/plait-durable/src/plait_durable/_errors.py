"""The errors of durable runs: what the durability, the checkpoint stores and the store
wrappers raise about checkpoints, leases and resuming. Each is a
:class:`plait.CheckpointError` (the root, which the kernel keeps: ``except
plait.CheckpointError`` catches them all), except :class:`ResponseTypeError`.
"""

from __future__ import annotations

from plait import CheckpointError, PlaitError

__all__ = [
    "CheckpointNotFoundError",
    "CorruptCheckpointError",
    "CheckpointDecodeError",
    "CheckpointAuthError",
    "RunLeaseError",
    "CheckpointEncodeError",
    "TopologyMismatchError",
    "WorkflowChangedError",
    "StoreUnavailableError",
    "ResponseTypeError",
]


class CheckpointNotFoundError(CheckpointError, LookupError):
    """No checkpoint with that id (or no checkpoint for that run)."""


class CorruptCheckpointError(CheckpointError):
    """A stored checkpoint does not decode or fails its integrity check."""


class CheckpointDecodeError(CorruptCheckpointError):
    """A stored checkpoint names a type the workflow does not declare (or holds a value
    that does not rebuild into its declared type); names the run, the checkpoint and the
    type tag. Nothing named only by stored data is ever imported or built.
    """


class CheckpointAuthError(CorruptCheckpointError):
    """A checkpoint fails the authenticity check of the store wrapper that reads it: its
    MAC is missing or wrong for every configured key, or an encrypted checkpoint cannot
    be decrypted with them (the ``plait-sealing`` plugin raises it).
    """


class RunLeaseError(CheckpointError):
    """Another live worker holds the run's lease (one writer per run), or this worker's
    lease was taken over; names the holder (host, pid, since).
    """


class CheckpointEncodeError(CheckpointError):
    """A value in the run's state cannot be encoded; names the executor or state key."""


class TopologyMismatchError(CheckpointError):
    """A checkpoint was taken on a different graph than the one resuming it."""


class WorkflowChangedError(TopologyMismatchError):
    """A checkpoint was taken on the same graph but a different workflow: a node's kind,
    config, code (its source), policies or types, an edge's options, or the declared
    types changed (see plait-durable's fingerprint). ``changes`` lists each, as the message
    does. ``accept_changes=True`` (``plait resume --accept-changes``) resumes anyway.
    """

    def __init__(self, message: str, changes: list[str] | None = None) -> None:
        super().__init__(message)
        self.changes: list[str] = list(changes or [])


class StoreUnavailableError(CheckpointError):
    """A checkpoint store cannot be reached."""


class ResponseTypeError(PlaitError, TypeError):
    """A human-in-the-loop response has the wrong type; the request stays pending."""
