"""The routers of plait-routing and the edge runners they create (see the package's table),
imported when a workflow is first built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from plait import EdgeGroupSpec, InvocationFailure, RoutingError
from plait.spi import Delivery, RouterEnv

__all__ = [
    "CONDITIONAL",
    "DirectRouter",
    "ErrorEdgeRunner",
    "ErrorRouter",
    "FanInBuffers",
    "FanInEdgeRunner",
    "FanInRouter",
    "FanOutEdgeRunner",
    "FanOutRouter",
    "SingleEdgeRunner",
    "SwitchEdgeRunner",
    "SwitchRouter",
]

Predicate = Callable[[Any], bool]


def _one(group: EdgeGroupSpec, end: str, names: Sequence[str]) -> str:
    if len(names) != 1:
        raise ValueError(f"router {group.router!r} needs exactly one {end}, got {len(names)}")
    return names[0]


def _callable(
    group: EdgeGroupSpec,
    params: Mapping[str, Any],
    key: str,
    env: RouterEnv,
    role: str = "predicate",
) -> Any:
    """The callable for option ``key``: the in-process one the builder passed, else the
    one the spec records (an expression or an import path), made by ``env``."""
    fn = params.get(key)
    if fn is None and key in group.options:
        return env.callable(group.options[key], what=f"edge group {group.id!r} {key}", role=role)
    if fn is not None and not callable(fn):
        raise ValueError(f"{key} of router {group.router!r} must be callable, got {fn!r}")
    return fn


class _Stateless:
    """Shared behaviour of routers that keep no per-run state."""

    group: EdgeGroupSpec
    stateful = False
    needs_flush = False
    passthrough: str | None = None

    def initial_state(self) -> None:
        return None

    def flush(self, state: Any, can_still_send: Callable[[str], bool]) -> list[Delivery]:
        return []

    def snapshot(self, state: Any, encode: Callable[[Any], Any]) -> Any:
        return None

    def restore(self, data: Any, decode: Callable[[Any], Any]) -> Any:
        return None

    def message_types(self, source_types: Sequence[Any]) -> Mapping[str, Sequence[Any]]:
        return {target: source_types for target in self.group.targets}


# -- direct / conditional ------------------------------------------------------------------


class SingleEdgeRunner(_Stateless):
    """One source, one target, an optional condition."""

    def __init__(self, group: EdgeGroupSpec, condition: Predicate | None) -> None:
        self.group = group
        self.source = _one(group, "source", group.sources)
        self.target = _one(group, "target", group.targets)
        self.condition = condition
        # without a condition, every message goes on to the target as it is
        self.passthrough = self.target if condition is None else None

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        if target is not None and target != self.target:
            return []
        if self.condition is not None and not self.condition(message):
            return []
        return [(self.target, message)]


class DirectRouter:
    """``direct`` and ``conditional``: a single edge (``condition`` required for the latter)."""

    stateful = False

    def __init__(self, *, require_condition: bool = False) -> None:
        self.require_condition = require_condition

    def create(
        self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv
    ) -> SingleEdgeRunner:
        condition = _callable(group, params, "condition", env)
        if self.require_condition and condition is None:
            raise ValueError("router 'conditional' needs a condition")
        return SingleEdgeRunner(group, condition)


# -- fan-out ---------------------------------------------------------------------------------


class FanOutEdgeRunner(_Stateless):
    """One source to many targets, all or a selection."""

    def __init__(self, group: EdgeGroupSpec, selection: Any) -> None:
        self.group = group
        self.targets = group.targets
        self.target_set = frozenset(group.targets)
        self.selection = selection

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        if target is not None:
            return [(target, message)] if target in self.target_set else []
        if self.selection is None:
            return [(t, message) for t in self.targets]
        chosen = list(self.selection(message, list(self.targets)))
        unknown = [t for t in chosen if t not in self.target_set]
        if unknown:
            raise RoutingError(
                f"selection of fan-out {self.group.id!r} chose {', '.join(map(repr, unknown))}, "
                f"not among its targets {', '.join(self.targets)}"
            )
        return [(t, message) for t in chosen]


class FanOutRouter:
    """``fan_out``: broadcast, or ``selection(message, targets) -> targets``."""

    stateful = False

    def create(
        self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv
    ) -> FanOutEdgeRunner:
        _one(group, "source", group.sources)
        return FanOutEdgeRunner(group, _callable(group, params, "selection", env, "selection"))


# -- switch ----------------------------------------------------------------------------------


class SwitchEdgeRunner(_Stateless):
    """Ordered predicates; the first that matches picks the target, else the default."""

    def __init__(
        self, group: EdgeGroupSpec, cases: Sequence[tuple[Predicate, str]], default: str | None
    ) -> None:
        self.group = group
        self.cases = tuple(cases)
        self.default = default

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        if target is not None:  # the sender chose: honour it when the switch can reach it
            return [(target, message)] if target in self.group.targets else []
        for predicate, case_target in self.cases:
            if predicate(message):
                return [(case_target, message)]
        if self.default is not None:
            return [(self.default, message)]
        raise RoutingError(
            f"switch {self.group.id!r} has no case matching a {type(message).__name__} "
            f"message from {source!r} and no default (add a default target)",
            executor_id=source,
        )


class SwitchRouter:
    """``switch``: options ``case_targets`` and ``default``; params ``cases`` (predicates)."""

    stateful = False

    def create(
        self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv
    ) -> SwitchEdgeRunner:
        _one(group, "source", group.sources)
        targets = list(group.options.get("case_targets", ()))
        given = list(params.get("cases", ()))
        recorded = list(group.options.get("cases", ()))
        predicates = [
            given[i]
            if i < len(given) and given[i] is not None
            else env.callable(recorded[i], what=f"switch {group.id!r} case {i}")
            for i in range(max(len(given), len(recorded)))
        ]
        if len(targets) != len(predicates):
            raise ValueError(
                f"switch has {len(targets)} case target(s) but {len(predicates)} predicate(s)"
            )
        for i, predicate in enumerate(predicates):
            if not callable(predicate):
                raise ValueError(f"switch case {i} predicate is not callable: {predicate!r}")
        default = group.options.get("default")
        known = set(group.targets)
        for name in [*targets, *([default] if default else [])]:
            if name not in known:
                raise ValueError(f"switch target {name!r} is not among the group's targets")
        return SwitchEdgeRunner(group, list(zip(predicates, targets)), default)


# -- error edges -----------------------------------------------------------------------------


class ErrorEdgeRunner(_Stateless):
    """An error edge: ordinary messages never cross it (the runner delivers failures)."""

    def __init__(self, group: EdgeGroupSpec) -> None:
        self.group = group

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        return []

    def message_types(self, source_types: Sequence[Any]) -> Mapping[str, Sequence[Any]]:
        return {target: (InvocationFailure,) for target in self.group.targets}


class ErrorRouter:
    """``error``: where failures of the sources go instead of failing the run."""

    stateful = False

    def create(
        self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv
    ) -> ErrorEdgeRunner:
        return ErrorEdgeRunner(group)


# -- fan-in ----------------------------------------------------------------------------------


class FanInBuffers:
    """A fan-in's per-run state: waiting messages per source, and how many sources have one."""

    __slots__ = ("queues", "ready")

    def __init__(self, sources: Sequence[str]) -> None:
        self.queues: dict[str, list[Any]] = {source: [] for source in sources}
        self.ready = 0

    def push(self, source: str, message: Any) -> None:
        queue = self.queues[source]
        if not queue:
            self.ready += 1
        queue.append(message)

    def pop(self, source: str) -> Any:
        queue = self.queues[source]
        message = queue.pop(0)
        if not queue:
            self.ready -= 1
        return message


class FanInEdgeRunner:
    """A barrier over many sources, delivering one merged message to one target.

    Per run, the state is a :class:`FanInBuffers`. When every source has a message
    waiting, the first of each is merged (in source-declaration order) and delivered;
    later messages wait for the next round.
    """

    stateful = True
    passthrough = None

    def __init__(self, group: EdgeGroupSpec, merge: Any, merge_name: str, when: str) -> None:
        self.group = group
        self.sources = group.sources
        self.target = _one(group, "target", group.targets)
        self.merge = merge
        self.merge_name = merge_name
        self.when = when
        self.needs_flush = when == "available"

    def initial_state(self) -> FanInBuffers:
        return FanInBuffers(self.sources)

    def route(
        self, source: str, message: Any, target: str | None, state: FanInBuffers
    ) -> list[Delivery]:
        if target is not None and target != self.target:
            return []
        state.push(source, message)
        if state.ready < len(self.sources):
            return []
        values = [state.pop(s) for s in self.sources]
        return [(self.target, self.merge.merge(values, self.sources))]

    def flush(self, state: FanInBuffers, can_still_send: Callable[[str], bool]) -> list[Delivery]:
        if not state.ready:
            return []
        queues = state.queues
        if any(can_still_send(s) for s in self.sources if not queues[s]):
            return []
        arrived = [s for s in self.sources if queues[s]]
        values = [state.pop(s) for s in arrived]
        return [(self.target, self.merge.merge(values, arrived))]

    def snapshot(self, state: FanInBuffers, encode: Callable[[Any], Any]) -> Any:
        return {source: [encode(m) for m in queue] for source, queue in state.queues.items()}

    def restore(self, data: Any, decode: Callable[[Any], Any]) -> FanInBuffers:
        state = self.initial_state()
        for source, messages in (data or {}).items():
            for message in messages:
                state.push(source, decode(message))
        return state

    def message_types(self, source_types: Sequence[Any]) -> Mapping[str, Sequence[Any]]:
        if not source_types:
            return {self.target: ()}
        union = source_types[0] if len(source_types) == 1 else Union[tuple(source_types)]  # noqa: UP007
        return {self.target: (self.merge.output_type(union),)}


class FanInRouter:
    """``fan_in``: options ``merge`` (strategy name, default ``list``), ``when``, and
    ``merge_options`` (a mapping handed to the strategy's ``with_options``, e.g.
    ``{"separator": " | "}`` for ``concat``)."""

    stateful = True

    def create(
        self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv
    ) -> FanInEdgeRunner:
        merge_name = group.options.get("merge", "list")
        when = group.options.get("when", "all")
        if when not in ("all", "available"):
            raise ValueError(f"fan-in option when must be 'all' or 'available', got {when!r}")
        merge = env.lookup("merge_strategy", merge_name, what=f"fan-in {group.id!r}")
        merge_options = group.options.get("merge_options")
        if merge_options:
            merge = _configured(merge, merge_name, merge_options)
        return FanInEdgeRunner(group, merge, merge_name, when)


def _configured(merge: Any, merge_name: str, options: Any) -> Any:
    """``merge`` configured by ``options`` through its ``with_options``."""
    if not isinstance(options, Mapping):
        raise ValueError(f"fan-in option merge_options must be a mapping, got {options!r}")
    with_options = getattr(merge, "with_options", None)
    if with_options is None:
        raise ValueError(
            f"merge strategy {merge_name!r} takes no options, got {', '.join(map(repr, options))}"
        )
    return with_options(dict(options))


#: ``conditional``: a direct edge whose condition is required
CONDITIONAL = DirectRouter(require_condition=True)
