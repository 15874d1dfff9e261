"""The edge protocols: how messages cross an edge group (a :class:`Router`), and how a
fan-in turns one message per source into one (a :class:`MergeStrategy`).

A :class:`Router` is registered by name through ``plait_register_routers``. When a
workflow is built, the router turns each edge group using it into an
:class:`EdgeRunner`. Edge runners are shared by every run of a workflow: anything that
changes during a run (a fan-in's buffers) lives in the per-run ``state`` object the
runner passes in, which the edge runner creates, snapshots and restores.

A delivery is a ``(target_id, message)`` tuple; ``route`` returns a list of them.

Merge strategies are registered by name through ``plait_register_merge_strategies``; the
``plait-merge`` plugin ships ``list`` (the default), ``concat``, ``concat_newline``,
``first``, ``last`` and ``keyed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._errors import RoutingError, UnhandledMessageError, WorkflowRunError
from ._spec import EdgeGroupSpec
from ._types import type_name

if TYPE_CHECKING:
    from ._state import Sent

__all__ = [
    "Delivery",
    "EdgeRunner",
    "MergeStrategy",
    "Router",
    "RouterEnv",
    "flush_buffers",
    "route_outbox",
]

#: ``(target_executor_id, message)``
Delivery = tuple[str, Any]


class RouterEnv(Protocol):
    """What a router may look up while creating an edge runner."""

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
        """The ``kind`` registered as ``name`` (``UnknownNameError`` naming ``what``)."""
        ...

    def callable(self, value: Any, *, what: str, role: str = "predicate") -> Callable[..., Any]:
        """The Python callable for code the spec records in an option (an expression
        ``{"expr": ...}`` or an import path ``{"ref": ...}``, see :func:`plait.spi.import_ref`);
        ``role`` is ``predicate`` (``fn(message) -> bool``) or ``selection``
        (``fn(message, targets) -> list[str]``). Errors name ``what``.
        """
        ...


@runtime_checkable
class EdgeRunner(Protocol):
    """One edge group, ready to route.

    ``stateful`` runners get a state from :meth:`initial_state` per run; stateless ones
    get ``None``. ``needs_flush`` runners are asked to :meth:`flush` after each superstep.
    """

    group: EdgeGroupSpec
    stateful: bool
    needs_flush: bool
    #: the group's one target when it delivers every message of its one source there, as it
    #: is, whatever the message (an edge without a condition), or whenever the sender names
    #: that target; ``None`` otherwise. The runner then delivers a message sent along the
    #: source's only edge group without calling :meth:`route`.
    passthrough: str | None

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        """Where ``message`` from ``source`` goes (``target`` is the sender's explicit choice).

        Raise :class:`~plait.RoutingError` naming the group when it cannot decide.
        """
        ...

    def initial_state(self) -> Any:
        """A fresh per-run state (``None`` if stateless)."""
        ...

    def flush(self, state: Any, can_still_send: Callable[[str], bool]) -> list[Delivery]:
        """Deliver what is buffered if sources that stay silent can no longer send."""
        ...

    def snapshot(self, state: Any, encode: Callable[[Any], Any]) -> Any:
        """JSON-ready form of ``state``; ``encode`` turns a message into JSON-ready data."""
        ...

    def restore(self, data: Any, decode: Callable[[Any], Any]) -> Any:
        """Inverse of :meth:`snapshot`."""
        ...

    def message_types(self, source_types: Sequence[Any]) -> Mapping[str, Sequence[Any]]:
        """Per target, the message types it may receive given the sources' output types."""
        ...


@runtime_checkable
class Router(Protocol):
    """A named way of routing, registered through ``plait_register_routers``."""

    stateful: bool

    def create(self, group: EdgeGroupSpec, params: Mapping[str, Any], env: RouterEnv) -> EdgeRunner:
        """Build the edge runner for ``group``; ``params`` holds callables (predicates,
        selection functions) that cannot live in the JSON spec.

        Raise ``ValueError`` naming the group and the bad option for a misconfiguration.
        """
        ...


# -- what the runner does with them at a superstep's barrier --------------------------------


def route_outbox(
    outbox: Iterable[Sent],
    routes_from: Mapping[str, Sequence[tuple[str, EdgeRunner]]],
    router_state: Mapping[str, Any],
    superstep: int,
    name: Callable[[str, str, list[Delivery]], None] | None = None,
) -> dict[str, list[Any]]:
    """The next superstep's deliveries (target -> messages) for a superstep's messages,
    routed in the order given (the runner gives the canonical order) through each
    sender's edge groups.

    :param name: told ``name(source, gid, deliveries)`` of what each edge group of the
        sender delivered of each message, every group in the order of ``routes_from``,
        every message in order, as the deliveries join the inbox: what names the
        deliveries to executors that take their messages on arrival.
    :raises UnhandledMessageError: a sender has no outgoing edges, or no edge group of it
        reaches the target it named.
    :raises RoutingError: a router failed, naming its edge group.
    """
    inbox: dict[str, list[Any]] = {}
    for source, message, target in outbox:
        runners = routes_from.get(source)
        if not runners:
            raise _no_edges(source, message, superstep)
        delivered = False
        for gid, runner in runners:
            try:
                deliveries = runner.route(source, message, target, router_state.get(gid))
            except WorkflowRunError:
                raise
            except Exception as exc:
                raise _router_failed(gid, source, message, superstep, exc) from exc
            for tgt, data in deliveries:
                delivered = True
                box = inbox.get(tgt)
                if box is None:
                    inbox[tgt] = [data]
                else:
                    box.append(data)
            if name is not None:
                name(source, gid, deliveries)
        reached = delivered or target is None
        if not reached and not any(target in runner.group.targets for _, runner in runners):
            raise _unreached(source, target, superstep)
    return inbox


def _no_edges(source: str, message: Any, superstep: int) -> UnhandledMessageError:
    return UnhandledMessageError(
        f"executor {source!r} sent a message of type {type_name(type(message))} "
        f"in superstep {superstep} but has no outgoing edges",
        executor_id=source,
        superstep=superstep,
    )


def _router_failed(
    gid: str, source: str, message: Any, superstep: int, exc: Exception
) -> RoutingError:
    return RoutingError(
        f"edge group {gid!r} failed to route a {type_name(type(message))} "
        f"from {source!r} in superstep {superstep}: "
        f"{type(exc).__name__}: {exc}",
        executor_id=source,
        superstep=superstep,
    )


def _unreached(source: str, target: str | None, superstep: int) -> UnhandledMessageError:
    return UnhandledMessageError(
        f"executor {source!r} sent a message to {target!r}, which none of its edge groups reaches",
        executor_id=source,
        superstep=superstep,
    )


def flush_buffers(
    flushers: Iterable[tuple[str, EdgeRunner]],
    router_state: Mapping[str, Any],
    can_still_send: Callable[[str], bool],
    inbox: dict[str, list[Any]],
    name: Callable[[int, int, str], None] | None = None,
) -> None:
    """Add to ``inbox`` what the buffering edge groups (``flushers``) deliver now that
    only the executors ``can_still_send`` names can still send (the active ones and what
    they reach: :meth:`~plait._graph.CompiledGraph.reaching`); ``name(f, d, target)`` is
    told of the ``d``-th delivery of the ``f``-th flusher, if given."""
    for f, (gid, runner) in enumerate(flushers):
        for d, (tgt, data) in enumerate(runner.flush(router_state.get(gid), can_still_send)):
            inbox.setdefault(tgt, []).append(data)
            if name is not None:
                name(f, d, tgt)


@runtime_checkable
class MergeStrategy(Protocol):
    """Combines fan-in inputs, given in source-declaration order."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> Any:
        """One merged message from ``values`` (``values[i]`` came from ``sources[i]``)."""
        ...

    def output_type(self, input_type: Any) -> Any:
        """The type of the merged message when each input is ``input_type``."""
        ...
