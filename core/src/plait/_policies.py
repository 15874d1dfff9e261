"""Retry and timeout policies, applied by the runner per executor invocation.

An executor gets a :class:`RetryPolicy` and a ``timeout`` through the builder
(``add_executor(x, retry=RetryPolicy(...), timeout=5)``), the spec (``NodeSpec.retry``,
``NodeSpec.timeout``) or workflow-wide defaults (``WorkflowSpec.options["retry"]`` /
``["timeout"]``). With neither set, the runner's hot path is unchanged.

Attempts are transactional: what a failed attempt sent, yielded, changed in its state or
emitted as custom events is discarded, so downstream sees exactly one successful attempt.
``ctx.attempt`` counts attempts (1-based) and ``ctx.idempotency_key`` names the invocation
(run, superstep, executor, message index): it is the same on every attempt and after a
crash and resume, so an executor with side effects can de-duplicate them. Supersteps
commit atomically; executors run at least once.

.. versionadded:: 0.1
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._errors import RunOptionError

__all__ = ["Policy", "RetryPolicy", "error_matches"]

# a pattern, compiled (and cached by re) on first use: a cold start never pays
_NAME = r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$"


def _on(value: Iterable[Any] | Any) -> tuple[Any, ...]:
    if isinstance(value, (str, type)):
        value = (value,)
    items = tuple(value)
    for item in items:
        if isinstance(item, type) and issubclass(item, BaseException):
            continue
        if isinstance(item, str) and (item.startswith("re:") or re.match(_NAME, item)):
            if item.startswith("re:"):
                try:
                    re.compile(item[3:])
                except re.error as exc:
                    raise RunOptionError(
                        f"retry.on pattern {item!r} is not a regex: {exc}"
                    ) from exc
            continue
        raise RunOptionError(
            f"retry.on entries are exception types, exception class names ('TimeoutError', "
            f"'mypkg.errors:Flaky') or 're:<pattern>' matched against the error message; "
            f"got {item!r}"
        )
    return items


def _non_negative(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise RunOptionError(f"retry.{attribute.name} must be a number >= 0, got {value!r}")


def _count(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RunOptionError(f"retry.{attribute.name} must be an int >= 0, got {value!r}")


def _backoff(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("fixed", "exponential"):
        raise RunOptionError(f"retry.backoff must be 'fixed' or 'exponential', got {value!r}")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How often and when to retry a failed invocation.

    :param max_attempts: retries after the first attempt (``2``: up to three attempts).
    :param backoff: ``"fixed"`` (``delay`` every time) or ``"exponential"``
        (``delay * 2**(retry-1)``, capped at ``max_delay``).
    :param delay: seconds before the first retry.
    :param max_delay: the cap of an exponential delay.
    :param jitter: a fraction (0..1): each delay is scaled by a random factor in
        ``[1 - jitter, 1 + jitter]``.
    :param on: which errors are retried (default: every error). Exception types, exception
        class names matched against the error's class hierarchy (``"TimeoutError"``,
        ``"mypkg.errors:Flaky"``; nothing is imported), or ``"re:<pattern>"`` searched in
        ``"<ClassName>: <message>"``. A timeout is an ``ExecutorTimeoutError``.

    .. versionadded:: 0.1
    """

    max_attempts: int = attrs.field(default=2, validator=_count)
    backoff: str = attrs.field(default="exponential", validator=_backoff)
    delay: float = attrs.field(default=0.1, validator=_non_negative)
    max_delay: float = attrs.field(default=30.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.0, validator=_non_negative)
    on: tuple[Any, ...] = attrs.field(default=(), converter=_on)

    def delay_before(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if self.backoff == "fixed":
            base = self.delay
        else:
            base = min(self.delay * (2 ** (retry - 1)), self.max_delay)
        if self.jitter:
            import random  # imported on the first jittered retry: a cold start never pays

            base *= random.uniform(max(0.0, 1 - self.jitter), 1 + self.jitter)
        return max(base, 0.0)

    def retries(self, error: BaseException) -> bool:
        """Whether ``error`` is one this policy retries."""
        return not self.on or any(error_matches(error, item) for item in self.on)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (types become ``module:qualname`` names)."""
        return {
            "max_attempts": self.max_attempts,
            "backoff": self.backoff,
            "delay": self.delay,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "on": [
                f"{i.__module__}:{i.__qualname__}" if isinstance(i, type) else i for i in self.on
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetryPolicy:
        """Inverse of :meth:`to_dict`; unknown keys are a :class:`RunOptionError`."""
        known = {a.name for a in attrs.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RunOptionError(
                f"unknown retry option(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**dict(data))


def error_matches(error: BaseException, item: Any) -> bool:
    """Does ``error`` (or the error it wraps, for an executor failure) match ``item``?"""
    if isinstance(item, type):
        return isinstance(error, item)
    text: str = item
    if text.startswith("re:"):
        return re.search(text[3:], f"{type(error).__name__}: {error}") is not None
    for klass in type(error).__mro__:
        if text in (klass.__name__, f"{klass.__module__}:{klass.__qualname__}"):
            return True
        if text == f"{klass.__module__}.{klass.__qualname__}":
            return True
    return False


#: ``(retry policy or None, timeout in seconds or None)`` of one executor
Policy = tuple[RetryPolicy | None, float | None]
