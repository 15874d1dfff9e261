"""Connection records: what a fragment exposes, and what composing it returns.

A :class:`WorkflowConnection` is a fragment ready to be merged: a private builder holding
its wiring plus the frozen entry/exit metadata (``start``, ``outputs``, ``contract``).
:meth:`WorkflowBuilder.add_workflow` merges one under a prefix and returns a
:class:`ConnectionHandle`, whose :class:`ConnectionPoint`\\ s name the merged executors
and carry their types, so callers wire fragments without knowing their inner ids.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError
from plait.spi import type_name

if TYPE_CHECKING:
    from ._builder import ExecutorRef, WorkflowBuilder

__all__ = [
    "CompositionError",
    "ConnectionHandle",
    "ConnectionMixin",
    "ConnectionPoint",
    "Contract",
    "WorkflowConnection",
]

#: Separates a fragment's prefix from the ids inside it: ``prep/normalize``.
SEPARATOR = "/"


class CompositionError(PlaitError, ValueError):
    """Fragments cannot be composed as asked (prefix collision, ambiguous exit, …)."""


def _names(types: Sequence[Any]) -> str:
    return " | ".join(type_name(t) for t in types) or "nothing"


@attrs.frozen
class Contract:
    """The types a fragment accepts and produces.

    :param input_types: what its start executor accepts.
    :param output_types: what its exits send on (what a ``connect`` from them carries).
    :param workflow_output_types: what its executors yield as workflow outputs.
    """

    input_types: tuple[Any, ...] = ()
    output_types: tuple[Any, ...] = ()
    workflow_output_types: tuple[Any, ...] = ()

    def describe(self) -> dict[str, list[str]]:
        """JSON-ready type names, for listings."""
        return {
            "input_types": [type_name(t) for t in self.input_types],
            "output_types": [type_name(t) for t in self.output_types],
            "workflow_output_types": [type_name(t) for t in self.workflow_output_types],
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
    """

    executor_id: str
    name: str
    input_types: tuple[Any, ...] = ()
    output_types: tuple[Any, ...] = ()
    workflow_output_types: tuple[Any, ...] = ()

    def __str__(self) -> str:
        return self.executor_id

    def __repr__(self) -> str:
        return (
            f"<ConnectionPoint {self.executor_id!r} accepts {_names(self.input_types)}, "
            f"sends {_names(self.output_types)}>"
        )


@attrs.frozen(repr=False)
class ConnectionHandle:
    """What :meth:`WorkflowBuilder.add_workflow` returns: the merged fragment's surface.

    :param prefix: the prefix its executors got.
    :param start: the point that receives what is connected to the fragment.
    :param outputs: its exits, in declaration order; pick one to connect from when there
        are several (``handle.outputs[1]`` or ``handle.output("name")``).
    :param executor_ids: every executor id the fragment added.
    """

    prefix: str
    start: ConnectionPoint
    outputs: tuple[ConnectionPoint, ...]
    executor_ids: tuple[str, ...] = ()

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


@attrs.frozen(repr=False)
class WorkflowConnection:
    """A fragment ready to be composed: a private builder plus its entry/exit metadata.

    Produced by ``.as_connection()`` on any builder or built workflow. The builder is a
    snapshot: later changes to the builder it came from do not reach it, and composing it
    clones its executors, so one connection can be composed any number of times.

    :param builder: the fragment's wiring (never mutated by composition).
    :param start: the id of its entry executor.
    :param outputs: the ids of its exits.
    :param name: its name (the default prefix).
    :param prefix: the prefix asked for in ``as_connection(prefix)``, if any.
    :param contract: the types it accepts and produces.
    """

    builder: WorkflowBuilder
    start: str
    outputs: tuple[str, ...]
    name: str | None = None
    prefix: str | None = None
    contract: Contract = attrs.field(factory=Contract)

    @property
    def entry(self) -> str:
        """Alias of :attr:`start` (the design's term)."""
        return self.start

    @property
    def exits(self) -> tuple[str, ...]:
        """Alias of :attr:`outputs` (the design's term)."""
        return self.outputs

    def as_connection(self, prefix: str | None = None) -> WorkflowConnection:
        """This connection, with ``prefix`` as its default prefix when one is given."""
        return self if prefix is None else attrs.evolve(self, prefix=prefix)

    def __repr__(self) -> str:
        return (
            f"<WorkflowConnection {self.prefix or self.name or '(unnamed)'}: "
            f"{len(self.builder._executors)} executors, start={self.start!r}, "
            f"outputs={list(self.outputs)!r}>"
        )


class ConnectionMixin(abc.ABC):
    """What every builder shares so that it composes as a fragment.

    Subclasses implement :meth:`to_builder` (a fresh :class:`WorkflowBuilder` holding
    their wiring) and get :meth:`as_connection`.
    """

    name: str | None

    @abc.abstractmethod
    def to_builder(self) -> WorkflowBuilder:
        """A new :class:`WorkflowBuilder` with this builder's wiring (fragment form)."""

    def as_connection(
        self, prefix: str | None = None, *, outputs: Sequence[ExecutorRef] | None = None
    ) -> WorkflowConnection:
        """This builder as a fragment another builder composes with ``add_workflow``.

        :param prefix: the prefix its executors get when composed (default: its name).
        :param outputs: the exits to expose (default: executors without outgoing edges,
            else those that yield workflow outputs).
        """
        from ._compose import connection_from_builder

        return connection_from_builder(self.to_builder(), prefix=prefix, outputs=outputs)
