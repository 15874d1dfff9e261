"""The router protocol: how messages cross an edge group.

A :class:`Router` is registered by name through ``plait_register_routers``. When a
workflow is built, the router turns each edge group using it into an
:class:`EdgeRunner`. Edge runners are shared by every run of a workflow: anything that
changes during a run (a fan-in's buffers) lives in the per-run ``state`` object the
runner passes in, which the edge runner creates, snapshots and restores.

A delivery is a ``(target_id, message)`` tuple; ``route`` returns a list of them.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .spec import EdgeGroupSpec

__all__ = ["Delivery", "EdgeRunner", "Router", "RouterEnv"]

#: ``(target_executor_id, message)``
Delivery = tuple[str, Any]


class RouterEnv(Protocol):
    """What a router may look up while creating an edge runner."""

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
        """The ``kind`` registered as ``name`` (``UnknownNameError`` naming ``what``)."""
        ...

    def callable(self, value: Any, *, what: str, role: str = "predicate") -> Callable[..., Any]:
        """The Python callable for code the spec records in an option (an expression
        ``{"expr": ...}`` or an import path ``{"ref": ...}``, see :mod:`plait.refs`);
        ``role`` is ``predicate`` (``fn(message) -> bool``) or ``selection``
        (``fn(message, targets) -> list[str]``). Errors name ``what``.

        .. versionadded:: 0.1
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

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Delivery]:
        """Where ``message`` from ``source`` goes (``target`` is the sender's explicit choice).

        Raise :class:`~plait.errors.RoutingError` naming the group when it cannot decide.
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
