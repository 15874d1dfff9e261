"""The public seams plugins use instead of the kernel's private attributes: running a
workflow nested in another run, a context's snapshot for another process, the per-graph
cache, and checking a placement name (``tests/test_plugin_boundary.py`` proves nothing
private is reached any more)."""

from __future__ import annotations

import types
from typing import Any

import attrs
import pytest
from plait import Executor, Never, UnknownNameError, Workflow, WorkflowContext, executor, handler
from plait.spi import ContextSnapshot, PluginManager, with_placement
from plait_builders import WorkflowBuilder


class Recorder:
    """A worker-side scope (as a placement's): it records what the handler does."""

    def __init__(self, snapshot: ContextSnapshot) -> None:
        self.run_id, self.superstep = snapshot.run_id, snapshot.superstep
        self.delivery = snapshot.delivery
        self.shared: dict[str, Any] = {}
        self.outbox: list[tuple[str, Any, str | None]] = []
        self.requests: list[str] = []

    def emit_output(self, executor_id: str, data: Any) -> None: ...

    def emit_custom(self, executor_id: str, data: Any) -> None: ...

    def write_shared(self, executor_id: str, key: str, value: Any) -> None: ...

    def request_info(
        self, executor_id: str, request: Any, response_type: Any, *, request_id: str | None = None
    ) -> str:
        assert request_id is not None
        self.requests.append(request_id)
        return request_id

    def note_read(self, executor_id: str, key: str) -> None: ...

    async def shared_ready(self) -> None: ...


class Ask(Executor):
    """Asks for approval, noting its context's snapshot, idempotency key and request id."""

    def __init__(self, seen: list[tuple[ContextSnapshot, str, str]]) -> None:
        super().__init__("ask")
        self.seen = seen

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        snapshot = ctx.snapshot()
        request_id = await ctx.request_info(f"approve {text}?", bool)
        self.seen.append((snapshot, ctx.idempotency_key, request_id))

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("approved" if approved else "withheld")


def asking_workflow(seen: list[tuple[ContextSnapshot, str, str]]) -> Workflow:
    return WorkflowBuilder("asking").set_start(Ask(seen)).build()


@pytest.mark.anyio
async def test_a_context_built_from_a_snapshot_is_the_driver_s_context() -> None:
    seen: list[tuple[ContextSnapshot, str, str]] = []
    result = await asking_workflow(seen).run("x")
    assert result.status.value == "idle_with_pending_requests"
    [(snapshot, key, request_id)] = seen
    assert (snapshot.executor_id, snapshot.superstep, snapshot.attempt) == ("ask", 1, 1)
    assert snapshot.run_id == result.run_id

    # what a placement sends, as JSON, and the worker's context built from it
    sent = ContextSnapshot(**attrs.asdict(snapshot))
    scope = Recorder(sent)
    ctx = WorkflowContext.from_snapshot(sent, scope, {})
    assert ctx.snapshot() == snapshot
    assert ctx.idempotency_key == key
    assert await ctx.request_info("approve x?", bool) == request_id  # the driver's id
    assert scope.requests == [request_id]


def test_a_context_is_not_built_over_a_scope_of_another_invocation() -> None:
    snapshot = ContextSnapshot(executor_id="a", run_id="r1", superstep=2, attempt=1, index=0)
    scope = Recorder(attrs.evolve(snapshot, superstep=3))
    with pytest.raises(ValueError, match="snapshot's are"):
        WorkflowContext.from_snapshot(snapshot, scope, {})
    with pytest.raises(TypeError):
        ContextSnapshot(executor_id="a", run_id="r1", superstep="2", attempt=1, index=0)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_run_nested_waits_for_input_and_goes_on_from_what_it_returned() -> None:
    seen: list[tuple[ContextSnapshot, str, str]] = []
    inner = asking_workflow(seen)
    result, saved = await inner.run_nested("x")
    assert result.status.value == "idle_with_pending_requests" and saved is not None
    [request] = result.pending_requests
    done, kept = await inner.run_nested(saved=saved, responses={request.request_id: True})
    assert (done.status.value, kept, done.outputs) == ("idle", None, ["approved"])
    assert done.run_id == result.run_id


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[str, str]) -> None:
    await ctx.yield_output(text.upper())


def test_with_placement_refuses_a_name_nothing_provides_even_when_nothing_moves() -> None:
    shout.local = True  # type: ignore[attr-defined]  # so no executor asks for it
    try:
        workflow = WorkflowBuilder("local").set_start(shout).build()
        with pytest.raises(UnknownNameError, match="nowhere"):
            with_placement(workflow, "nowhere")
        assert with_placement(workflow, "local").placement_of("shout") == "local"
    finally:
        del shout.local  # type: ignore[attr-defined]


def test_the_graph_cache_computes_once_and_again_when_its_registry_changes() -> None:
    manager = PluginManager(entry_points=[], disabled=[])
    workflow = WorkflowBuilder("cached", plugin_manager=manager).set_start(shout).build()
    graph = workflow._graph  # what a durability or a placement is handed
    calls: list[str] = []

    def compute(graph: Any) -> list[str]:
        calls.append(graph.spec.name)
        return list(graph.executors)

    first = graph.cached(("tests", "ids"), compute)
    assert graph.cached(("tests", "ids"), compute) is first and calls == ["cached"]
    by_converters = graph.cached(("tests", "by"), compute, registry="converter")
    assert graph.cached(("tests", "by"), compute, registry="converter") is by_converters
    assert len(calls) == 2

    manager.register(types.SimpleNamespace(), "newcomer")  # the registries are rebuilt
    assert graph.cached(("tests", "by"), compute, registry="converter") is not by_converters
    assert graph.cached(("tests", "ids"), compute) is first  # it reads no registry
    assert len(calls) == 3
