"""Connection records: what a fragment exposes, and what composing it returns.

A :class:`WorkflowConnection` is a fragment ready to be merged: a private builder holding
its wiring plus the frozen entry/exit metadata (``start``, ``outputs``, ``contract``).
:meth:`WorkflowBuilder.add_workflow` merges one under a prefix and returns a
:class:`ConnectionHandle`, whose :class:`ConnectionPoint`\\ s name the merged executors
and carry their types, so callers wire fragments without knowing their inner ids.

A switch's :class:`Case` lives here too: like these records, it is imported only by a
builder that uses one (a build that only wires executors makes none of their classes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from plait import Executor, PortSpec
from plait.spi import type_name

from ._common import CompositionError, _tags

__all__ = [
    "Case",
    "ConnectionHandle",
    "ConnectionPoint",
    "Contract",
    "ExecutorRef",
    "port_dict",
]


def _names(types: Sequence[Any]) -> str:
    return " | ".join(type_name(t) for t in types) or "nothing"


def _port_tuple(ports: Iterable[PortSpec]) -> tuple[PortSpec, ...]:
    return tuple(ports)


def port_dict(port: PortSpec) -> dict[str, Any]:
    """A port as JSON-ready data, for listings."""
    return {
        "name": port.name,
        "executor": port.executor,
        "direction": port.direction,
        "types": list(port.types),
        "semantics": port.semantics,
    }


@attrs.frozen
class Contract:
    """The types a fragment accepts and produces, what its output means, and its ports.

    :param input_types: what its start executor accepts.
    :param output_types: what its exits send on (what a ``connect`` from them carries).
    :param workflow_output_types: what its executors yield as workflow outputs.
    :param output_semantics: free tags saying what its output is (``"conversation"``,
        ``"summary"``, ``"agent_response"`` …), for readers and listings.
    :param ports: its named extension points (:class:`plait.PortSpec`), ids inside the
        fragment.
    """

    input_types: tuple[Any, ...] = ()
    output_types: tuple[Any, ...] = ()
    workflow_output_types: tuple[Any, ...] = ()
    output_semantics: tuple[str, ...] = attrs.field(default=(), converter=_tags)
    ports: tuple[PortSpec, ...] = attrs.field(default=(), converter=_port_tuple)

    def describe(self) -> dict[str, Any]:
        """JSON-ready type names, semantics tags and ports, for listings."""
        return {
            "input_types": [type_name(t) for t in self.input_types],
            "output_types": [type_name(t) for t in self.output_types],
            "workflow_output_types": [type_name(t) for t in self.workflow_output_types],
            "output_semantics": list(self.output_semantics),
            "ports": [port_dict(p) for p in self.ports],
        }


@attrs.frozen(repr=False)
class ConnectionPoint:
    """One addressable executor of a composed fragment.

    Pass it wherever an executor is expected (``connect``, ``add_edge``, ``set_start``).

    :param executor_id: the executor's id in the composed builder (``prep/enrich``).
    :param name: its id inside the fragment (``enrich``).
    :param input_types: the message types it accepts.
    :param output_types: the message types it sends (empty: it sends nothing).
    :param workflow_output_types: the types it yields as workflow outputs.
    :param port: the port this point was reached through (``handle.port("aggregator_out")``),
        with its direction and semantics; ``None`` for a plain executor point.
    """

    executor_id: str
    name: str
    input_types: tuple[Any, ...] = ()
    output_types: tuple[Any, ...] = ()
    workflow_output_types: tuple[Any, ...] = ()
    port: PortSpec | None = None

    def __str__(self) -> str:
        return self.executor_id

    def __repr__(self) -> str:
        if self.port is not None:
            what = self.input_types if self.port.direction == "in" else self.output_types
            return (
                f"<ConnectionPoint port {self.port.name!r} ({self.port.direction}) of "
                f"{self.executor_id!r}: {_names(what)}>"
            )
        return (
            f"<ConnectionPoint {self.executor_id!r} accepts {_names(self.input_types)}, "
            f"sends {_names(self.output_types)}>"
        )


#: An executor object, the id of one added to the builder, a composed fragment's point, or
#: a port as ``(fragment prefix, port name)``.
ExecutorRef = Executor | str | ConnectionPoint | tuple[str, str]


@attrs.frozen(repr=False)
class ConnectionHandle:
    """What :meth:`WorkflowBuilder.add_workflow` returns: the merged fragment's surface.

    :param prefix: the prefix its executors got.
    :param start: the point that receives what is connected to the fragment.
    :param outputs: its exits, in declaration order; pick one to connect from when there
        are several (``handle.outputs[1]`` or ``handle.output("name")``).
    :param executor_ids: every executor id the fragment added.
    :param ports: the fragment's ports by their name inside it (``aggregator_out``), each
        a point on the merged executor; :meth:`port` picks one.
    """

    prefix: str
    start: ConnectionPoint
    outputs: tuple[ConnectionPoint, ...]
    executor_ids: tuple[str, ...] = ()
    ports: Mapping[str, ConnectionPoint] = attrs.field(factory=dict, hash=False)

    def port(self, name: str) -> ConnectionPoint:
        """The fragment's port ``name`` (``"aggregator_out"``), to connect to or from.

        :raises CompositionError: naming the ports the fragment has.
        """
        found = self.ports.get(name)
        if found is None:
            raise CompositionError(
                f"fragment {self.prefix!r} has no port {name!r}; its ports: "
                f"{', '.join(sorted(self.ports)) or 'none'}"
            )
        return found

    def output(self, name: str | None = None) -> ConnectionPoint:
        """The exit called ``name`` (inner or prefixed id); without a name, the only exit.

        :raises CompositionError: listing the exits when the choice is ambiguous or unknown.
        """
        if name is None:
            if len(self.outputs) == 1:
                return self.outputs[0]
            if not self.outputs:
                raise CompositionError(
                    f"fragment {self.prefix!r} has no outputs (every executor has outgoing "
                    "edges); connect from an executor id instead"
                )
            raise CompositionError(
                f"fragment {self.prefix!r} has {len(self.outputs)} outputs; choose one: "
                f"{self._choices()}"
            )
        for point in self.outputs:
            if name in (point.name, point.executor_id):
                return point
        raise CompositionError(
            f"fragment {self.prefix!r} has no output {name!r}; its outputs: {self._choices()}"
        )

    def _choices(self) -> str:
        return ", ".join(
            f"handle.outputs[{i}] ({p.executor_id!r}, sends {_names(p.output_types)})"
            for i, p in enumerate(self.outputs)
        )

    def __repr__(self) -> str:
        outs = ", ".join(repr(p.executor_id) for p in self.outputs)
        start = self.start.executor_id
        return f"<ConnectionHandle {self.prefix!r} start={start!r} outputs=[{outs}]>"


@attrs.frozen
class Case:
    """One case of a switch: when ``predicate(message)`` is true, route to ``target``."""

    predicate: Callable[[Any], bool]
    target: ExecutorRef
