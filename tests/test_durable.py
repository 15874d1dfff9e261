"""Durable runs: checkpoints per superstep, resume, human in the loop, durability modes."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

import attrs
import plait
import pytest
from durable_helpers import counting_chain
from plait import (
    ExecutorFailedError,
    Never,
    RequestInfoEvent,
    RunOptionError,
    RunStatus,
    Workflow,
    WorkflowContext,
    executor,
)
from plait_builders import WorkflowBuilder
from plait_durable import (
    CheckpointEncodeError,
    CheckpointNotFoundError,
    ResponseTypeError,
    TopologyMismatchError,
    encode_checkpoint,
    open_store,
)

pytestmark = pytest.mark.anyio


def store_url() -> str:
    return f"memory://{uuid.uuid4().hex}"


async def test_a_checkpoint_per_superstep_and_the_run_id_on_the_result() -> None:
    url = store_url()
    result = await counting_chain(5).run(0, checkpoint=url)
    assert result.outputs == [5]
    store = open_store(url)
    infos = await store.list(result.run_id)
    assert [i.superstep for i in infos] == [0, 1, 2, 3, 4, 5]
    assert infos[-1].status == "idle"
    latest = await store.latest(result.run_id)
    assert latest is not None and latest.signature == counting_chain(5).signature()


async def test_resume_after_a_failure_gives_the_uninterrupted_outputs() -> None:
    url = store_url()
    flaky = {"left": 1}
    wf = counting_chain(6, fail_at=3, flaky=flaky)
    with pytest.raises(ExecutorFailedError, match="'n3' failed in superstep 4") as info:
        await wf.run(10, checkpoint=url)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == [16]
    assert resumed.run_id == run_id
    assert resumed.status is RunStatus.IDLE
    # n3's state was restored from the checkpoint before the failed superstep: one visit
    store = open_store(url)
    latest = await store.latest(run_id)
    assert latest is not None and latest.status == "idle"


async def test_resume_unknown_run_is_an_error() -> None:
    with pytest.raises(CheckpointNotFoundError, match="no run and no checkpoint with id 'nope'"):
        await counting_chain(2).resume("nope", store_url())


async def test_resuming_a_changed_graph_is_refused_saying_what_changed() -> None:
    url = store_url()
    flaky = {"left": 1}
    with pytest.raises(ExecutorFailedError) as info:
        await counting_chain(4, fail_at=2, flaky=flaky).run(0, checkpoint=url)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    with pytest.raises(TopologyMismatchError, match=r"executors added: n4.*edges added"):
        await counting_chain(5).resume(run_id, url)


@attrs.frozen
class Question:
    text: str


async def test_human_in_the_loop_survives_and_checks_the_response_type() -> None:
    @executor(id="publish")
    async def publish(verdict: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(verdict)

    def build() -> Workflow:
        from plait import Executor, handler

        class Reviewer(Executor):
            request_types = (Question,)  # checkpoints rebuild declared types only

            @handler
            async def start(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
                await ctx.request_info(Question(f"approve {topic}?"), bool)

            @handler
            async def answered(self, answer: bool, ctx: WorkflowContext[str]) -> None:
                await ctx.send_message("approved" if answer else "rejected")

        return WorkflowBuilder().add_edge(Reviewer("review"), publish).set_start("review").build()

    url = store_url()
    first = await build().run("release", checkpoint=url)
    assert first.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (request,) = first.pending_requests
    assert request.request == Question("approve release?")
    assert any(isinstance(e, RequestInfoEvent) for e in first.events)
    # a fresh Workflow object, as in a new process days later
    with pytest.raises(ResponseTypeError, match=r"must be bool, got str; the request stays"):
        await build().resume(first.run_id, url, responses={request.request_id: "yes"})
    done = await build().resume(first.run_id, url, responses={request.request_id: True})
    assert done.outputs == ["approved"]
    assert done.status is RunStatus.IDLE
    with pytest.raises(ResponseTypeError, match="no pending request"):
        await build().resume(first.run_id, url, responses={request.request_id: True})


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
async def test_durability_modes(mode: str) -> None:
    url = store_url()
    result = await counting_chain(5).run(0, checkpoint=url, durability=mode)
    infos = await open_store(url).list(result.run_id)
    if mode == "exit":
        assert [(i.superstep, i.status) for i in infos] == [(5, "idle")]
    else:
        assert [i.superstep for i in infos] == [0, 1, 2, 3, 4, 5]
    # every checkpoint's parent is the one before it: written in order
    assert [i.parent_id for i in infos[1:]] == [i.checkpoint_id for i in infos[:-1]]


async def test_exit_mode_failure_checkpoint_resumes_the_failed_superstep() -> None:
    url = store_url()
    flaky = {"left": 1}
    wf = counting_chain(4, fail_at=2, flaky=flaky)
    with pytest.raises(ExecutorFailedError) as info:
        await wf.run(0, checkpoint=url, durability="exit")
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    infos = await open_store(url).list(run_id)
    assert [(i.superstep, i.status) for i in infos] == [(2, "failed")]
    assert (await wf.resume(run_id, url)).outputs == [4]


async def test_a_value_that_cannot_be_encoded_names_the_state_key_and_superstep() -> None:
    @executor(id="holder")
    async def holder(x: int, ctx: WorkflowContext[Never, int]) -> None:
        ctx.state["conn"] = object()
        await ctx.yield_output(x)

    wf = WorkflowBuilder().add_executor(holder).set_start(holder).build()
    with pytest.raises(CheckpointEncodeError, match=r"executor 'holder' state.*superstep 1.*conn"):
        await wf.run(1, checkpoint=store_url())


async def test_checkpoint_size_does_not_grow_with_the_number_of_executors() -> None:
    sizes = {}
    for n in (10, 1000):
        url = store_url()
        result = await counting_chain(n).run(0, checkpoint=url)
        store = open_store(url)
        infos = await store.list(result.run_id)
        middle = [await store.load(i.checkpoint_id) for i in infos[len(infos) // 2 : -1]]
        assert {c.state["kind"] for c in middle} == {"full"}
        sizes[n] = max(len(encode_checkpoint(c)) for c in middle)
    # every checkpoint holds every executor's state and visit count, as trees whose
    # unchanged parts are blobs the last checkpoint wrote: a few references per checkpoint
    assert sizes[1000] < 2 * sizes[10] + 1000, sizes


async def test_async_mode_batches_queued_checkpoints_in_order(tmp_path: Any) -> None:
    """The background writer commits what queued up in one transaction (``save_many``)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = await counting_chain(60).run(0, checkpoint=url, durability="async")
    assert result.outputs == [60]
    store = open_store(url)
    try:
        infos = await store.list(result.run_id)
        assert [i.superstep for i in infos] == list(range(61))
        assert [i.parent_id for i in infos[1:]] == [i.checkpoint_id for i in infos[:-1]]
        assert (await counting_chain(60).resume(result.run_id, store)).outputs == [60]
    finally:
        await store.aclose()


async def test_a_resume_by_run_id_is_refused_if_another_worker_wrote_the_run_meanwhile() -> None:
    """What the resume read (its latest checkpoint) goes with the resumed run explicitly:
    once the run's lease is held, a newer checkpoint written in between refuses it."""
    from plait_durable import RunLeaseError
    from plait_stores import MemoryCheckpointStore

    url = store_url()
    flaky = {"left": 1}
    wf = counting_chain(6, fail_at=3, flaky=flaky)
    with pytest.raises(ExecutorFailedError):
        await wf.run(10, checkpoint=url)
    store = open_store(url)
    [run] = await store.runs()
    latest = await store.latest(run.run_id)
    assert latest is not None

    class Raced(MemoryCheckpointStore):
        """Another worker saves a newer checkpoint between the resume's read and its lease."""

        async def acquire_lease(self, run_id: str, **options: Any) -> Any:
            newer = attrs.evolve(latest, checkpoint_id="newer", parent_id=latest.checkpoint_id)
            await self.save(newer)
            return await super().acquire_lease(run_id, **options)

    raced = Raced(url.removeprefix("memory://"))
    with pytest.raises(RunLeaseError, match="written by another worker while this one was resum"):
        await wf.resume(run.run_id, raced)
    # by checkpoint id, the resume names what it goes on from: no such check
    resumed = await wf.resume(latest.checkpoint_id, store)
    assert resumed.outputs == [16]


class CountedStore:
    """Memory stores by URL (``counted://NAME``), counting the opens and closes of each."""

    opened: ClassVar[list[str]] = []
    closed: ClassVar[list[str]] = []

    @plait.hookimpl
    def plait_register_checkpoint_stores(self, register: Any) -> None:
        register("counted", self.open)

    @classmethod
    def open(cls, url: str) -> Any:
        from plait_stores import MemoryCheckpointStore

        name = url.removeprefix("counted://")
        cls.opened.append(name)

        class Counted(MemoryCheckpointStore):
            async def aclose(self) -> None:
                cls.closed.append(name)
                await super().aclose()

        return Counted(name)


async def test_a_store_url_is_opened_and_closed_once_by_the_durability_and_a_bad_option_opens_none(
    plait_register_plugin: Any,
) -> None:
    plait_register_plugin(CountedStore(), "counted-store")
    CountedStore.opened.clear()
    CountedStore.closed.clear()
    url = f"counted://{uuid.uuid4().hex}"
    flaky = {"left": 1}
    wf = counting_chain(4, fail_at=2, flaky=flaky)
    with pytest.raises(ExecutorFailedError) as info:
        await wf.run(0, checkpoint=url)
    run_id = info.value.result.run_id  # type: ignore[attr-defined]
    assert len(CountedStore.opened) == len(CountedStore.closed) == 1
    # a bad option on resume is refused before any store is opened
    with pytest.raises(RunOptionError, match="max_supersteps"):
        await wf.resume(run_id, url, max_supersteps=0)
    with pytest.raises(RunOptionError, match="unknown run option"):
        await wf.resume(run_id, url, max_superstep=9)
    assert len(CountedStore.opened) == 1
    # a resume failing after the store is open (an unknown run) leaves it closed
    with pytest.raises(CheckpointNotFoundError):
        await wf.resume("no-such-run", url)
    assert len(CountedStore.opened) == len(CountedStore.closed) == 2
    # a resume with a URL opens it once for the read and the run, and closes it
    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == [4]
    assert len(CountedStore.opened) == len(CountedStore.closed) == 3
    assert (await wf.pending_requests(run_id, url)) == []
    assert len(CountedStore.opened) == len(CountedStore.closed) == 4
