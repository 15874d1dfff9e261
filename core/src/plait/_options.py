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
from typing import Any, Protocol, TypeVar, cast

import attrs

from ._errors import RunOptionError
from ._records import record_repr

__all__ = [
    "DeclaredOption",
    "DeclaredOptions",
    "Policy",
    "RetryPolicy",
    "RunOptions",
    "error_matches",
]

T = TypeVar("T")


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


@attrs.frozen(kw_only=True, repr=False)
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

    __repr__ = record_repr

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


def _positive_map(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    for key, limit in value.items():
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise RunOptionError(
                f"run option {attribute.name}[{key!r}] must be a positive int, got {limit!r}"
            )


def _run_id(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise RunOptionError(f"run option run_id must be a non-empty string, got {value!r}")


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


@attrs.frozen(kw_only=True, repr=False)
class RunOptions:
    """Options of one run. ``Workflow.run(msg, **options)`` rejects unknown names.

    These are the kernel's; plugins declare their own (``plait_register_run_options``),
    each group an attrs class: ``checkpoint``, ``durability``, ``lease_ttl``,
    ``checkpoint_metadata`` and ``journal`` come with ``plait-durable``
    (``plait_durable.DurableOptions``), ``max_lead`` with ``plait-pipeline``
    (``plait_pipeline.PipelineOptions``). A run's options of a group are
    :meth:`of` it; a run that sets ``checkpoint`` is a durable one.

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
    :param watch: called once as the run starts with a :class:`plait.spi.RunWatch`, a
        live read-only view (superstep, executors running, outputs, retries) that a
        progress display polls at its own pace: it costs the run nothing per superstep.

    :param schedule: ``"superstep"`` (the default: a barrier per superstep, the kernel's
        own) or the name of a schedule a plugin registers (``plait_register_schedules``):
        ``"pipelined"``, from ``plait-pipeline``, runs an executor as soon as nothing still
        active can send it a message for its logical superstep, with the superstep
        schedule's results (see the Schedules guide). A workflow's spec may set a default
        (``options``). A name no plugin registers fails the run as it starts.
    :param strict: a shared-state key read by one executor in the superstep another one
        writes it in fails the run (:class:`~plait.SharedStateRaceError`) instead of
        warning (:class:`~plait.SharedStateRaceWarning`).
    """

    __repr__ = record_repr

    max_supersteps: int = attrs.field(default=DEFAULT_MAX_SUPERSTEPS, validator=_positive)
    max_concurrency: int | None = attrs.field(default=None, validator=_positive)
    max_visits: int | None = attrs.field(default=None, validator=_positive)
    executor_concurrency: Mapping[str, int] = attrs.field(factory=dict, validator=_positive_map)
    executor_max_visits: Mapping[str, int] = attrs.field(factory=dict, validator=_positive_map)
    events: str | None = attrs.field(default=None, validator=_one_of("lifecycle", "all"))
    run_id: str | None = attrs.field(default=None, validator=_run_id)
    raise_on_failure: bool = True
    on_event: Callable[[Any], None] | None = attrs.field(default=None, validator=_callable)
    stop: Any = attrs.field(default=None, validator=_stop_flag)
    watch: Callable[[Any], None] | None = attrs.field(default=None, validator=_callable)
    shared_reducers: Mapping[str, Callable[[Any, Any], Any]] = attrs.field(
        factory=dict, validator=_reducers
    )
    schedule: str = attrs.field(default="superstep", validator=_schedule)
    strict: bool = attrs.field(default=False, validator=_flag)

    #: what plugins declare (``plait_register_run_options``), as the run sets it: one
    #: object of each group class the run gives an option of (see :meth:`of`)
    plugin_options: Mapping[type, Any] = attrs.field(factory=dict)
    #: the plugins' options the run sets, by name (what :meth:`value` answers)
    plugin_values: Mapping[str, Any] = attrs.field(factory=dict)

    def of(self, group: type[T]) -> T:
        """The options of the group ``group`` (the class a plugin declared with
        ``plait_register_run_options``) as this run sets them; its defaults when the run
        sets none of them."""
        found = self.plugin_options.get(group)
        return group() if found is None else cast("T", found)

    def value(self, name: str) -> Any:
        """The value of the plugin's option ``name`` the run sets, or ``None``."""
        return self.plugin_values.get(name)

    @classmethod
    def from_kwargs(
        cls,
        defaults: Mapping[str, Any],
        options: Mapping[str, Any],
        declared: DeclaredOptions | None = None,
    ) -> RunOptions:
        """Merge workflow defaults and call options, the kernel's and those plugins declare.

        :param declared: the plugins' declared options (the plugin manager); asked only
            when a name is not the kernel's.
        :raises RunOptionError: an unknown name (listing every option, by the
            distribution that declares it, and what it may be a misspelling of), or a bad
            value.
        """
        merged = {**defaults, **options}
        extra = [name for name in merged if name not in _KERNEL_OPTIONS]
        if not extra:
            return cls(**merged)
        table = declared.run_options() if declared is not None else {}
        unknown = sorted(name for name in extra if name not in table)
        if unknown:
            raise RunOptionError(_unknown(unknown, table, declared))
        groups: dict[type, dict[str, Any]] = {}
        values = {}
        for name in extra:
            values[name] = merged.pop(name)
            groups.setdefault(table[name].group, {})[name] = values[name]
        made = {group: group(**given) for group, given in groups.items()}
        return cls(**merged, plugin_options=made, plugin_values=values)


#: the names :meth:`RunOptions.from_kwargs` takes as the kernel's own
_KERNEL_OPTIONS = frozenset(
    a.name for a in attrs.fields(RunOptions) if not a.name.startswith("plugin_")
)


@attrs.frozen(repr=False)
class DeclaredOption:
    """One run option a plugin declares: the group class it is a field of, and the
    distribution that declares it."""

    __repr__ = record_repr

    group: type
    distribution: str


class DeclaredOptions(Protocol):
    """Where the run options plugins declare come from (the plugin manager)."""

    def run_options(self) -> Mapping[str, DeclaredOption]:
        """Every declared option by name."""

    def install_hint(self, kind: str, name: str) -> str | None:
        """Which distribution provides ``name`` of ``kind``, and how to install it."""


def _unknown(
    unknown: list[str], table: Mapping[str, DeclaredOption], declared: DeclaredOptions | None
) -> str:
    """The message of unknown run option names: each with what it may be a misspelling of
    (or where it comes from, when a plugin not installed here declares it), then every
    option there is, by the distribution that declares it."""
    import difflib

    known = sorted(_KERNEL_OPTIONS | set(table))
    said = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=3)
        hint = declared.install_hint("run_option", name) if declared is not None else None
        if hint:
            said.append(f"{name} ({hint})")
        elif close:
            said.append(f"{name} (did you mean {' or '.join(close)}?)")
        else:
            said.append(name)
    by_distribution: dict[str, list[str]] = {"plait-core": sorted(_KERNEL_OPTIONS)}
    for name, option in sorted(table.items()):
        by_distribution.setdefault(option.distribution, []).append(name)
    listed = "; ".join(f"{dist}: {', '.join(names)}" for dist, names in by_distribution.items())
    return f"unknown run option(s): {', '.join(said)}; known: {listed}"
