"""Errors of the ``ray`` placement (importable without Ray)."""

from __future__ import annotations

from plait import PlaitError

__all__ = ["RayConnectError", "RemoteInvocationError", "WorkerLostError"]


class WorkerLostError(PlaitError):
    """The Ray worker (actor process) running an invocation died before answering.

    Under a retry policy the runner retries the invocation on a fresh actor; without one
    the run fails with this error, which names the executor, the Ray node and the pid.
    """

    def __init__(self, message: str, *, executor_id: str, node: str | None, pid: int | None):
        self.executor_id = executor_id
        self.node = node
        self.pid = pid
        super().__init__(message)


class RayConnectError(PlaitError):
    """Ray could not be started or joined (the address is named)."""


class RemoteInvocationError(PlaitError):
    """A placed handler raised an exception whose class cannot be rebuilt on the driver
    (only built-in exception classes are); ``remote_type`` names it, ``remote_traceback``
    is the worker's traceback.
    """

    def __init__(self, remote_type: str, message: str, remote_traceback: str = "") -> None:
        self.remote_type = remote_type
        self.remote_traceback = remote_traceback
        super().__init__(f"{remote_type}: {message}")
