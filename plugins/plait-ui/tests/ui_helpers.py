"""Workflows, stores and clients the plait-ui tests share (real runs into real stores)."""

from __future__ import annotations

import dataclasses
import functools
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from plait import Executor, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder
from plait_ui import UiSettings, make_app
from starlette.testclient import TestClient
from typing_extensions import Never

TOKEN = "test-token"


def unique(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}"


def chain(n: int, *, name: str | None = None, fail_at: int | None = None) -> Workflow:
    """``n`` executors in a chain, each adding 1 (keeping a count in its state); with
    ``fail_at``, executor ``n<fail_at>`` raises ``ValueError``."""

    def node(i: int) -> Any:
        @executor(id=f"n{i}")
        async def add(x: int, ctx: WorkflowContext[int, int]) -> None:
            ctx.state["seen"] = ctx.state.get("seen", 0) + 1
            if i == fail_at:
                raise ValueError(f"boom at n{i}: <script>alert(1)</script>")
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return add

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder(name or unique("chain"), max_supersteps=n + 5)
    builder.add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


class Approval(Executor):
    """Asks whether to publish (a ``bool``), then publishes or not."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["text"] = text
        await ctx.request_info({"question": "publish?", "text": text}, bool)

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"published: {ctx.state['text']}" if approved else "no")


def gate(name: str | None = None) -> Workflow:
    """One executor that asks a yes/no question."""
    builder = WorkflowBuilder(name or unique("gate"))
    return builder.add_executor(Approval("approval")).set_start("approval").build()


def wide(n: int, *, name: str | None = None) -> Workflow:
    """A start executor fanned out to ``n - 1`` others (``n`` nodes): a big graph whose
    run is two supersteps."""

    @executor(id="start")
    async def start(x: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.send_message(x)

    def leaf(i: int) -> Any:
        @executor(id=f"part{i // 100}/leaf{i}")
        async def step(x: int, ctx: WorkflowContext[Never, int]) -> None:
            if i == 0:
                await ctx.yield_output(x)

        return step

    leaves = [leaf(i) for i in range(n - 1)]
    builder = WorkflowBuilder(name or unique("wide"), max_supersteps=5).add_executor(start)
    builder.add_fan_out(start, leaves)
    return builder.set_start(start).build()


def wide_failing(n: int, *, fail_at: int, name: str | None = None) -> Workflow:
    """:func:`wide`, whose leaf ``fail_at`` raises ``ValueError``."""

    @executor(id="start")
    async def start(x: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.send_message(x)

    def leaf(i: int) -> Any:
        @executor(id=f"part{i // 100}/leaf{i}")
        async def step(x: int, ctx: WorkflowContext[Never, int]) -> None:
            if i == fail_at:
                raise ValueError(f"leaf{i} failed")

        return step

    leaves = [leaf(i) for i in range(n - 1)]
    builder = WorkflowBuilder(name or unique("wide"), max_supersteps=5).add_executor(start)
    builder.add_fan_out(start, leaves)
    return builder.set_start(start).build()


def fan_out(n: int, *, name: str | None = None) -> Workflow:
    """``start`` fanned out to ``n - 2`` workers (``w0`` …, no prefix) and fanned in to
    ``total`` (``n`` nodes): the flat fan-out of the benchmarks (``fanout1000``)."""

    @executor(id="start")
    async def start(x: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.send_message(x)

    def worker(i: int) -> Any:
        @executor(id=f"w{i}")
        async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
            await ctx.send_message(x + i)

        return step

    @executor(id="total")
    async def total(values: list[int], ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(sum(values))

    workers = [worker(i) for i in range(n - 2)]
    builder = WorkflowBuilder(name or unique("fanout"), max_supersteps=5).add_executor(start)
    builder.add_fan_out(start, workers).add_fan_in(workers, total)
    return builder.set_start(start).build()


def in_thread(call: Callable[[], Awaitable[Any]]) -> Any:
    """``anyio.run(call)`` in a thread of its own: the test's thread may have an event loop
    running already (Playwright's sync API keeps one)."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append((True, anyio.run(call)))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def run(workflow: Workflow, message: Any, url: str, **options: Any) -> Any:
    """Run ``workflow`` on ``message`` into the store ``url``."""
    return in_thread(functools.partial(workflow.run, message, checkpoint=url, **options))


def run_failing(workflow: Workflow, message: Any, url: str) -> str:
    """Run a workflow that fails; return its run id."""
    try:
        run(workflow, message, url)
    except Exception as exc:  # the run's error carries its result
        return str(exc.result.run_id)  # type: ignore[attr-defined]
    raise AssertionError("the run did not fail")


def settings(url: str, **options: Any) -> UiSettings:
    return UiSettings(
        store=url, token=TOKEN, allowed_hosts=frozenset({"testserver"}), poll=0.05, **options
    )


@contextmanager
def signed_in(url: str, **options: Any) -> Iterator[TestClient]:
    """A client of the app for store ``url``, signed in with the token."""
    with TestClient(make_app(settings(url, **options)), base_url="http://testserver") as client:
        response = client.get(f"/?token={TOKEN}", follow_redirects=False)
        assert response.status_code == 303
        yield client


def post(client: TestClient, path: str, data: dict[str, str]) -> Any:
    """A same-origin form POST with this session's CSRF token."""
    page = client.get("/")
    csrf = page.text.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
    return client.post(
        path,
        data={"csrf": csrf, **data},
        headers={"origin": "http://testserver"},
        follow_redirects=False,
    )


def sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def slow_chain(
    n: int, seconds: float, *, name: str | None = None, gates: Path | None = None
) -> Workflow:
    """``n`` executors in a chain, each waiting ``seconds`` before it passes the message on:
    a run another process can watch as it steps.

    :param gates: instead of waiting ``seconds``, executor ``s<i>`` waits until the file
        ``gates / "s<i>"`` exists (see :func:`gate_then_slow`).
    """

    def node(i: int) -> Any:
        @executor(id=f"s{i}")
        async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
            if gates is None:
                await anyio.sleep(seconds)
            while gates is not None and not (gates / f"s{i}").exists():
                await anyio.sleep(0.02)
            if i == n - 1:
                await ctx.yield_output(x + 1)
            else:
                await ctx.send_message(x + 1)

        return step

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder(name or unique("slow"), max_supersteps=n + 5)
    builder.add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


TWO_STEP_TOPOLOGY = {
    "start": "a",
    "nodes": [["a", "python"], ["b", "python"]],
    "edge_groups": [["a->b", "direct", ["a"], ["b"], {}], ["b->a", "direct", ["b"], ["a"], {}]],
}


def long_run(url: str, checkpoints: int, *, every: int = 32) -> str:
    """A run of ``checkpoints`` checkpoints in the layout the runner writes (a full one
    every ``every``, deltas on it between), of a two-executor loop: a long run written
    in seconds. Returns its id."""
    run_id = unique("long")

    async def write() -> None:
        from plait_durable import Checkpoint, open_store

        store = open_store(url)
        batch: list[Checkpoint] = []
        parent: str | None = None
        base: str | None = None
        try:
            for step in range(checkpoints):
                node, other = ("a", "b") if step % 2 else ("b", "a")
                state: dict[str, Any] = {
                    "pending": {node: [step]},
                    "router_state": {},
                    "requests": [],
                    "executor_state": {other: {"count": step}},
                    "outputs": [],
                    "visits": {},
                }
                full = step % every == 0
                state["kind"] = "full" if full else "delta"
                if full:
                    state["shared"] = {}
                else:
                    state["base"] = base
                checkpoint = Checkpoint(
                    checkpoint_id=uuid.uuid4().hex,
                    run_id=run_id,
                    superstep=step,
                    parent_id=parent,
                    signature="0" * 64,
                    status="running",
                    created_at=1_700_000_000.0 + step,
                    state=state,
                    metadata={"workflow": "loop"}
                    | ({"topology": TWO_STEP_TOPOLOGY} if step == 0 else {}),
                    base_id=None if full else base,
                )
                if full:
                    base = checkpoint.checkpoint_id
                parent = checkpoint.checkpoint_id
                batch.append(checkpoint)
                if len(batch) == 500:
                    await store.save_many(batch)  # type: ignore[attr-defined]
                    batch = []
            if batch:
                await store.save_many(batch)  # type: ignore[attr-defined]
        finally:
            await store.aclose()

    in_thread(write)
    return run_id


@dataclasses.dataclass
class Review:
    """A structured answer: approved or not, and why."""

    approved: bool
    note: str = ""


class Reviewer(Executor):
    """Asks for a :class:`Review` of a text."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info({"review": text}, Review)

    @handler
    async def answer(self, review: Review, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{'approved' if review.approved else 'rejected'}: {review.note}")


class Chooser(Executor):
    """Asks to choose ``yes`` or ``no`` (a ``Literal``) for a number, and yields the choice."""

    @handler
    async def ask(self, number: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info({"choose for": number}, Literal["yes", "no"])

    @handler
    async def answer(self, choice: Literal["yes", "no"], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"chose {choice}")


def choice_gate(name: str | None = None) -> Workflow:
    """One executor that asks for a ``Literal["yes", "no"]``."""
    builder = WorkflowBuilder(name or unique("choice"))
    return builder.add_executor(Chooser("chooser")).set_start("chooser").build()


def review_gate(name: str | None = None) -> Workflow:
    """One executor that asks for a structured review."""
    builder = WorkflowBuilder(name or unique("review"))
    return builder.add_executor(Reviewer("reviewer")).set_start("reviewer").build()


def retrying(*, name: str | None = None, fail: bool = True) -> Workflow:
    """``fetch`` (fails once, retried after 50 ms) → ``slow`` (times out once, retried) →
    ``store`` (raises ``KeyError`` when ``fail``): a run whose journal has attempts apart,
    a retry, a timeout and a failure."""
    from plait import RetryPolicy

    tries: dict[str, int] = {}

    @executor(id="fetch", retry=RetryPolicy(max_attempts=2, delay=0.05))
    async def fetch(x: int, ctx: WorkflowContext[int]) -> None:
        tries["fetch"] = tries.get("fetch", 0) + 1
        if tries["fetch"] == 1:
            raise ConnectionError("the <upstream> hung up")
        await ctx.send_message(x + 1)

    @executor(id="slow", timeout=0.1, retry=RetryPolicy(max_attempts=2, delay=0))
    async def slow(x: int, ctx: WorkflowContext[int]) -> None:
        tries["slow"] = tries.get("slow", 0) + 1
        await anyio.sleep(5 if tries["slow"] == 1 else 0.02)
        await ctx.send_message(x + 1)

    @executor(id="store")
    async def store(x: int, ctx: WorkflowContext[Never, int]) -> None:
        if fail:
            raise KeyError("no table named results")
        await ctx.yield_output(x)

    builder = WorkflowBuilder(name or unique("retrying"))
    builder.add_edge(fetch, slow).add_edge(slow, store)
    return builder.set_start(fetch).build()


class SlowApproval(Executor):
    """Asks whether to go on (a ``bool``), then passes the text on."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["text"] = text
        await ctx.request_info({"question": "go on?", "text": text}, bool)

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[str, str]) -> None:
        await ctx.send_message(ctx.state["text"] if approved else "stopped")


def gate_then_slow(
    n: int, seconds: float, name: str | None = None, *, gates: Path | None = None
) -> Workflow:
    """A yes/no question, then ``n`` executors (``s0`` …) that each wait ``seconds``: an
    answered run takes several visible supersteps to finish.

    :param gates: instead of waiting ``seconds``, executor ``s<i>`` waits until the file
        ``gates / "s<i>"`` exists: a test lets each superstep end when it has seen what it
        looks for, however loaded the machine.
    """

    def node(i: int) -> Any:
        @executor(id=f"s{i}")
        async def step(text: str, ctx: WorkflowContext[str, str]) -> None:
            if gates is None:
                await anyio.sleep(seconds)
            while gates is not None and not (gates / f"s{i}").exists():
                await anyio.sleep(0.02)
            if i == n - 1:
                await ctx.yield_output(f"done: {text}")
            else:
                await ctx.send_message(text)

        return step

    nodes = [node(i) for i in range(n)]
    builder = WorkflowBuilder(name or unique("gated"), max_supersteps=n + 5)
    builder.add_executor(SlowApproval("approval"))
    builder.add_edge("approval", nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start("approval").build()


#: The topology a steps file's ``words → foreach each (grow ⟲, short) → joined`` stores: the
#: body's ids carry no prefix, only the block's gather does.
FOREACH_TOPOLOGY = {
    "start": "words",
    "nodes": [
        ["each", "steps.foreach"],
        ["each/gather", "steps.gather"],
        ["grow", "steps.agent"],
        ["joined", "steps.agent"],
        ["short", "steps.condition"],
        ["words", "steps.agent"],
    ],
    "edge_groups": [
        ["direct:each/gather->joined", "direct", ["each/gather"], ["joined"], "{}"],
        ["direct:grow->short", "direct", ["grow"], ["short"], "{}"],
        ["direct:words->each", "direct", ["words"], ["each"], "{}"],
        ["switch:each", "switch", ["each"], ["grow", "each/gather"], "{}"],
        ["switch:short", "switch", ["short"], ["grow", "each/gather"], "{}"],
    ],
}


def stored_run(
    url: str,
    topology: dict[str, Any],
    *,
    state: dict[str, Any] | None = None,
    status: str = "running",
) -> tuple[str, str]:
    """A run of one full checkpoint of ``topology`` (``state`` merged into an empty run
    state), written straight into the store; returns (run id, checkpoint id)."""
    run_id = unique("stored")
    checkpoint_id = uuid.uuid4().hex

    async def write() -> None:
        from plait_durable import Checkpoint, open_store

        store = open_store(url)
        full: dict[str, Any] = {
            "kind": "full",
            "pending": {},
            "router_state": {},
            "requests": [],
            "executor_state": {},
            "outputs": [],
            "visits": {},
            "shared": {},
            **(state or {}),
        }
        try:
            await store.save(
                Checkpoint(
                    checkpoint_id=checkpoint_id,
                    run_id=run_id,
                    superstep=1,
                    parent_id=None,
                    signature="0" * 64,
                    status=status,
                    created_at=1_700_000_000.0,
                    state=full,
                    metadata={"workflow": "stored", "topology": topology},
                )
            )
        finally:
            await store.aclose()

    in_thread(write)
    return run_id, checkpoint_id
