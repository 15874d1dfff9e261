"""The runner's hot-path rules, each with a test that fails when the rule is broken.

- a superstep with exactly one delivery spawns no task (tasks counted on the event loop);
- on asyncio, a superstep whose handlers never wait spawns one task, not one per job, and
  one whose handlers wait spawns a task for each;
- dispatch by message type is cached (the executor's handlers are searched once per type);
- no event object is built when nobody listens (constructions of every event class counted).

Each counter is also shown to count, so a zero means "none happened", not "not observed".
"""

from __future__ import annotations

import asyncio
import importlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import plait._events
import pytest
from plait import (
    Executor,
    ExecutorCompleted,
    ExecutorInvoked,
    Never,
    RunStatus,
    SuperstepFinished,
    SuperstepStarted,
    Workflow,
    WorkflowContext,
    WorkflowEvent,
    executor,
    handler,
)
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio

HOPS = 50
# ``plait.executor`` the attribute is the decorator; the module is the one that dispatches
executor_module = importlib.import_module("plait._executor")


def relay(id: str) -> Executor:
    """An executor that sends every message on."""

    @executor(id=id)
    async def step(message: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(message)

    return step


def sink(id: str) -> Executor:
    """An executor that yields every message as a workflow output."""

    @executor(id=id)
    async def out(message: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(message)

    return out


def chain(hops: int = HOPS) -> Workflow:
    """``hops`` relays in a row, then a sink: one delivery in every superstep."""
    nodes = [relay(f"n{i}") for i in range(hops)]
    builder = WorkflowBuilder()
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    builder.add_edge(nodes[-1], sink("end"))
    return builder.set_start(nodes[0]).build()


def fan_out(width: int = 3) -> Workflow:
    """A relay fanning out to ``width`` sinks: one superstep with ``width`` deliveries."""
    targets = [sink(f"t{i}") for i in range(width)]
    return WorkflowBuilder().add_fan_out(relay("src"), targets).set_start("src").build()


# -- counting tasks ------------------------------------------------------------------------


class TaskCount:
    """Tasks spawned, and task groups entered, while :func:`count_tasks` is active."""

    def __init__(self) -> None:
        self.tasks = 0
        self.task_groups = 0


def _trio_instrument(count: TaskCount) -> Any:
    import trio

    class CountSpawns(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            count.tasks += 1

    return CountSpawns()


@contextmanager
def count_tasks(monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str) -> Iterator[TaskCount]:
    """Count every task the running event loop spawns (asyncio: through a task factory on
    the running loop; trio: through an instrument, which sees nursery and system tasks
    alike) and every entry into ``anyio.create_task_group``."""
    count = TaskCount()
    real_create_task_group = anyio.create_task_group

    def counting_create_task_group() -> anyio.abc.TaskGroup:
        count.task_groups += 1
        return real_create_task_group()

    with monkeypatch.context() as patch:
        patch.setattr(anyio, "create_task_group", counting_create_task_group)
        if anyio_backend_name == "asyncio":
            loop = asyncio.get_running_loop()
            previous = loop.get_task_factory()

            def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
                count.tasks += 1
                if previous is not None:
                    return previous(loop, coro, **kwargs)
                return asyncio.Task(coro, loop=loop, **kwargs)

            loop.set_task_factory(factory)
            try:
                yield count
            finally:
                loop.set_task_factory(previous)
        else:
            import trio

            instrument = _trio_instrument(count)
            trio.lowlevel.add_instrument(instrument)
            try:
                yield count
            finally:
                trio.lowlevel.remove_instrument(instrument)


async def test_a_chain_of_single_deliveries_spawns_no_task(
    monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    wf = chain()
    with count_tasks(monkeypatch, anyio_backend_name) as count:
        result = await wf.run("x")
    assert result.outputs == ["x"]
    assert result.supersteps == HOPS + 1
    assert (count.tasks, count.task_groups) == (0, 0)


def waiting_fan_out(width: int = 3) -> Workflow:
    """A relay fanning out to ``width`` sinks that each wait before yielding."""

    def waiting_sink(id: str) -> Executor:
        @executor(id=id)
        async def out(message: Any, ctx: WorkflowContext[Never, Any]) -> None:
            await anyio.lowlevel.checkpoint()
            await ctx.yield_output(message)

        return out

    targets = [waiting_sink(f"t{i}") for i in range(width)]
    return WorkflowBuilder().add_fan_out(relay("src"), targets).set_start("src").build()


async def test_a_fan_out_of_handlers_that_never_wait_spawns_one_task_on_asyncio(
    monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    wf = fan_out(5)
    with count_tasks(monkeypatch, anyio_backend_name) as count:
        result = await wf.run("x")
    assert result.outputs == ["x"] * 5
    # (trio runs a task per job: its scheduler wakes tasks in a random order)
    assert count.tasks == (1 if anyio_backend_name == "asyncio" else 5)


async def test_the_task_counter_sees_a_fan_outs_tasks(
    monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    wf = waiting_fan_out(3)
    with count_tasks(monkeypatch, anyio_backend_name) as count:
        result = await wf.run("x")
    assert result.outputs == ["x", "x", "x"]
    # on asyncio the first job runs in the one task, which stays with it when it waits;
    # the others then get a task each
    assert count.tasks == 3


async def test_the_task_counter_is_off_after_its_block(
    monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    wf = fan_out(3)
    with count_tasks(monkeypatch, anyio_backend_name) as count:
        pass
    await wf.run("x")
    assert (count.tasks, count.task_groups) == (0, 0)


# -- dispatch cache ------------------------------------------------------------------------


class Base:
    """A message type a handler accepts by subclass (the lookup needs ``is_instance``)."""


class Child(Base):
    """Sent to a handler of :class:`Base`."""


class Dispatching(Executor):
    """Two handlers: one matched by exact type (``str``), one by subclass (``Base``)."""

    def __init__(self, id: str) -> None:
        super().__init__(id)
        self.seen: list[str] = []

    @handler
    async def on_text(self, message: str, ctx: WorkflowContext[Never]) -> None:
        self.seen.append("text")

    @handler
    async def on_base(self, message: Base, ctx: WorkflowContext[Never]) -> None:
        self.seen.append("base")


class SearchCountingHandlers(tuple):  # type: ignore[type-arg]
    """An executor's handlers that count how often they are searched (iterated)."""

    searches = 0

    def __iter__(self) -> Iterator[Any]:
        type(self).searches += 1
        return super().__iter__()


MESSAGES = 20


@executor(id="burst")
async def burst(count: int, ctx: WorkflowContext[str | Base]) -> None:
    """Sends ``count`` messages of each type to the next executor, in one superstep."""
    for _ in range(count):
        await ctx.send_message("text")
        await ctx.send_message(Child())


async def test_dispatch_by_type_searches_the_handlers_once_per_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = Dispatching("target")
    wf = WorkflowBuilder().add_edge(burst, target).set_start(burst).build()
    node = wf.executors["target"]
    assert isinstance(node, Dispatching)

    class Handlers(SearchCountingHandlers):
        searches = 0

    monkeypatch.setattr(node, "handlers", Handlers(node.handlers))
    checks: list[tuple[Any, Any]] = []
    real_is_instance: Callable[[Any, Any], bool] = executor_module.is_instance

    def counting_is_instance(value: Any, tp: Any) -> bool:
        checks.append((type(value), tp))
        return real_is_instance(value, tp)

    monkeypatch.setattr(executor_module, "is_instance", counting_is_instance)
    result = await wf.run(MESSAGES)

    assert result.status is RunStatus.IDLE
    assert node.seen == ["text", "base"] * MESSAGES
    # str: one search (exact match); Child: the exact pass and the is_instance pass
    assert Handlers.searches == 3
    assert checks == [(Child, str), (Child, Base)]
    # the next run of the same workflow finds both types in the cache
    await wf.run(MESSAGES)
    assert Handlers.searches == 3
    assert len(checks) == 2


async def test_the_search_counter_counts_every_search_without_a_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = Dispatching("target")
    wf = WorkflowBuilder().add_edge(burst, target).set_start(burst).build()
    node = wf.executors["target"]

    class Handlers(SearchCountingHandlers):
        searches = 0

    class NoCache(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: Any, value: Any) -> None:
            pass  # remember nothing: every lookup takes the uncached path

    monkeypatch.setattr(node, "handlers", Handlers(node.handlers))
    monkeypatch.setattr(node, "_dispatch", NoCache())
    await wf.run(MESSAGES)
    assert Handlers.searches == 3 * MESSAGES


# -- events --------------------------------------------------------------------------------

DETAIL_EVENTS = (ExecutorInvoked, ExecutorCompleted, SuperstepStarted, SuperstepFinished)


def event_classes() -> list[type[WorkflowEvent]]:
    """Every event class :mod:`plait._events` exports."""
    found = [
        cls
        for name in plait._events.__all__
        if isinstance(cls := getattr(plait.events, name), type) and issubclass(cls, WorkflowEvent)
    ]
    assert set(DETAIL_EVENTS) <= set(found)
    return found


@contextmanager
def count_events(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Count constructions of every event class (its own ``__init__``, so a subclass is
    counted once, under its own name); the real ``__init__`` comes back afterwards."""
    built: Counter[str] = Counter()

    def counting(cls: type[WorkflowEvent]) -> Any:
        real_init = cls.__init__

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if type(self) is cls:
                built[cls.__name__] += 1
            real_init(self, *args, **kwargs)

        return __init__

    with monkeypatch.context() as patch:
        for cls in event_classes():
            patch.setattr(cls, "__init__", counting(cls))
        yield built


async def test_no_executor_events_are_built_when_only_lifecycle_events_are_collected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wf = chain(5)
    with count_events(monkeypatch) as built:
        result = await wf.run("x")
    assert result.outputs == ["x"]
    assert {cls.__name__: built[cls.__name__] for cls in DETAIL_EVENTS} == dict.fromkeys(
        (cls.__name__ for cls in DETAIL_EVENTS), 0
    )
    # the counter counts: the lifecycle events were built, once each
    assert (built["RunStarted"], built["OutputEvent"], built["RunFinished"]) == (1, 1, 1)


async def test_executor_events_are_built_when_all_events_are_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wf = chain(5)
    with count_events(monkeypatch) as built:
        result = await wf.run("x", events="all")
    assert result.outputs == ["x"]
    executors, supersteps = 6, 6
    assert built["ExecutorInvoked"] == built["ExecutorCompleted"] == executors
    assert built["SuperstepStarted"] == built["SuperstepFinished"] == supersteps
    assert sum(isinstance(e, ExecutorInvoked) for e in result.events) == executors


async def test_event_classes_build_normally_after_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with count_events(monkeypatch):
        pass
    for cls in event_classes():
        assert "counting" not in getattr(cls.__init__, "__qualname__", "")
    assert ExecutorInvoked("a", 1) == ExecutorInvoked("a", 1)
