"""An executor declares its handlers: from its configuration, or its ``@handler`` methods."""

from __future__ import annotations

from typing import Any

from plait import Executor, WorkflowContext, handler
from plait.spi import Handler


class Twice(Executor):
    """Handlers declared from its configuration."""

    def __init__(self, id: str, accepts: type) -> None:
        self.accepts = accepts
        super().__init__(id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        return (Handler("twice", self.accepts, (self.accepts,), (), self._twice),)

    async def _twice(self, message: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(message)
        await ctx.send_message(message)


class Base(Executor):
    @handler
    async def on_int(self, message: int, ctx: WorkflowContext[int]) -> None: ...


class Derived(Base):
    @handler
    async def on_str(self, message: str, ctx: WorkflowContext[str]) -> None: ...


def test_an_executor_declares_its_handlers() -> None:
    twice = Twice("t", bytes)
    assert twice.input_types == (bytes,) and twice.output_types == (bytes,)
    copy = twice.with_id("u")
    assert copy.handlers[0].call.__self__ is copy  # type: ignore[attr-defined]
    # the default: the @handler methods, the most derived first, bound to each instance
    one, two = Derived("one"), Derived("two")
    assert one.input_types == (str, int)
    assert one.handlers[0].call.__self__ is one and two.handlers[0].call.__self__ is two  # type: ignore[attr-defined]


def test_declared_types_follow_the_handlers_an_executor_holds() -> None:
    # the types are collected once per handlers tuple: a copy that declares its handlers
    # again, or an executor given other handlers, reports the types of those it holds
    twice = Twice("t", bytes)
    assert twice.output_types == (bytes,)
    copy = twice.with_id("u")
    assert isinstance(copy, Twice)
    copy.accepts = str
    copy.handlers = tuple(copy.declare_handlers())
    assert copy.input_types == (str,) and copy.output_types == (str,)
    assert twice.input_types == (bytes,) and twice.output_types == (bytes,)
