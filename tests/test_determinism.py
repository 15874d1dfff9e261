"""Deterministic supersteps: same input, same outputs, same checkpoints, whatever order the
handlers of a superstep finish in.

A superstep's effects — messages, outputs, events, requests, shared-state writes — are
committed at its barrier in the canonical order (the sender's rank in the graph, then the
index of its message, then the order of its sends); shared-state writes are staged and seen
from the next superstep; two executors writing one key in one superstep is an error unless
a reducer is declared for the key.

Beyond the many-to-one repro, the superstep schedule passes plait-testing's schedule
contract against itself: on drawn graphs (fan-outs, fan-ins, switches, back edges,
executors taking messages concurrently or on arrival, requests answered by resuming) every
run under random handler sleeps, on trio's mock clock and on asyncio, does what the run
with no sleep does.
"""

from __future__ import annotations

import operator
import random
from typing import Any

import anyio
import attrs
import pytest
from plait import (
    CustomEvent,
    Never,
    OutputEvent,
    SharedStateConflictError,
    Workflow,
    WorkflowContext,
    WorkflowRunError,
    executor,
)
from plait_builders import WorkflowBuilder
from plait_durable import encode_checkpoint
from plait_stores import MemoryCheckpointStore
from plait_testing.schedules import ScheduleContract

pytestmark = [
    pytest.mark.anyio,
    # ``_siblings`` reads a key in the superstep another executor writes it in, on purpose
    # (tests/test_shared_races.py checks the warning that gives)
    pytest.mark.filterwarnings("ignore::plait.SharedStateRaceWarning"),
]

WIDTH = 3
SEEDS = 50


def many_to_one(delays: list[float]) -> Workflow:
    """``start`` fans out to ``w0..w2``; worker ``i`` sleeps ``delays[i]`` seconds, sends
    two messages along its own edge to ``coll``, yields an output, adds an event and
    writes shared state; ``coll`` yields what it receives, with its idempotency key."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    def worker(i: int) -> Any:
        @executor(id=f"w{i}")
        async def work(message: str, ctx: WorkflowContext[str, str]) -> None:
            await anyio.sleep(delays[i])
            await ctx.send_message(f"w{i}/a")
            await ctx.yield_output(f"out-w{i}")
            await ctx.add_event({"from": f"w{i}"})
            await ctx.set_shared_state("log", [f"w{i}"])  # a reducer folds these
            await ctx.set_shared_state(f"key-w{i}", ctx.idempotency_key)
            await ctx.send_message(f"w{i}/b")

        return work

    @executor(id="coll")
    async def coll(message: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state.setdefault("seen", []).append(message)
        await ctx.yield_output(f"{message}@{ctx.idempotency_key}")

    workers = [worker(i) for i in range(WIDTH)]
    builder = WorkflowBuilder("many_to_one").add_fan_out(start, workers)
    for w in workers:
        builder.add_edge(w, coll)
    return builder.set_start(start).build()


def _canonical(checkpoints: list[Any]) -> list[bytes]:
    """The encoded checkpoints with what is random by design — checkpoint ids (uuid4) and
    the wall-clock time — replaced by their position, so the bytes compare."""
    ids = {cp.checkpoint_id: f"#{n}" for n, cp in enumerate(checkpoints)}
    out = []
    for cp in checkpoints:
        state = dict(cp.state)
        if "base" in state:
            state["base"] = ids[state["base"]]
        same = attrs.evolve(
            cp,
            checkpoint_id=ids[cp.checkpoint_id],
            parent_id=ids.get(cp.parent_id) if cp.parent_id else None,
            base_id=ids.get(cp.base_id) if cp.base_id else None,
            created_at=0.0,
            state=state,
        )
        out.append(encode_checkpoint(same))
    return out


class TestSuperstepScheduleOnDrawnGraphs(ScheduleContract):
    """The superstep schedule's results do not depend on when its handlers finish, on
    graphs hypothesis draws (``options = ({},)``: the kernel's own schedule)."""

    examples = 15
    seeds = 50


async def _run_once(delays: list[float]) -> tuple[Any, list[bytes]]:
    store = MemoryCheckpointStore()
    result = await many_to_one(delays).run(
        "go",
        run_id="det",
        checkpoint=store,
        events="all",
        shared_reducers={"log": operator.add},
    )
    infos = await store.list("det")
    checkpoints = [await store.load(info.checkpoint_id) for info in infos]
    custom = [e.data["from"] for e in result.events if isinstance(e, CustomEvent)]
    outputs = [e.data for e in result.events if isinstance(e, OutputEvent)]
    assert outputs == result.outputs  # the events say what the result says, in its order
    return (result.outputs, custom, result.shared), _canonical(checkpoints)


async def test_many_to_one_is_the_same_whatever_order_handlers_finish_in() -> None:
    # the repro of issue 20: 30/20/10 ms used to give w2, w1, w0 and 10/20/30 w0, w1, w2
    slow_first, _ = await _run_once([0.03, 0.02, 0.01])
    fast_first, _ = await _run_once([0.01, 0.02, 0.03])
    assert slow_first == fast_first
    outputs, custom, shared = slow_first
    assert outputs == [
        "out-w0",
        "out-w1",
        "out-w2",
        "w0/a@det:3:coll:0",
        "w0/b@det:3:coll:1",
        "w1/a@det:3:coll:2",
        "w1/b@det:3:coll:3",
        "w2/a@det:3:coll:4",
        "w2/b@det:3:coll:5",
    ]
    assert custom == ["w0", "w1", "w2"]
    assert shared["log"] == ["w0", "w1", "w2"]
    assert [shared[f"key-w{i}"] for i in range(WIDTH)] == ["det:2:w0:0", "det:2:w1:0", "det:2:w2:0"]


async def test_randomised_delays_give_identical_outputs_and_checkpoints() -> None:
    first: tuple[Any, list[bytes]] | None = None
    orders = set()
    for seed in range(SEEDS):
        rng = random.Random(seed)
        delays = [rng.uniform(0, 0.004) for _ in range(WIDTH)]
        orders.add(tuple(sorted(range(WIDTH), key=delays.__getitem__)))
        got = await _run_once(delays)
        if first is None:
            first = got
            assert len(got[1]) >= 4  # a checkpoint per superstep and the start
        assert got == first, f"seed {seed} (delays {delays}) gave another run"
    assert len(orders) > 1  # the seeds did finish the workers in different orders


# -- shared state -------------------------------------------------------------------------


def _siblings(write_same_key: bool) -> Workflow:
    """``start`` fans out to ``a`` and ``b``; ``a`` writes at once, ``b`` reads after a
    pause (when ``a`` has long finished), then both send to ``after``, which reads."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    @executor(id="a")
    async def a(message: str, ctx: WorkflowContext[str, Any]) -> None:
        await ctx.set_shared_state("k", "from a")
        await ctx.yield_output(("a reads", await ctx.get_shared_state("k")))
        await ctx.send_message("a")

    @executor(id="b")
    async def b(message: str, ctx: WorkflowContext[str, Any]) -> None:
        await anyio.sleep(0.01)
        await ctx.yield_output(("b reads", await ctx.get_shared_state("k"), dict(ctx.shared)))
        if write_same_key:
            await ctx.set_shared_state("k", "from b")
        await ctx.send_message("b")

    @executor(id="after")
    async def after(message: list[str], ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(("after reads", await ctx.get_shared_state("k")))

    return (
        WorkflowBuilder("siblings")
        .add_fan_out(start, [a, b])
        .add_fan_in([a, b], after)
        .set_start(start)
        .build()
    )


async def test_a_shared_write_is_seen_from_the_next_superstep_only() -> None:
    result = await _siblings(write_same_key=False).run("go")
    assert result.outputs == [
        ("a reads", None),  # not even the writer sees it in its own superstep
        ("b reads", None, {}),
        ("after reads", "from a"),
    ]


async def test_two_executors_writing_one_key_in_one_superstep_is_an_error() -> None:
    with pytest.raises(SharedStateConflictError) as caught:
        await _siblings(write_same_key=True).run("go")
    message = str(caught.value)
    assert "'a' and 'b'" in message and "'k'" in message and "superstep 2" in message
    assert caught.value.executor_id == "b"
    assert caught.value.superstep == 2


async def test_a_reducer_folds_the_writes_in_the_canonical_order() -> None:
    def keep_both(current: Any, update: Any) -> Any:
        return f"{current} + {update}"

    result = await _siblings(write_same_key=True).run("go", shared_reducers={"k": keep_both})
    assert result.outputs[-1] == ("after reads", "from a + from b")
    assert result.shared == {"k": "from a + from b"}


async def test_a_failing_reducer_names_the_key_and_the_executor() -> None:
    def broken(current: Any, update: Any) -> Any:
        raise ValueError("no")

    with pytest.raises(WorkflowRunError, match="reducer of shared-state key 'k'.*'b'"):
        await _siblings(write_same_key=True).run("go", shared_reducers={"k": broken})


async def test_one_executor_writing_a_key_twice_keeps_its_last_write() -> None:
    @executor(id="twice")
    async def twice(message: str, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.set_shared_state("k", 1)
        await ctx.set_shared_state("k", 2)

    wf = WorkflowBuilder().add_executor(twice).set_start(twice).build()
    assert (await wf.run("go")).shared == {"k": 2}


def test_shared_reducers_must_be_callables_by_key() -> None:
    from plait import RunOptionError
    from plait.spi import RunOptions

    with pytest.raises(RunOptionError, match=r"shared_reducers\['k'\]"):
        RunOptions(shared_reducers={"k": "add"})


async def test_a_stopped_and_resumed_run_gives_the_same_outputs_and_keys() -> None:
    """The idempotency keys of a resumed run are those of an uninterrupted one: the pending
    deliveries come back from the checkpoint in the canonical order."""
    whole, _ = await _run_once([0.003, 0.001, 0.002])
    stop = anyio.Event()
    store = MemoryCheckpointStore()
    stopping = many_to_one([0.001, 0.003, 0.002])
    first = await stopping.run(
        "go",
        run_id="det",
        checkpoint=store,
        stop=stop,
        shared_reducers={"log": operator.add},
        on_event=lambda event: stop.set(),  # asks to stop as soon as the run starts
    )
    assert first.status.value == "running" and first.supersteps == 1
    resumed = await stopping.resume("det", store, shared_reducers={"log": operator.add})
    assert resumed.supersteps == 3
    outputs, _, shared = whole
    assert resumed.outputs == outputs
    assert resumed.shared == shared


def asking(delays: list[float]) -> Workflow:
    """``start`` fans out to ``w0..w2``; each sleeps, then asks twice for outside input."""

    @executor(id="start")
    async def start(message: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(message)

    def worker(i: int) -> Any:
        @executor(id=f"w{i}")
        async def ask(message: str, ctx: WorkflowContext[Never]) -> None:
            await anyio.sleep(delays[i])
            await ctx.request_info(f"first of w{i}", str)
            await ctx.request_info(f"second of w{i}", str)

        return ask

    builder = WorkflowBuilder().set_start(start)
    for i in range(WIDTH):
        builder.add_edge(start, worker(i))
    return builder.build()


async def test_request_ids_do_not_depend_on_timing() -> None:
    seen: set[tuple[tuple[str, str], ...]] = set()
    for seed in range(10):
        delays = [random.Random(seed).uniform(0, 0.01) for _ in range(WIDTH)]
        random.Random(seed).shuffle(delays)
        result = await asking(delays).run("go", run_id="the-run")
        seen.add(tuple(sorted((p.request_id, str(p.request)) for p in result.pending_requests)))
    assert len(seen) == 1
    (ids,) = seen
    assert len({request_id for request_id, _ in ids}) == 2 * WIDTH  # one id per request
    other = await asking([0, 0, 0]).run("go", run_id="another-run")
    assert {p.request_id for p in other.pending_requests}.isdisjoint(i for i, _ in ids)


async def test_shared_state_is_read_only_and_deletes_are_staged() -> None:
    seen: list[Any] = []

    @executor(id="a")
    async def a(n: int, ctx: WorkflowContext[int]) -> None:
        if n == 0:
            await ctx.set_shared_state("k", "v")
        elif n == 1:
            with pytest.raises(TypeError):
                ctx.shared["k"] = "bypass"  # type: ignore[index]
            await ctx.delete_shared_state("k")
            seen.append(("same superstep", dict(ctx.shared)))
        else:
            seen.append(("next superstep", dict(ctx.shared)))
            return
        await ctx.send_message(n + 1)

    wf = WorkflowBuilder().add_edge(a, a).set_start(a).build()
    result = await wf.run(0)
    assert seen == [("same superstep", {"k": "v"}), ("next superstep", {})]
    assert result.shared == {}
