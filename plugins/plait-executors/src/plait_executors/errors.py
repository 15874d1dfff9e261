"""Errors raised by this plugin's executors when they run.

Each is a :class:`plait.PlaitError`; the runner wraps it in an
:class:`~plait.ExecutorFailedError` naming the executor and the superstep, with this
error as the ``__cause__``. Config problems are :class:`plait.ConfigError`\\ s, found
when the workflow is built, not these.
"""

from __future__ import annotations

from plait import PlaitError

__all__ = [
    "ExecutorKindError",
    "HttpError",
    "HttpRequestError",
    "HttpResponseError",
    "HttpStatusError",
    "HttpTimeoutError",
    "ShellCommandError",
    "ShellError",
    "ShellOutputError",
    "ShellOutputLimitError",
    "ShellTimeoutError",
]


class ExecutorKindError(PlaitError):
    """Base of the run-time failures of ``plait-executors``' executors.

    :param executor_id: the executor that failed.
    """

    def __init__(self, message: str, *, executor_id: str) -> None:
        self.executor_id = executor_id
        super().__init__(f"executor {executor_id!r}: {message}")


# -- shell -----------------------------------------------------------------------------------


class ShellError(ExecutorKindError):
    """A ``shell`` executor failed."""


class ShellCommandError(ShellError):
    """The program exited with a non-zero status (or was killed by a signal).

    :param exit_code: its exit status (negative: killed by that signal, as in
        :mod:`subprocess`).
    :param stderr_tail: the last bytes of its standard error, decoded.
    """

    def __init__(self, message: str, *, executor_id: str, exit_code: int, stderr_tail: str) -> None:
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        super().__init__(message, executor_id=executor_id)


class ShellTimeoutError(ShellError):
    """The program ran longer than ``timeout`` seconds; it was killed.

    :param timeout: the limit, in seconds.
    """

    def __init__(self, message: str, *, executor_id: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(message, executor_id=executor_id)


class ShellOutputLimitError(ShellError):
    """The program wrote more than ``max_output`` bytes to standard output; it was killed.

    :param max_output: the limit, in bytes.
    """

    def __init__(self, message: str, *, executor_id: str, max_output: int) -> None:
        self.max_output = max_output
        super().__init__(message, executor_id=executor_id)


class ShellOutputError(ShellError):
    """The standard output does not decode as the config's ``output`` says (UTF-8, JSON)."""


# -- http ------------------------------------------------------------------------------------


class HttpError(ExecutorKindError):
    """An ``http`` executor failed.

    :param url: the URL it requested.
    """

    def __init__(self, message: str, *, executor_id: str, url: str) -> None:
        self.url = url
        super().__init__(message, executor_id=executor_id)


class HttpStatusError(HttpError):
    """The server answered with a status outside 2xx.

    :param status_code: the HTTP status.
    :param body_tail: the start of the response body, decoded (for the message).
    """

    def __init__(
        self, message: str, *, executor_id: str, url: str, status_code: int, body_tail: str
    ) -> None:
        self.status_code = status_code
        self.body_tail = body_tail
        super().__init__(message, executor_id=executor_id, url=url)


class HttpTimeoutError(HttpError):
    """No complete answer within ``timeout`` seconds.

    :param timeout: the limit, in seconds.
    """

    def __init__(self, message: str, *, executor_id: str, url: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(message, executor_id=executor_id, url=url)


class HttpRequestError(HttpError):
    """The request could not be made (connection refused, bad host …); the httpx error is
    the ``__cause__``."""


class HttpResponseError(HttpError):
    """A 2xx answer whose body is not what ``response`` says (JSON)."""
