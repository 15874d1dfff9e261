"""What a replay refuses: a record it cannot read, a call it has no answer for, a
network attempt."""

from __future__ import annotations

from plait import PlaitError

__all__ = ["RecordedCallError", "ReplayError", "ReplayMissError", "ReplayNetworkError"]


class ReplayError(PlaitError):
    """A run cannot be replayed: the store holds no such run, or the run was not
    recorded."""


class ReplayMissError(ReplayError):
    """A call today's code makes that the record has no answer for (a changed prompt, a
    new call): its executor, superstep, kind, and the diff of its request against the
    nearest recorded one."""

    def __init__(
        self, message: str, *, executor_id: str, superstep: int, kind: str, diff: str
    ) -> None:
        super().__init__(message)
        self.executor_id = executor_id
        self.superstep = superstep
        self.kind = kind
        #: the request's diff against the nearest recorded request (unified diff lines)
        self.diff = diff


class ReplayNetworkError(ReplayError, ConnectionError):
    """Something tried to reach the network during a replay, outside a call the record
    answers: the executor it ran in, and where it tried to go."""

    def __init__(self, message: str, *, executor_id: str | None, address: str) -> None:
        super().__init__(message)
        self.executor_id = executor_id
        self.address = address


class RecordedCallError(ReplayError):
    """A call that failed when it was recorded fails the same way when a cassette answers
    it: its message is the recorded error's class name and message (a model's refusal of a
    prompt past its context window stays a refusal).

    :param error_type: the recorded error's class name.
    :param error: its message.
    """

    def __init__(self, error_type: str, error: str) -> None:
        super().__init__(f"{error_type}: {error}")
        self.error_type = error_type
        self.error = error
