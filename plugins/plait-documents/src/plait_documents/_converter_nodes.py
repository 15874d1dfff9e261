"""The nodes an inserted converter chain runs as: :class:`ConverterExecutor`, one per
step, and the :class:`LossyConversion` event a lossy one adds.

:mod:`plait_documents._wiring` imports this module when an edge first needs a
conversion, as it imports the converter search: a build whose edges all fit never
makes these classes.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import attrs
from plait import ConverterError, Executor, NodeSpec, WorkflowContext
from plait.spi import Handler, code_ref, type_name

if TYPE_CHECKING:
    from plait_converters import Step

__all__ = ["ConverterExecutor", "LossyConversion", "converter_node"]


def converter_node(ex: Executor) -> NodeSpec:
    """The node of an inserted converter (a builder records it the same way)."""
    return NodeSpec(
        id=ex.id,
        kind="python",
        ref=code_ref(type(ex)),
        input_types=tuple(type_name(t) for t in ex.input_types),
        output_types=tuple(type_name(t) for t in ex.output_types),
        config={"ref": code_ref(type(ex))},
        nonportable=ConverterExecutor.nonportable,
    )


class ConverterExecutor(Executor):
    """The node that runs one :class:`Step` of an inserted chain.

    Values of a ``passthrough`` type (what the edge's target accepts already, or what this
    step does not convert) go on unchanged: that dispatch is the only run-time type check,
    and it exists only where the source's declared types mix the two. Without passthrough
    types every value goes straight to the converter, unchecked: the build proved it fits.

    A failing converter fails the run with :class:`~plait.ConverterError` naming the
    node and the value's type; a lossy converter adds a :class:`LossyConversion` event.
    """

    kind = "converter"
    #: why a spec cannot rebuild this node from data (see ``NodeSpec.nonportable``)
    nonportable = "it is a converter the builder inserted; rebuild with the builder"

    def __init__(self, id: str, step: Step, *, passthrough: Sequence[Any] = ()) -> None:
        self.step = step
        self.passthrough = tuple(passthrough)
        self._fn = step.function()
        fn = step.converter.fn
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self._single: Handler | None = None
        super().__init__(id)
        if not self.passthrough:
            self._single = self.handlers[0]

    def declare_handlers(self) -> tuple[Handler, ...]:
        """The converter's handler (after a passthrough one when there are members)."""
        step = self.step
        convert = Handler(step.name, step.source, (step.target,), (), self._convert)
        if not self.passthrough:
            return (convert,)
        members = self.passthrough
        accepted = members[0] if len(members) == 1 else Union[members]  # noqa: UP007
        return (Handler(f"{step.name}:passthrough", accepted, members, (), self._pass), convert)

    def __copy__(self) -> ConverterExecutor:
        # composition clones nodes under new ids: handlers must bind to the clone
        return ConverterExecutor(self.id, self.step, passthrough=self.passthrough)

    def find_handler(self, message: Any) -> Handler | None:
        """The converter's handler, unchecked, unless passthrough types need a look."""
        return self._single or super().find_handler(message)

    @property
    def config(self) -> dict[str, Any]:
        """What this node converts, JSON-ready (for graph dumps)."""
        step = self.step
        return {
            "converter": step.name,
            "source": type_name(step.source),
            "target": type_name(step.target),
            "lossless": step.lossless,
            "distribution": step.distribution,
        }

    async def _pass(self, value: Any, ctx: WorkflowContext[Any, Any]) -> None:
        await ctx.send_message(value)

    async def _convert(self, value: Any, ctx: WorkflowContext[Any, Any]) -> None:
        try:
            result = self._fn(value)
            if self._is_async:
                result = await result
        except Exception as exc:
            step = self.step
            raise ConverterError(
                f"converter node {self.id!r} ({step.name}: {type_name(step.source)} -> "
                f"{type_name(step.target)}) failed on a value of type "
                f"{type_name(type(value))} in superstep {ctx.superstep}: "
                f"{type(exc).__name__}: {exc}",
                executor_id=self.id,
                superstep=ctx.superstep,
            ) from exc
        if not self.step.lossless:
            step = self.step
            await ctx.add_event(
                LossyConversion(self.id, step.name, type_name(step.source), type_name(step.target))
            )
        await ctx.send_message(result)


@attrs.frozen
class LossyConversion:
    """The data of the :class:`~plait.CustomEvent` a lossy converter node adds: the node,
    the converter and the two types, by name.
    """

    node: str
    converter: str
    source: str
    target: str
