"""Record once, replay offline: a recorded run replays equal on asyncio and trio and on
both schedules; a code change, a prompt change and a network attempt are reported where
they happen; ``live`` re-records one executor; the record keeps a repeated answer once."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import llm
import pytest
from plait import RunOptionError, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_replay import ReplayError, read_recording, replay
from replay_helpers import Models, research_workflow

pytestmark = pytest.mark.anyio


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="plait-replay-test-models")
    try:
        yield plugin
    finally:
        llm.plugins.pm.unregister(plugin)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


async def _record(workflow: Any, store: str, **options: Any) -> str:
    result = await workflow.run("tides", checkpoint=store, record=True, **options)
    assert result.ok, result.error
    return str(result.run_id)


@pytest.mark.parametrize("schedule", ["superstep", "pipelined"])
async def test_a_recorded_run_replays_equal_without_calling_the_model(
    models: Models, store: str, schedule: str
) -> None:
    run_id = await _record(research_workflow(), store, schedule=schedule)
    assert len(models.writer.prompts) == 1 and len(models.critic.prompts) == 1
    report = await replay(research_workflow(), run_id, store, schedule=schedule)
    assert report.equal, report.text()
    assert report.divergence is None
    assert report.supersteps == 5
    # two model calls, one now() and one random() answered from the record
    assert report.calls == 4
    assert len(models.writer.prompts) == 1 and len(models.critic.prompts) == 1
    assert "equal to the record (5 supersteps, 4 outside calls answered)" in report.text()


async def test_the_record_holds_what_each_call_answered(models: Models, store: str) -> None:
    run_id = await _record(research_workflow(), store)
    recording = await read_recording(store, run_id)
    kinds = sorted((c["executor"], c["kind"]) for c in recording.calls.values())
    assert kinds == [
        ("critic", "llm.prompt"),
        ("dice", "random"),
        ("plan", "now"),
        ("writer", "llm.prompt"),
    ]
    (writer,) = [c for c in recording.calls.values() if c["executor"] == "writer"]
    assert writer["request"]["prompt"] == "Write about tides"
    assert writer["request"]["system"] == "You write."
    assert writer["request"]["model"] == "replay-test-writer"
    assert writer["response"]["text"] == "noted: Write about tides"
    assert set(writer["response"]["usage"]) == {"input", "output"}
    assert recording.input == ["tides"]
    assert recording.ran[2] == ["writer", "dice"]


async def test_a_code_change_is_reported_at_its_superstep_executor_and_path(
    models: Models, store: str
) -> None:
    run_id = await _record(research_workflow(), store)
    report = await replay(research_workflow(draft_suffix="!"), run_id, store)
    assert not report.equal
    found = report.divergence
    assert found is not None
    assert (found.superstep, found.executor, found.what) == (2, "dice", "pending")
    assert found.path == {
        "from": ["dice"],
        "edge": ["fan_in:writer,dice->collect"],
        "to": "collect",
    }
    assert found.diff and found.diff[0]["op"] == "replace"
    assert str(found.replayed).count("!") == 1 and "!" not in str(found.recorded)
    assert "diverged at superstep 2, executor 'dice'" in report.text()


async def test_a_changed_message_names_its_path(models: Models, store: str) -> None:
    """A message on a direct edge: the path names the sender, the edge and the target."""

    def chain(suffix: str) -> Any:
        @executor(id="first")
        async def first(text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text + suffix)

        @executor(id="second")
        async def second(text: str, ctx: WorkflowContext[Any, str]) -> None:
            await ctx.yield_output(text)

        return WorkflowBuilder().set_start(first).add_edge(first, second).build()

    run_id = await _record(chain(""), store)
    report = await replay(chain("?"), run_id, store)
    found = report.divergence
    assert found is not None
    assert (found.superstep, found.executor, found.what) == (1, "first", "pending")
    assert found.path == {"from": ["first"], "edge": ["direct:first->second"], "to": "second"}
    assert found.diff == [{"op": "replace", "path": "/value/0", "value": "tides?"}]
    assert "path: from first via direct:first->second to second" in report.text()


async def test_a_prompt_change_is_reported_as_a_prompt_diff(models: Models, store: str) -> None:
    run_id = await _record(research_workflow(), store)
    changed = research_workflow(instruction="Write a poem about {{ input }}")
    report = await replay(changed, run_id, store)
    found = report.divergence
    assert found is not None
    assert (found.superstep, found.executor, found.what) == (2, "writer", "call")
    assert '-  "prompt": "Write about tides",' in found.diff
    assert '+  "prompt": "Write a poem about tides",' in found.diff
    assert len(models.writer.prompts) == 1  # the model was never called


async def test_live_re_records_one_executor(models: Models, store: str) -> None:
    run_id = await _record(research_workflow(), store)
    models.critic.answer = "rewritten"
    report = await replay(research_workflow(), run_id, store, live=["critic"], save_to=store)
    # the critic's new answer is the first difference, and its call the only one made
    found = report.divergence
    assert found is not None
    assert (found.superstep, found.executor, found.what) == (4, "critic", "calls")
    assert report.live == ("critic",)
    assert len(models.writer.prompts) == 1 and len(models.critic.prompts) == 2
    assert report.rerecorded is not None
    # the re-recorded run holds the writer's recorded answer and the critic's new one,
    # and replays equal with nothing live and no model answering
    again = await read_recording(store, report.rerecorded)
    answers = {c["executor"]: c["response"] for c in again.calls.values()}
    assert answers["writer"]["text"] == "noted: Write about tides"
    assert answers["critic"]["text"].startswith("rewritten: ")
    models.writer.answer = models.critic.answer = "never asked"
    second = await replay(research_workflow(), report.rerecorded, store)
    assert second.equal, second.text()
    assert len(models.writer.prompts) == 1 and len(models.critic.prompts) == 2


async def test_live_names_an_executor_of_the_workflow(models: Models, store: str) -> None:
    from plait import UnknownNameError

    run_id = await _record(research_workflow(), store)
    with pytest.raises(UnknownNameError, match="'wrtier'.*'writer'"):
        await replay(research_workflow(), run_id, store, live=["wrtier"])


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on localhost that answers one line to each connection."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.close()


async def test_a_replay_that_touches_the_network_fails_naming_the_executor(
    store: str, listener: int
) -> None:
    def pinging() -> Any:
        @executor(id="ping")
        async def ping(text: str, ctx: WorkflowContext[Any, str]) -> None:
            def talk() -> str:
                with socket.create_connection(("127.0.0.1", listener), timeout=5) as conn:
                    return conn.recv(16).decode()

            await ctx.yield_output(await anyio.to_thread.run_sync(talk))

        return WorkflowBuilder().set_start(ping).build()

    run_id = await _record(pinging(), store)  # recording: the network is there
    report = await replay(pinging(), run_id, store)
    found = report.divergence
    assert found is not None
    assert (found.executor, found.what) == ("ping", "network")
    assert f"127.0.0.1:{listener}" in found.message
    assert "executor 'ping' tried to reach the network" in report.text()
    # the guard is off again once the replay is over
    with socket.create_connection(("127.0.0.1", listener), timeout=5) as conn:
        assert conn.recv(16) == b"pong\n"


async def test_a_repeated_prompt_is_stored_once(models: Models, tmp_path: Path) -> None:
    from plait_durable import opened_store, unpack_blob

    store = f"file://{tmp_path / 'runs'}"
    long_topic = "the sea " * 60  # a prompt of 480 bytes: a blob of its own
    a = AgentLike("a", forward=True)
    b = AgentLike("b", forward=False)
    workflow = WorkflowBuilder().set_start(a.executor).add_edge(a.executor, b.executor).build()
    result = await workflow.run(long_topic, checkpoint=store, record=True)
    assert result.ok, result.error
    async with opened_store(store) as opened:
        hashes = await opened.blob_hashes(result.run_id)
        blobs = await opened.get_blobs(result.run_id, list(hashes))
    contents = [json.loads(unpack_blob(data)) for data in blobs.values()]
    # the prompt both agents sent (and the run's input) is one blob, the answer another
    assert contents.count(long_topic) == 1
    assert contents.count(f"noted: {long_topic}") == 1
    # each call's record names them by reference
    entries = [c for c in contents if isinstance(c, dict) and c.get("kind") == "llm.prompt"]
    assert len(entries) == 2
    assert entries[0]["request"]["prompt"] == entries[1]["request"]["prompt"]
    assert "h" in entries[0]["request"]["prompt"]  # a blob reference
    recording = await read_recording(store, result.run_id)
    keys = {c["key"] for c in recording.calls.values() if c["kind"] == "llm.prompt"}
    assert len(keys) == 1 and len(recording.calls) == 2


class AgentLike:
    """An agent of the writer model that forwards what it got (so two of them send one
    prompt)."""

    def __init__(self, name: str, *, forward: bool) -> None:
        from plait_llm import AgentExecutor

        agent = AgentExecutor(name, llm.get_model("replay-test-writer"))
        sends = forward

        @executor(id=name)
        async def ask(text: str, ctx: WorkflowContext[str, str]) -> None:
            await agent.ask(text, ctx)
            if sends:
                await ctx.send_message(text)
            else:
                await ctx.yield_output(text)

        self.executor = ask


async def test_a_run_that_was_not_recorded_is_refused(models: Models, store: str) -> None:
    result = await research_workflow().run("tides", checkpoint=store)
    with pytest.raises(ReplayError, match="was not recorded: run it with record=True"):
        await replay(research_workflow(), result.run_id, store)
    with pytest.raises(ReplayError, match="holds no run 'nope'"):
        await replay(research_workflow(), "nope", store)


async def test_replay_with_is_set_by_replay_only(models: Models) -> None:
    with pytest.raises(RunOptionError, match="run option replay_with is set by"):
        await research_workflow().run("tides", replay_with="the record")
    with pytest.raises(RunOptionError, match="run option record must be True or False"):
        await research_workflow().run("tides", record="yes")


def test_a_run_that_does_not_record_is_not_observed() -> None:
    import plait_replay
    from plait.spi import RunOptions

    observe = plait_replay.plait_observe_run
    assert observe(run_id="r", resumed=None, options=RunOptions()) is None
    assert observe(run_id="r", resumed=None, options=None) is None
    # what a checkpoint says is checked: only a literal true turns recording on
    assert observe(run_id="r", resumed={"replay": {"record": "yes"}}, options=None) is None
    assert observe(run_id="r", resumed={"replay": {"record": True}}, options=None) is not None


async def test_a_recorded_run_stays_recorded_when_it_is_resumed(store: str) -> None:
    """A run that waits for an answer and is resumed (here, by a caller that does not say
    record=True) goes on recording: its checkpoints say it was recorded."""

    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[Any, Any]) -> None:
        ctx.random()  # recorded in each superstep ask runs in
        if text == "why?":
            await ctx.request_info({"question": text}, str)  # the answer comes back here

    workflow = WorkflowBuilder().set_start(ask).build()
    first = await workflow.run("why?", checkpoint=store, record=True)
    assert first.status.value == "idle_with_pending_requests"
    (request,) = first.pending_requests
    second = await workflow.resume(first.run_id, store, responses={request.request_id: "42"})
    assert second.ok and second.status.value == "idle", second.error
    recording = await read_recording(store, first.run_id)
    assert sorted((c["superstep"], c["kind"]) for c in recording.calls.values()) == [
        (1, "random"),
        (2, "random"),
    ], "the resumed superstep was recorded too"


def _interview(shout: bool = False) -> Any:
    """``ask`` asks twice (a bare answer, then one it gets as ``RequestResponse``) and
    ``say`` yields both answers, drawing ``ctx.random()`` between them."""
    from plait import Executor, RequestResponse
    from plait.spi import Handler

    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[str]) -> None:
        if text == "start":
            await ctx.request_info({"question": "name?"}, str)
        else:  # the first answer
            await ctx.send_message(f"name={text}")

    class Confirm(Executor):
        """Asks to confirm what it got; takes the answer as a ``RequestResponse``."""

        def declare_handlers(self) -> tuple[Handler, ...]:
            return (
                Handler("confirm", str, (), (), self.ask),
                Handler("confirmed", RequestResponse, (str,), (), self.confirmed),
            )

        async def ask(self, text: str, ctx: WorkflowContext[Any, Any]) -> None:
            await ctx.request_info({"question": f"confirm {text}?"}, int)

        async def confirmed(self, answer: RequestResponse, ctx: WorkflowContext[Any, Any]) -> None:
            await ctx.send_message(f"{answer.request['question']} -> {answer.value}")

    confirm = Confirm("confirm")

    @executor(id="say")
    async def say(text: str, ctx: WorkflowContext[Any, str]) -> None:
        said = f"{text} ({ctx.random():.6f})"
        await ctx.yield_output(said.upper() if shout else said)

    return WorkflowBuilder().set_start(ask).add_edge(ask, confirm).add_edge(confirm, say).build()


async def test_a_run_resumed_with_answers_replays_equal_through_them(store: str) -> None:
    first = await _interview().run("start", checkpoint=store, record=True)
    (name,) = first.pending_requests
    second = await _interview().resume(first.run_id, store, responses={name.request_id: "ada"})
    (sure,) = second.pending_requests
    assert sure.executor_id == "confirm"
    third = await _interview().resume(first.run_id, store, responses={sure.request_id: 7})
    assert third.ok and third.status.value == "idle", third.error
    [said] = third.outputs
    assert said.startswith("confirm name=ada? -> 7 (")
    recording = await read_recording(store, first.run_id)
    given = {
        step: [(a["executor"], a["value"]) for a in out] for step, out in recording.answers.items()
    }
    assert given == {2: [("ask", "ada")], 4: [("confirm", 7)]}
    assert recording.answers[4][0]["request_id"] == sure.request_id  # a RequestResponse's

    report = await replay(_interview(), first.run_id, store)
    assert report.equal, report.text()
    assert report.supersteps == 5, "compared through both answers to the end"
    # a change after the last answer is found there: the answers drove the replay on
    changed = await replay(_interview(shout=True), first.run_id, store)
    found = changed.divergence
    assert found is not None, changed.text()
    assert (found.superstep, found.executor, found.what) == (5, "say", "outputs"), changed.text()


async def test_an_answer_that_is_not_json_names_its_executor(store: str) -> None:
    from plait.spi import outside_call

    @executor(id="odd")
    async def odd(text: str, ctx: WorkflowContext[Any, Any]) -> None:
        async def really(request: Any) -> Any:
            return {1, 2}  # a set: JSON has none

        await ctx.yield_output(await outside_call("http", {"url": text}, really))

    workflow = WorkflowBuilder().set_start(odd).build()
    assert (await workflow.run("u", checkpoint=store)).outputs == [{1, 2}], "unrecorded: as is"
    failed = await workflow.run("u", checkpoint=store, record=True, raise_on_failure=False)
    assert failed.error is not None
    assert "the answer of executor 'odd''s http call must be JSON-ready" in str(
        failed.error.__cause__
    )


def _chain(suffix: str) -> Any:
    @executor(id="first")
    async def first(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text + suffix)

    @executor(id="second")
    async def second(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())

    @executor(id="third")
    async def third(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(f"<{text}>")

    return (
        WorkflowBuilder().set_start(first).add_edge(first, second).add_edge(second, third).build()
    )


async def test_a_stub_sends_what_the_record_says_its_executor_sent(store: str) -> None:
    run_id = await _record(_chain(""), store)
    # "first" changed: replayed, it diverges; stubbed, its recorded message goes on
    assert not (await replay(_chain("?"), run_id, store)).equal
    report = await replay(_chain("?"), run_id, store, stub=["first"])
    assert report.equal, report.text()
    # a stub of the executor that yields gives back its recorded output
    assert (await replay(_chain(""), run_id, store, stub=["third"])).equal


async def test_a_stub_whose_messages_the_record_cannot_tell_apart_is_refused(
    models: Models, store: str
) -> None:
    run_id = await _record(research_workflow(), store)
    with pytest.raises(ReplayError, match=r"--stub dice: .* to 'collect' .* 'writer' also sent"):
        await replay(research_workflow(), run_id, store, stub=["dice"])
    report = await replay(research_workflow(draft_suffix="!"), run_id, store, stub=["plan"])
    assert report.divergence is not None and report.divergence.executor == "dice"
