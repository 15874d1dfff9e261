"""How a run runs: the run options ``Workflow.run(message, **options)`` accepts, checked
at once, and the retry and timeout policies the runner applies per executor invocation.

Run options are set per run; policies per executor, per workflow or per node (see
:func:`plait._graph.resolve_limits` for the precedence).

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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ._errors import RunOptionError

__all__ = ["Policy", "RetryPolicy", "RunOptions", "error_matches"]


# -- retry and timeout policies ---------------------------------------------------

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


# -- run options -------------------------------------------------------------------


#: ``max_supersteps`` when neither the run nor the workflow sets it, for a graph with a
#: cycle (a graph without one adds its longest path: see ``Workflow``).
DEFAULT_MAX_SUPERSTEPS = 100


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RunOptionError(f"run option {attribute.name} must be a positive int, got {value!r}")


def _positive_seconds(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise RunOptionError(
            f"run option {attribute.name} must be a positive number of seconds, got {value!r}"
        )


def _positive_map(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    for key, limit in value.items():
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise RunOptionError(
                f"run option {attribute.name}[{key!r}] must be a positive int, got {limit!r}"
            )


def _run_id(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise RunOptionError(f"run option run_id must be a non-empty string, got {value!r}")


#: What a run needs of a checkpoint store object (see ``plait_durable.CheckpointStore``).
_STORE_METHODS = ("save", "load", "latest", "list", "acquire_lease", "renew_lease",
                  "release_lease")  # fmt: skip


def _store(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None or isinstance(value, str):
        return
    missing = [m for m in _STORE_METHODS if not callable(getattr(value, m, None))]
    if missing:
        raise RunOptionError(
            f"run option checkpoint must be a store URL ('sqlite:///runs.db') or a checkpoint "
            f"store, got {type(value).__name__} {value!r} (it has no {', '.join(missing)})"
        )


def _stop_flag(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(getattr(value, "is_set", None)):
        raise RunOptionError(
            f"run option stop must have an is_set() method (an anyio.Event, a "
            f"threading.Event), got {type(value).__name__} {value!r}"
        )


def _callable(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise RunOptionError(
            f"run option {attribute.name} must be callable, got {type(value).__name__} {value!r}"
        )


def _reducers(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, Mapping):
        raise RunOptionError(
            f"run option shared_reducers must be a dict of key -> reducer(current, update), "
            f"got {type(value).__name__}"
        )
    for key, reducer in value.items():
        if not isinstance(key, str) or not callable(reducer):
            raise RunOptionError(
                f"run option shared_reducers[{key!r}] must map a string key to a callable "
                f"reducer(current, update), got {type(reducer).__name__} {reducer!r}"
            )


#: Keys of a checkpoint's metadata that the kernel writes itself.
_RESERVED_METADATA = frozenset({"workflow", "topology", "error", "observers", "fingerprint"})
_JSON_SCALARS = (str, int, float, bool, type(None))


def _metadata(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    def json_ready(item: Any, where: str) -> None:
        if isinstance(item, _JSON_SCALARS):
            return
        if isinstance(item, (list, tuple)):
            for index, element in enumerate(item):
                json_ready(element, f"{where}[{index}]")
            return
        if isinstance(item, Mapping):
            for key, element in item.items():
                if not isinstance(key, str):
                    raise RunOptionError(
                        f"run option checkpoint_metadata{where} has a non-string key {key!r}"
                    )
                json_ready(element, f"{where}[{key!r}]")
            return
        raise RunOptionError(
            f"run option checkpoint_metadata{where} must be JSON-ready (str, int, float, "
            f"bool, None, lists and string-keyed dicts), got {type(item).__name__}"
        )

    if not isinstance(value, Mapping):
        raise RunOptionError(
            f"run option checkpoint_metadata must be a dict, got {type(value).__name__}"
        )
    json_ready(value, "")
    taken = sorted(_RESERVED_METADATA & set(value))
    if taken:
        raise RunOptionError(
            f"run option checkpoint_metadata may not set {', '.join(taken)}: the kernel "
            "writes those keys itself"
        )


def _lead(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise RunOptionError(
            f"run option max_lead must be a non-negative int or None (unbounded), got {value!r}"
        )


def _schedule(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # which names exist is the registry's to say, when the run starts (the runner asks it)
    if not isinstance(value, str) or not value:
        raise RunOptionError(
            "run option schedule must be the name of a schedule ('superstep', the default, "
            f"or one a plugin registers, such as 'pipelined'), got {value!r}"
        )


def _flag(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise RunOptionError(
            f"run option {attribute.name} must be True or False, got {type(value).__name__} "
            f"{value!r}"
        )


def _one_of(*choices: str) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and value not in choices:
            raise RunOptionError(
                f"run option {attribute.name} must be one of {', '.join(choices)}, got {value!r}"
            )

    return check


@attrs.frozen(kw_only=True)
class RunOptions:
    """Options of one run. ``Workflow.run(msg, **options)`` rejects unknown names.

    :param max_supersteps: fail the run past this many supersteps (default 100; a
        workflow whose graph has no cycle defaults to 100 plus its longest path, since
        only a cycle can make a run go on for ever).
    :param max_concurrency: at most this many handlers at once in the whole run.
    :param max_visits: at most this many supersteps per executor (a cycle bound).
    :param executor_concurrency: per-executor handler concurrency within a superstep.
    :param executor_max_visits: per-executor visit limits (override ``max_visits``).
    :param events: ``"lifecycle"`` (run started/finished, outputs, requests) or ``"all"``;
        ``run()`` defaults to lifecycle, ``stream()`` to all.
    :param run_id: the run's id (default: a new UUID).
    :param raise_on_failure: raise the run's error (default) or return a failed result.
    :param checkpoint: a checkpoint store or store URL; a checkpoint per superstep.
    :param durability: ``sync``, ``async`` or ``exit`` (see the durable-runs guide).
    :param lease_ttl: seconds the run's lease (one writer per run) lives without renewal;
        a worker that died on another host loses it after this long (default 30).
    :param checkpoint_metadata: JSON-ready annotations added to the metadata of every
        checkpoint the run writes (the CLI records how to load the workflow again).
    :param on_event: called with every event as it happens (with ``events="all"``, every
        superstep and invocation event too) instead of collecting them in the result's
        ``events``: a progress display's feed. It must not block.
    :param stop: an object with ``is_set()`` (an :class:`anyio.Event`, a
        :class:`threading.Event`) asked at each superstep boundary; once set, the run
        ends there, after that superstep's checkpoint, with status ``running`` and what
        is still pending kept for :meth:`~plait.Workflow.resume`. How ``plait run`` stops
        on Ctrl-C.
    :param shared_reducers: shared-state key -> ``reducer(current, update)``: how the
        writes of several executors to that key in one superstep combine (folded in the
        canonical order: the executors' rank in the graph, then the order of their
        writes). Without one, two executors writing one key in one superstep is a
        :class:`~plait.SharedStateConflictError`.
    :param journal: write the run's event journal (:class:`plait_durable.EventJournal`): when
        each invocation started and ended, its attempts, retries, timeouts and errors, saved
        with each superstep's checkpoint; what ``plait ui`` draws as a Gantt. Needs
        ``checkpoint`` on a store that keeps a journal. Off by default, and then free.
    :param watch: called once as the run starts with a :class:`plait.spi.RunWatch`, a
        live read-only view (superstep, executors running, outputs, retries) that a
        progress display polls at its own pace: it costs the run nothing per superstep.

    :param schedule: ``"superstep"`` (the default: a barrier per superstep, the kernel's
        own) or the name of a schedule a plugin registers (``plait_register_schedules``):
        ``"pipelined"``, from ``plait-pipeline``, runs an executor as soon as nothing still
        active can send it a message for its logical superstep, with the superstep
        schedule's results (see the Schedules guide). A workflow's spec may set a default
        (``options``). A name no plugin registers fails the run as it starts.
    :param max_lead: in a schedule without the barrier (``pipelined``), how many
        supersteps work may run ahead of the lowest superstep with work (``0`` is the
        superstep schedule; ``None``, the default, is unbounded).
    :param strict: a shared-state key read by one executor in the superstep another one
        writes it in fails the run (:class:`~plait.SharedStateRaceError`) instead of
        warning (:class:`~plait.SharedStateRaceWarning`).
    """

    max_supersteps: int = attrs.field(default=DEFAULT_MAX_SUPERSTEPS, validator=_positive)
    max_concurrency: int | None = attrs.field(default=None, validator=_positive)
    max_visits: int | None = attrs.field(default=None, validator=_positive)
    executor_concurrency: Mapping[str, int] = attrs.field(factory=dict, validator=_positive_map)
    executor_max_visits: Mapping[str, int] = attrs.field(factory=dict, validator=_positive_map)
    events: str | None = attrs.field(default=None, validator=_one_of("lifecycle", "all"))
    run_id: str | None = attrs.field(default=None, validator=_run_id)
    raise_on_failure: bool = True
    checkpoint: Any = attrs.field(default=None, validator=_store)
    durability: str = attrs.field(default="sync", validator=_one_of("sync", "async", "exit"))
    lease_ttl: float = attrs.field(default=30.0, validator=_positive_seconds)
    checkpoint_metadata: Mapping[str, Any] = attrs.field(factory=dict, validator=_metadata)
    on_event: Callable[[Any], None] | None = attrs.field(default=None, validator=_callable)
    stop: Any = attrs.field(default=None, validator=_stop_flag)
    watch: Callable[[Any], None] | None = attrs.field(default=None, validator=_callable)
    shared_reducers: Mapping[str, Callable[[Any, Any], Any]] = attrs.field(
        factory=dict, validator=_reducers
    )
    journal: bool = attrs.field(default=False, validator=_flag)
    schedule: str = attrs.field(default="superstep", validator=_schedule)
    max_lead: int | None = attrs.field(default=None, validator=_lead)
    strict: bool = attrs.field(default=False, validator=_flag)

    def __attrs_post_init__(self) -> None:
        if self.journal and self.checkpoint is None:
            raise RunOptionError(
                "run option journal=True needs checkpoint= (a store that keeps an event "
                "journal: the journal is saved with each superstep's checkpoint)"
            )

    @classmethod
    def from_kwargs(cls, defaults: Mapping[str, Any], options: Mapping[str, Any]) -> RunOptions:
        """Merge workflow defaults and call options; unknown names are a RunOptionError."""
        known = {a.name for a in attrs.fields(cls)}
        unknown = sorted((set(defaults) | set(options)) - known)
        if unknown:
            raise RunOptionError(
                f"unknown run option(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**{**defaults, **options})
