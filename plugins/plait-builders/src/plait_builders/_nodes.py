"""Executors the composition machinery creates, and executor cloning.

:class:`FunctionNode` wraps a plain function (sync or async) with declared types; it is
what explicit adapters, the concurrent dispatcher and default aggregators are made of.
:func:`clone_executor` copies an executor under a new id for each use of a fragment.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, Literal

from plait import Executor, WorkflowContext
from plait.spi import Handler

__all__ = ["FunctionNode", "adapter_node", "clone_executor", "function_types"]

Emit = Literal["send", "yield"]
_NO_RESULT = (None, type(None), typing.NoReturn)


class FunctionNode(Executor):
    """An executor around ``fn(message) -> result`` with explicit types.

    The result is sent on (``emit="send"``) or yielded as a workflow output
    (``emit="yield"``); a ``None`` result produces nothing.

    :param id: the executor id.
    :param fn: a sync or async function of one argument.
    :param input_type: the message type it accepts.
    :param output_type: the type of ``fn``'s result.
    :param emit: ``"send"`` or ``"yield"``.
    """

    def __init__(
        self,
        id: str,
        fn: Callable[[Any], Any],
        *,
        input_type: Any = Any,
        output_type: Any = Any,
        emit: Emit = "send",
    ) -> None:
        if not callable(fn):
            raise TypeError(f"executor {id!r}: expected a function, got {fn!r}")
        if emit not in ("send", "yield"):
            raise ValueError(f"executor {id!r}: emit must be 'send' or 'yield', got {emit!r}")
        self.fn = fn
        self.message_type = input_type
        self.result_type = output_type
        self.emit = emit
        super().__init__(id)

    #: why a spec cannot rebuild this node from data (see ``NodeSpec.nonportable``)
    nonportable = "it is an adapter the builder made around a function; rebuild with the builder"

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler, typed by the adapter's message and result types."""
        # built from self, so a copy that re-collects gets handlers bound to itself
        result = () if self.result_type in _NO_RESULT else (self.result_type,)
        sends = result if self.emit == "send" else ()
        yields = result if self.emit == "yield" else ()
        return (Handler(f"{self.ref}", self.message_type, sends, yields, self._call),)

    async def _call(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        result = self.fn(message)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return
        if self.emit == "send":
            await ctx.send_message(result)
        else:
            await ctx.yield_output(result)

    @property
    def ref(self) -> str:
        """``module:qualname`` of the wrapped function."""
        fn = self.fn
        qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        return f"{getattr(fn, '__module__', None) or type(fn).__module__}:{qualname}"


def function_types(fn: Callable[..., Any]) -> tuple[Any, Any]:
    """``(input type, result type)`` read from ``fn``'s annotations (``Any`` when absent).

    An ``async def`` returning ``T`` gives ``T``; an unreadable signature gives ``Any``.
    """
    try:
        hints = typing.get_type_hints(fn)
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError, NameError):
        return Any, Any
    input_type = hints.get(params[0].name, Any) if params else Any
    return input_type, hints.get("return", Any)


def adapter_node(adapter: Any, node_id: str) -> FunctionNode:
    """The node for an explicit ``connect(..., adapter=...)``.

    ``adapter`` is a converter record (``source``, ``target``, ``fn``) or a function whose
    annotations give its types.
    """
    if all(hasattr(adapter, a) for a in ("source", "target", "fn")):
        return FunctionNode(
            node_id, adapter.fn, input_type=adapter.source, output_type=adapter.target
        )
    if callable(adapter):
        input_type, output_type = function_types(adapter)
        return FunctionNode(node_id, adapter, input_type=input_type, output_type=output_type)
    raise TypeError(
        f"adapter for {node_id!r} must be a converter (source, target, fn) or a function, "
        f"got {adapter!r}"
    )


def clone_executor(executor: Executor, new_id: str) -> Executor:
    """A copy of ``executor`` with id ``new_id``, sharing nothing that dispatch mutates
    (:meth:`plait.Executor.with_id`)."""
    return executor.with_id(new_id)
