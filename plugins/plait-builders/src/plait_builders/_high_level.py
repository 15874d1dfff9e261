"""High-level builders: common shapes in one call, composable as fragments.

``SequentialBuilder().participants([a, b, c])`` chains ``a -> b -> c``;
``ConcurrentBuilder().participants([a, b]).aggregator(fn)`` dispatches each input to every
participant (fan-out) and hands their results, as one list, to the aggregator (fan-in).

Both share :class:`~plait_builders.ConnectionMixin` with :class:`WorkflowBuilder`, so
``.as_connection()`` and ``builder.add_workflow(...)`` work on them. Built alone
(:meth:`build`), the end of the shape yields the result as a workflow output; composed as
a fragment, it sends the result on, to whatever it is connected to.

Each declares its extension points as ports (:meth:`WorkflowBuilder.add_port`), the
design's names: ``ConcurrentBuilder`` has ``entry``, ``dispatch_out``, ``fan_in_in`` and
``aggregator_out``; ``SequentialBuilder`` has ``entry``, ``input_normalizer_out`` and
``final_conversation_out``. Composed, ``handle.port("aggregator_out")`` attaches a step
after the aggregator without knowing its id.
"""

from __future__ import annotations

import abc
import inspect
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from plait import Executor, FunctionExecutor, PortSpec, Workflow
from plait.spi import PluginManager
from typing_extensions import Self

from ._builder import ConnectionMixin, WorkflowBuilder
from ._nodes import Emit, FunctionNode, function_types

__all__ = ["ConcurrentBuilder", "HighLevelBuilder", "SequentialBuilder"]

Participant = Executor | Callable[..., Any]


def _identity(message: Any) -> Any:
    return message


def _as_executor(participant: Participant) -> Executor:
    if isinstance(participant, Executor):
        return participant
    if inspect.iscoroutinefunction(participant):
        return FunctionExecutor(participant)
    raise TypeError(f"a participant must be an Executor or an async function, got {participant!r}")


def _one_type(types: Sequence[Any]) -> Any:
    """The single type in ``types``, else ``Any`` (checked at run time)."""
    distinct = list(dict.fromkeys(types))
    return distinct[0] if len(distinct) == 1 else Any


class HighLevelBuilder(ConnectionMixin):
    """Shared by the high-level builders: participants, naming, build and compose.

    Subclasses implement :meth:`_wire` on a fresh :class:`WorkflowBuilder`.

    :param name: the workflow's name, and its default prefix when composed.
    :param plugin_manager: passed on to the :class:`WorkflowBuilder`.
    :param builder_options: other :class:`WorkflowBuilder` options (``allow_lossy`` …).
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        **builder_options: Any,
    ) -> None:
        self.name = name
        self._manager = plugin_manager
        self._options = builder_options
        self._participants: list[Executor] = []

    def participants(self, participants: Sequence[Participant]) -> Self:
        """Set the participants (executors or async functions), in order.

        :raises ValueError: when there are none or two share an id.
        """
        executors = [_as_executor(p) for p in participants]
        if not executors:
            raise ValueError(f"{type(self).__name__} needs at least one participant")
        ids = [e.id for e in executors]
        if dupes := sorted(i for i, n in Counter(ids).items() if n > 1):
            raise ValueError(f"participants share the id(s) {', '.join(dupes)}")
        self._participants = executors
        return self

    def _new_builder(self) -> WorkflowBuilder:
        if not self._participants:
            raise ValueError(f"{type(self).__name__}: call participants([...]) first")
        return WorkflowBuilder(self.name, plugin_manager=self._manager, **self._options)

    @abc.abstractmethod
    def _wire(self, builder: WorkflowBuilder, emit: Emit) -> WorkflowBuilder:
        """Wire the participants into ``builder``; ``emit`` says how the end hands on."""

    def to_builder(self) -> WorkflowBuilder:
        """The fragment form: a :class:`WorkflowBuilder` whose end sends its result on."""
        return self._wire(self._new_builder(), "send")

    def to_workflow_builder(self) -> WorkflowBuilder:
        """The standalone form: a :class:`WorkflowBuilder` whose end yields its result."""
        return self._wire(self._new_builder(), "yield")

    def build(self) -> Workflow:
        """Build the standalone workflow (its result is a workflow output)."""
        return self.to_workflow_builder().build()

    @property
    def ports(self) -> Mapping[str, PortSpec]:
        """The shape's extension points by name (see the module docstring)."""
        return self.to_builder().ports


class SequentialBuilder(HighLevelBuilder):
    """Participants in a chain: each one's messages go to the next.

    Built alone, what the last participant sends is yielded by an ``output`` node; as a
    fragment, the last participant is the exit.

    Ports: ``entry`` (in: the first participant), ``input_normalizer_out`` (out: what the
    first participant sends — a chain has no separate normalizer node, so its first step
    is the one; put one first to get one) and ``final_conversation_out`` (out: the last
    participant, what the chain hands on).
    """

    def _wire(self, builder: WorkflowBuilder, emit: Emit) -> WorkflowBuilder:
        chain = self._participants
        builder.add_executor(chain[0]).set_start(chain[0])
        for before, after in zip(chain, chain[1:]):
            builder.add_edge(before, after)
        builder.add_port("entry", chain[0], "in")
        builder.add_port("input_normalizer_out", chain[0], "out")
        builder.add_port("final_conversation_out", chain[-1], "out")
        last = chain[-1]
        if emit == "yield" and last.output_types:
            sent = _one_type(last.output_types)
            output = FunctionNode(
                "output", _identity, input_type=sent, output_type=sent, emit="yield"
            )
            builder.add_edge(last, output)
        return builder


class ConcurrentBuilder(HighLevelBuilder):
    """Every participant gets each input; the aggregator gets their results as one list.

    The graph is ``dispatch`` -> fan-out -> participants -> fan-in (``merge``, default
    ``list``) -> ``aggregate``. The default aggregator passes the list on unchanged.

    Ports: ``entry`` (in: ``dispatch``), ``dispatch_out`` (out: what ``dispatch`` sends to
    every participant), ``fan_in_in`` (in: the aggregator's input, the merged results,
    semantics ``aggregate``) and ``aggregator_out`` (out: what the aggregator hands on).
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        **builder_options: Any,
    ) -> None:
        super().__init__(name, plugin_manager=plugin_manager, **builder_options)
        self._aggregator: Executor | Callable[..., Any] | None = None
        self._merge = "list"

    def aggregator(self, aggregator: Executor | Callable[..., Any], *, merge: str = "list") -> Self:
        """Set what combines the participants' results.

        :param aggregator: an :class:`~plait.Executor` receiving the merged message (it
            decides whether to send or yield), or a function (sync or async) of the merged
            message whose result is yielded when built alone and sent on as a fragment.
        :param merge: the fan-in merge strategy (``list``, ``concat``, ``keyed`` …).
        """
        if not isinstance(aggregator, Executor) and not callable(aggregator):
            raise TypeError(f"aggregator must be an Executor or a function, got {aggregator!r}")
        self._aggregator = aggregator
        self._merge = merge
        return self

    def _wire(self, builder: WorkflowBuilder, emit: Emit) -> WorkflowBuilder:
        participants = self._participants
        accepted = _one_type([t for p in participants for t in p.input_types])
        dispatch = FunctionNode(
            "dispatch", _identity, input_type=accepted, output_type=accepted, emit="send"
        )
        builder.add_fan_out(dispatch, participants).set_start(dispatch)
        aggregate = self._aggregate_node(emit)
        builder.add_fan_in(participants, aggregate, merge=self._merge)
        builder.add_port("entry", dispatch, "in")
        builder.add_port("dispatch_out", dispatch, "out")
        builder.add_port("fan_in_in", aggregate, "in", semantics="aggregate")
        builder.add_port("aggregator_out", aggregate, "out")
        return builder

    def _aggregate_node(self, emit: Emit) -> Executor:
        if isinstance(self._aggregator, Executor):
            return self._aggregator
        if self._aggregator is None:
            sent = _one_type([t for p in self._participants for t in p.output_types])
            merged = list[sent] if self._merge == "list" else Any  # type: ignore[valid-type]
            return FunctionNode(
                "aggregate", _identity, input_type=merged, output_type=merged, emit=emit
            )
        input_type, output_type = function_types(self._aggregator)
        return FunctionNode(
            "aggregate", self._aggregator, input_type=input_type, output_type=output_type, emit=emit
        )
