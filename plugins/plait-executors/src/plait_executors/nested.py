"""Nested workflows: a whole workflow running as one executor of another.

:class:`WorkflowExecutor` is what :meth:`plait.Workflow.as_executor` returns (the kernel
asks the ``workflow`` executor kind, :meth:`~plait_executors.WorkflowKind.wrap`), and what
that kind builds from a fragment or a spec. Each message it
receives starts one run of the inner workflow, with its own supersteps, state and events;
the outer superstep waits for that run to end. The inner run's outputs are then sent on
as messages of the wrapping executor (through ``adapter`` first), or yielded as outputs
of the outer workflow with ``allow_direct_output=True``.

When an inner run stops to wait for outside input (``ctx.request_info``), its state is
kept in this executor's per-run state — so it is checkpointed with the outer run — and
its requests are asked again of the outer caller. Answering them
(``outer.resume(run_id, store, responses=...)``) resumes the inner run where it stopped.

Use it when a boundary is wanted (isolation, a separately tested workflow, a branch that
runs at its own pace); compose a fragment inline with ``WorkflowBuilder.add_workflow``
when one workflow boundary is enough.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plait import Executor, ExecutorFailedError, RequestResponse, RunStatus, WorkflowContext
from plait.spi import Handler, type_name

if TYPE_CHECKING:
    from plait import Workflow, WorkflowRunResult

__all__ = ["WorkflowExecutor"]

_NO_RESULT = (None, type(None), typing.NoReturn)


def _union(groups: typing.Iterable[tuple[Any, ...]]) -> tuple[Any, ...]:
    out: list[Any] = []
    for group in groups:
        for tp in group:
            if tp is Any:
                return (Any,)
            if tp not in out:
                out.append(tp)
    return tuple(out)


def _adapter_parts(adapter: Any) -> tuple[Callable[[Any], Any], Any]:
    """``(function, result type)`` of an adapter: a converter record or a function."""
    if all(hasattr(adapter, a) for a in ("fn", "target")):
        fn: Callable[[Any], Any] = adapter.fn
        return fn, adapter.target
    if not callable(adapter):
        raise TypeError(f"adapter must be a function or a converter, got {adapter!r}")
    try:
        returns = typing.get_type_hints(adapter).get("return", Any)
    except Exception:  # unresolvable or missing annotations: checked at run time
        returns = Any
    return adapter, returns


class WorkflowExecutor(Executor):
    """Runs ``workflow`` to the end for every message it receives.

    :param workflow: the inner workflow (immutable; shared by every run).
    :param id: the executor id (default: the workflow's name, else ``"workflow"``).
    :param adapter: applied to each inner output before it is sent on (a sync or async
        function, or a converter record with ``fn`` and ``target``); a ``None`` result is
        dropped.
    :param allow_direct_output: yield the inner outputs as outputs of the outer workflow
        instead of sending them on as messages.
    :param max_concurrency: how many inner runs of one superstep may run at once.
    :param max_visits: how many outer supersteps it may run in.

    Its input types are those of the inner start executor; it sends (or yields) the types
    the inner executors yield, or the adapter's result type.

    A failed inner run fails the outer run with an
    :class:`~plait.ExecutorFailedError` naming this executor, the inner error as
    its cause.
    """

    def __init__(
        self,
        workflow: Workflow,
        *,
        id: str | None = None,
        adapter: Callable[[Any], Any] | Any | None = None,
        allow_direct_output: bool = False,
        max_concurrency: int | None = None,
        max_visits: int | None = None,
    ) -> None:
        self.workflow = workflow
        self.adapter = adapter
        self.allow_direct_output = allow_direct_output
        self._adapt: Callable[[Any], Any] | None = None
        self._adapted_type: Any = None
        if adapter is not None:
            self._adapt, self._adapted_type = _adapter_parts(adapter)
        super().__init__(
            id or workflow.name or "workflow",
            max_concurrency=max_concurrency,
            max_visits=max_visits,
        )

    # -- types -------------------------------------------------------------------------

    @property
    def inner_input_types(self) -> tuple[Any, ...]:
        """What the inner workflow's start executor accepts."""
        return self.workflow.executors[self.workflow.spec.start].input_types

    @property
    def inner_output_types(self) -> tuple[Any, ...]:
        """What the inner workflow's executors yield as workflow outputs."""
        return _union(ex.workflow_output_types for ex in self.workflow.executors.values())

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler per type the inner workflow takes, and one for answers to its
        requests; built from self, so a copy gets handlers bound to itself."""
        if self._adapt is not None:
            produced = () if self._adapted_type in _NO_RESULT else (self._adapted_type,)
        else:
            produced = self.inner_output_types
        sends = () if self.allow_direct_output else produced
        yields = produced if self.allow_direct_output else ()
        handlers = [
            Handler(f"{type(self).__name__}[{type_name(tp)}]", tp, sends, yields, self._run)
            for tp in self.inner_input_types
        ]
        handlers.append(
            Handler(f"{type(self).__name__}.answer", RequestResponse, sends, yields, self._answer)
        )
        return tuple(handlers)

    # -- running -----------------------------------------------------------------------

    async def _run(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        # ctx: the inner run's events reach the outer run's stream (NestedEvent)
        result, saved = await self.workflow.run_nested(message, ctx=ctx)
        await self._settle(result, saved, ctx)

    async def _answer(self, response: RequestResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """An answer to a request an inner run made: resume that run with it."""
        waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
        runs: dict[str, Any] = ctx.state.setdefault("runs", {})
        inner_run, inner_request = waiting.pop(response.request_id)
        saved = runs.pop(inner_run)
        result, saved = await self.workflow.run_nested(
            saved=saved, responses={inner_request: response.value}, ctx=ctx
        )
        await self._settle(result, saved, ctx)

    async def _settle(
        self, result: WorkflowRunResult, saved: Any, ctx: WorkflowContext[Any, Any]
    ) -> None:
        if result.status is RunStatus.FAILED:
            raise ExecutorFailedError(
                f"nested workflow executor {self.id!r} failed in superstep {ctx.superstep}: "
                f"its inner workflow {self.workflow.name or '(unnamed)'} failed: {result.error}",
                executor_id=self.id,
                superstep=ctx.superstep,
            ) from result.error
        if saved is not None:
            await self._pass_requests_out(result, saved, ctx)
        for output in result.outputs:
            value = self._adapt(output) if self._adapt is not None else output
            if inspect.isawaitable(value):
                value = await value
            if value is None:
                continue
            if self.allow_direct_output:
                await ctx.yield_output(value)
            else:
                await ctx.send_message(value)

    async def _pass_requests_out(
        self, result: WorkflowRunResult, saved: Any, ctx: WorkflowContext[Any, Any]
    ) -> None:
        """The inner run waits for outside input: keep its state in this executor's state
        (so it is checkpointed with the outer run) and ask the outer caller; answers come
        back to :meth:`_answer`."""
        waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
        runs: dict[str, Any] = ctx.state.setdefault("runs", {})
        runs[result.run_id] = saved
        asked = {inner for _, inner in waiting.values()}
        for request in result.pending_requests:
            if request.request_id in asked:
                continue
            outer = await ctx.request_info(request.request, request.response_type)
            waiting[outer] = [result.run_id, request.request_id]
        # outputs yielded before the inner run stopped to wait are still passed on

    def __repr__(self) -> str:
        return f"<WorkflowExecutor {self.id!r} wraps {self.workflow.name or '(unnamed)'}>"
