"""The schedule contract: a schedule gives the superstep schedule's results, whatever order
its handlers finish in.

A schedule (``plait_register_schedules``) decides *when* the handlers of a superstep run,
never *what* a run does: every run must give the same outputs in the same order, the same
per-executor sequence of (superstep, message id, message), the same final executor states
and visits — or the same error at the same (executor, superstep) — as the kernel's superstep
schedule with no handler waiting at all.

:class:`ScheduleContract` checks that on graphs hypothesis draws (:func:`drawn_graphs`):
fan-out, fan-in (``all`` and ``available``), switches and conditional edges,
counter-bounded back edges, executors taking up to 4 messages at a time or one at a time as
they arrive (``order="arrival"``), visit limits, superstep limits, and requests for input
that the contract answers by resuming. Its executors are hash-based transforms of their
message and state, each sleeping a random time drawn from a seed:

- on trio's mock clock, under ``seeds`` seeds (the sleeps cost no wall time, and the
  interleavings differ with every seed);
- on asyncio, under ``asyncio_seeds`` seeds of real sleeps ``asyncio_scale`` times as long.

Subclass it under a ``Test…`` name and say which run options pick your schedule (with
the options your plugin declares, ``plait_register_run_options``)::

    from plait_testing.schedules import ScheduleContract

    class TestEager(ScheduleContract):
        options = ({"schedule": "eager"}, {"schedule": "eager", "eager_window": 1})

The kernel's own superstep schedule passes it with ``options = ({},)``: that is its
determinism (Plait's ``tests/test_determinism.py``). Needs ``plait-testing[schedules]``
(hypothesis, trio, plait-builders and plait-stores).
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import anyio
import attrs
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_stores import MemoryCheckpointStore
from trio.testing import MockClock

__all__ = [
    "DrawnGraph",
    "DrawnNode",
    "Recorder",
    "ScheduleContract",
    "build_drawn",
    "drawn_graphs",
    "run_drawn",
]

#: What a handler sleeps, in seconds, drawn per (seed, executor, message).
DELAYS = (0.0, 0.001, 0.004, 0.02, 0.05, 0.2)

#: Seconds a drawn run may take, times its recorder's ``scale``: the longest takes a few
#: (100 supersteps of at most 0.2 s each); a run that stalls would otherwise jump the mock
#: clock for ever, or hang on asyncio.
STALLED_AFTER = 3600


def digest(*parts: Any) -> str:
    """A short, stable hash of ``parts`` (what the drawn executors compute)."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=6).hexdigest()


@attrs.frozen
class DrawnNode:
    """One node of a drawn graph: how it is fed and how it feeds its children."""

    id: str
    #: ``"start"``, ``"edge"`` (one parent), ``"fanin_all"`` or ``"fanin_available"``
    #: (two or three parents)
    kind: str
    parents: tuple[str, ...]
    #: how many of one superstep's messages it handles at once
    concurrency: int
    #: takes its messages on arrival (``order="arrival"``) though one at a time
    arrival: bool
    #: how its edge children are wired: ``"direct"``, ``"fan_out"``, ``"switch"``,
    #: ``"conditional"``
    fan: str
    #: a back edge to an earlier node, and how many times the node may take it
    loop_to: str | None
    loop_bound: int
    #: asks for input (a request the contract answers) on some messages
    asks: bool
    max_visits: int | None


@attrs.frozen
class DrawnGraph:
    """A drawn workflow: its nodes (``n0`` starts), its superstep limit, and the letters
    of its one input message."""

    nodes: tuple[DrawnNode, ...]
    max_supersteps: int
    messages: tuple[str, ...]


@st.composite
def drawn_graphs(draw: st.DrawFn, *, asks: bool = True) -> DrawnGraph:
    """A hypothesis strategy of workflow graphs of 3 to 9 nodes (see the module docstring).

    :param asks: whether nodes may ask for input; a run with requests is checkpointed to a
        memory store and resumed with the answers.
    """
    size = draw(st.integers(3, 9))
    ids = [f"n{i}" for i in range(size)]
    nodes: list[DrawnNode] = []
    for i, eid in enumerate(ids):
        parents: tuple[str, ...]
        if i == 0:
            kind, parents = "start", ()
        else:
            choices = ["edge", "edge", "fanin_all", "fanin_available"] if i >= 2 else ["edge"]
            kind = draw(st.sampled_from(choices))
            if kind == "edge":
                parents = (ids[draw(st.integers(0, i - 1))],)
            else:
                count = draw(st.integers(2, min(3, i)))
                picked = draw(st.lists(st.integers(0, i - 1), min_size=count,
                                       max_size=count, unique=True))  # fmt: skip
                parents = tuple(ids[p] for p in sorted(picked))
        loops = i >= 2 and draw(st.integers(0, 3)) == 0
        loop_to = ids[draw(st.integers(1, i - 1))] if loops else None
        concurrency = 1 if loops else draw(st.sampled_from([1, 1, 2, 4]))
        arrival = concurrency == 1 and not loops and draw(st.integers(0, 3)) == 0
        nodes.append(
            DrawnNode(
                id=eid,
                kind=kind,
                parents=parents,
                concurrency=concurrency,
                arrival=arrival,
                fan=draw(st.sampled_from(["direct", "fan_out", "switch", "conditional"])),
                loop_to=loop_to,
                loop_bound=draw(st.integers(1, 3)),
                asks=asks and i >= 1 and concurrency == 1 and draw(st.integers(0, 5)) == 0,
                max_visits=draw(st.sampled_from([None, None, None, 2, 4])),
            )
        )
    max_supersteps = draw(st.sampled_from([100, 100, 6, 9]))
    messages = tuple(draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3)))
    return DrawnGraph(tuple(nodes), max_supersteps, messages)


class Recorder:
    """What one run's handlers did: ``calls``, (executor, superstep, message id, message)
    in the order they started, and ``states``, each sequential executor's state after its
    last invocation.

    :param seed: draws each handler's sleep (``None``: no handler sleeps).
    :param scale: multiplies every sleep (real sleeps on asyncio are kept short).
    """

    def __init__(self, seed: int | None, scale: float = 1.0) -> None:
        self.seed = seed
        self.scale = scale
        self.calls: list[tuple[str, int, str, str]] = []
        self.states: dict[str, dict[str, Any]] = {}

    def delay(self, eid: str, message: str) -> float:
        """How long ``eid`` sleeps on ``message`` under this seed."""
        if self.seed is None:
            return 0.0
        return random.Random(f"{self.seed}/{eid}/{message}").choice(DELAYS) * self.scale


def build_drawn(graph: DrawnGraph, recorder: Recorder) -> Workflow:
    """The workflow of ``graph``, its handlers recording to ``recorder``."""
    children: dict[str, list[str]] = {node.id: [] for node in graph.nodes}
    for node in graph.nodes:
        if node.kind == "edge":
            children[node.parents[0]].append(node.id)
    fanned_in = {p for node in graph.nodes if node.kind.startswith("fanin") for p in node.parents}
    feeds = {eid for eid, kids in children.items() if kids} | fanned_in
    feeds |= {node.id for node in graph.nodes if node.loop_to}
    executors = {node.id: _executor(node, recorder, node.id in feeds) for node in graph.nodes}
    builder = WorkflowBuilder("drawn")
    for node in graph.nodes:
        builder.add_executor(executors[node.id])
    for node in graph.nodes:
        kids = [executors[k] for k in children[node.id]]
        if kids:
            _wire(builder, executors[node.id], kids, node.fan)
        if node.kind.startswith("fanin"):
            when = "all" if node.kind == "fanin_all" else "available"
            sources = [executors[p] for p in node.parents]
            builder.add_fan_in(sources, executors[node.id], when=when)
        if node.loop_to is not None:
            builder.add_edge(executors[node.id], executors[node.loop_to], condition=_is_back)
    return builder.set_start(executors["n0"]).build()


def _is_back(message: Any) -> bool:
    return isinstance(message, str) and message.startswith("back:")


def _not_back(message: Any) -> bool:
    return not _is_back(message)


def _wire(builder: WorkflowBuilder, source: Any, kids: list[Any], fan: str) -> None:
    if fan == "fan_out" or (fan == "switch" and len(kids) < 2):
        builder.add_fan_out(source, kids, selection=_forward_selection)
    elif fan == "switch":
        cases = [(functools.partial(_bucket, i, len(kids)), kid) for i, kid in enumerate(kids)]
        builder.add_switch(source, cases[:-1], default=kids[-1])
    elif fan == "conditional":
        for i, kid in enumerate(kids):
            builder.add_edge(source, kid, condition=functools.partial(_odd_or_first, i))
    else:
        for kid in kids:
            builder.add_edge(source, kid, condition=_not_back)


def _forward_selection(message: Any, targets: list[str]) -> list[str]:
    return [] if _is_back(message) else targets


def _bucket(i: int, count: int, message: Any) -> bool:
    return int(digest(message), 16) % count == i


def _odd_or_first(i: int, message: Any) -> bool:
    return not _is_back(message) and (i == 0 or int(digest(i, message), 16) % 2 == 1)


def _executor(node: DrawnNode, recorder: Recorder, feeds: bool) -> Any:
    eid = node.id
    # one superstep's messages in the canonical order, so its state may depend on it
    ordered = node.concurrency == 1 and not node.arrival
    order = "arrival" if node.arrival else None

    @executor(id=eid, max_concurrency=node.concurrency, max_visits=node.max_visits, order=order)
    async def handle(message: Any, ctx: WorkflowContext[Any, str]) -> None:
        text = message if isinstance(message, str) else repr(message)
        recorder.calls.append((eid, ctx.superstep, ctx.idempotency_key, text))
        await anyio.sleep(recorder.delay(eid, text))
        if ordered:
            seen = ctx.state.setdefault("seen", 0) + 1
            ctx.state["seen"] = seen
            ctx.state["hash"] = digest(ctx.state.get("hash"), text)
            value = digest(eid, text, ctx.state["hash"])
        else:
            seen, value = 0, digest(eid, text)
        if int(value, 16) % 3 == 0:
            await ctx.yield_output(f"{eid}:{value}")
        if node.asks and int(value, 16) % 4 == 1:
            await ctx.request_info(f"{eid}:{value}", str)
            return
        if node.loop_to is not None and seen <= node.loop_bound and int(value, 16) % 2:
            await ctx.send_message(f"back:{value}", target=node.loop_to)
        elif feeds:
            await ctx.send_message(value)
        if ordered:
            recorder.states[eid] = dict(ctx.state)

    return handle


def _answer(request: Any) -> str:
    return f"answer:{digest(request)}"


async def _play(graph: DrawnGraph, recorder: Recorder, **options: Any) -> dict[str, Any]:
    """Run ``graph`` on its message (answering every request, a round at a time, up to
    three rounds) and say what the run did."""
    workflow = build_drawn(graph, recorder)
    store = MemoryCheckpointStore()
    run_id = "drawn"
    result = await workflow.run(
        "".join(graph.messages),
        run_id=run_id,
        # checkpointed (cut after every commit) when a request must be answered by resuming
        checkpoint=store if any(node.asks for node in graph.nodes) else None,
        raise_on_failure=False,
        max_supersteps=graph.max_supersteps,
        **options,
    )
    outputs = list(result.outputs)
    rounds = 0
    while result.status.value == "idle_with_pending_requests" and rounds < 3:
        rounds += 1
        responses = {r.request_id: _answer(r.request) for r in result.pending_requests}
        result = await workflow.resume(
            run_id, store, responses=responses, raise_on_failure=False, **options
        )
        outputs.extend(result.outputs)
    error = result.error
    failed = None
    if error is not None:
        failed = (
            type(error).__name__,
            getattr(error, "executor_id", None),
            getattr(error, "superstep", None),
        )
    seen: dict[str, list[tuple[int, str, str]]] = {}
    for eid, step, key, text in recorder.calls:
        seen.setdefault(eid, []).append((step, key, text))
    concurrent = {n.id for n in graph.nodes if n.concurrency > 1 or n.arrival}
    for eid in concurrent & set(seen):
        seen[eid].sort()  # one superstep's messages run at once: their order is free
    said: dict[str, Any] = {
        "status": result.status.value,
        "error": failed,
    }
    if error is None:
        said |= {
            "supersteps": result.supersteps,
            "outputs": outputs,
            "calls": seen,
            "states": recorder.states,
            "visits": {eid: len({t for t, _, _ in calls}) for eid, calls in seen.items()},
            "requests": sorted(str(r.request) for r in result.pending_requests),
        }
    return said


async def _bounded(graph: DrawnGraph, recorder: Recorder, **options: Any) -> dict[str, Any]:
    """:func:`_play`, failing with the graph and options when the run stalls."""
    with anyio.move_on_after(STALLED_AFTER * recorder.scale) as scope:
        return await _play(graph, recorder, **options)
    assert not scope.cancelled_caught, f"stalled (seed {recorder.seed}): {options} on {graph!r}"
    raise AssertionError("unreachable")


def run_drawn(
    graph: DrawnGraph,
    seed: int | None = None,
    *,
    backend: str = "trio",
    scale: float = 1.0,
    **options: Any,
) -> dict[str, Any]:
    """Run ``graph`` with run ``options`` in a new event loop and say what it did: its
    status and error, or its supersteps, outputs, calls, states, visits and open requests.

    :param seed: draws each handler's sleep; ``None``: no handler sleeps.
    :param backend: ``"trio"`` runs on trio's mock clock (sleeps cost no wall time);
        ``"asyncio"`` sleeps for real, ``scale`` times the drawn time. A run still going
        after :data:`STALLED_AFTER` seconds times ``scale`` (virtual ones on trio) fails as
        stalled, naming the seed, the options and the graph.
    """
    recorder = Recorder(seed, scale)
    play = functools.partial(_bounded, graph, recorder, **options)
    if backend == "trio":
        outcome: dict[str, Any] = anyio.run(
            play, backend="trio", backend_options={"clock": MockClock(autojump_threshold=0)}
        )
    else:
        outcome = anyio.run(play, backend=backend)
    return outcome


class ScheduleContract:
    """Every run of a drawn graph under :attr:`options`, on either backend and whatever its
    handlers sleep, gives what the superstep schedule gives with no handler sleeping."""

    #: the run options that pick the schedule under test, one mapping per variant (the
    #: seeds go round them)
    options: ClassVar[Sequence[Mapping[str, Any]]] = ({},)
    #: how many graphs hypothesis draws
    examples: ClassVar[int] = 15
    #: seeds per graph on trio's mock clock
    seeds: ClassVar[int] = 50
    #: seeds per graph on asyncio, sleeping for real
    asyncio_seeds: ClassVar[int] = 2
    #: how much of each drawn sleep asyncio sleeps (at most 2 ms a handler by default)
    asyncio_scale: ClassVar[float] = 0.01

    def test_runs_equal_the_superstep_run(self) -> None:
        variants = [dict(o) for o in self.options]

        @settings(
            max_examples=self.examples,
            # no shrinking: a graph runs 50-odd times per example, so shrinking a failure
            # would take minutes; the failing graph is printed as drawn (9 nodes at most)
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(drawn_graphs())
        def check(graph: DrawnGraph) -> None:
            expected = run_drawn(graph)
            for seed in range(self.seeds):
                chosen = variants[seed % len(variants)]
                got = run_drawn(graph, seed, **chosen)
                assert got == expected, f"seed {seed} on trio, {chosen}"
            for seed in range(self.asyncio_seeds):
                chosen = variants[seed % len(variants)]
                got = run_drawn(graph, seed, backend="asyncio", scale=self.asyncio_scale, **chosen)
                assert got == expected, f"seed {seed} on asyncio, {chosen}"

        check()
