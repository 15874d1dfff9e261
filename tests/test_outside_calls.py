"""The kernel's outside-call seam: ``ctx.now()`` and ``ctx.random()``, ``outside_call``
for executors that reach outside, the ``outside_calls`` variable a plugin answers them
through, and ``RunObserver.checkpoint_section`` kept in a durable run's checkpoints."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import plait
import pytest
from plait import WorkflowContext, executor
from plait.spi import (
    Invocation,
    RunObserver,
    RunOptions,
    add_answerer,
    outside_call,
    outside_calls,
    remove_answerer,
)
from plait_builders import WorkflowBuilder
from plait_testing import RegisterPlugin

pytestmark = pytest.mark.anyio


def _drawing(seen: list[Any]) -> Any:
    @executor(id="draw")
    async def draw(text: str, ctx: WorkflowContext[Any, str]) -> None:
        seen.append((ctx.random(), ctx.random(), ctx.now()))
        await ctx.yield_output(text)

    return WorkflowBuilder().set_start(draw).build()


async def test_random_is_drawn_from_the_invocation() -> None:
    seen: list[Any] = []
    await _drawing(seen).run("x", run_id="r1")
    await _drawing(seen).run("x", run_id="r1")
    await _drawing(seen).run("x", run_id="r2")
    (a1, b1, _), (a2, b2, _), (a3, _, _) = seen
    assert (a1, b1) == (a2, b2), "the same invocation draws the same numbers"
    assert a1 != b1, "each draw is a new number"
    assert a3 != a1, "another run's invocation draws others"
    assert all(0 <= n < 1 for n in (a1, b1, a3))


async def test_now_is_an_aware_time_in_utc() -> None:
    seen: list[Any] = []
    before = datetime.datetime.now(datetime.timezone.utc)
    await _drawing(seen).run("x")
    now = seen[0][2]
    assert now.tzinfo is datetime.timezone.utc
    assert before <= now <= datetime.datetime.now(datetime.timezone.utc)


class Answering:
    """An :class:`plait.spi.OutsideCalls` that answers every call and value itself."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        self.asked.append((kind, dict(request)))
        return "from the record"

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        self.asked.append((kind, None))
        return {"now": 0.0, "random": 0.25}[kind]


class AnsweringPlugin:
    """Answers the calls of every invocation of runs that set ``max_visits=7`` (the
    ``options`` the hook gets); keeps a section with every checkpoint."""

    def __init__(self) -> None:
        self.calls = Answering()
        self.options: list[Any] = []

    @plait.hookimpl
    def plait_observe_run(self, run_id: str, options: RunOptions) -> RunObserver | None:
        self.options.append(options)
        if options.max_visits != 7:
            return None
        calls = self.calls

        class Answer(RunObserver):
            steps = 0

            def invocation_started(self, invocation: Invocation) -> Any:
                add_answerer(calls)

            def invocation_finished(
                self, handle: Any, attempt: int, status: str, error: BaseException | None
            ) -> None:
                remove_answerer(calls)

            def checkpoint_section(self) -> Mapping[str, Any] | None:
                self.steps += 1
                return {"answering": {"checkpoint": self.steps}}

        return Answer()


async def test_a_plugin_answers_outside_calls(register_plugin: RegisterPlugin) -> None:
    plugin = AnsweringPlugin()
    register_plugin(plugin)
    seen: list[Any] = []

    @executor(id="ask")
    async def ask(text: str, ctx: WorkflowContext[Any, Any]) -> None:
        async def really(request: Mapping[str, Any]) -> str:
            return "made for real"

        answer = await outside_call("http", {"url": text}, really)
        seen.append((answer, ctx.random(), ctx.now()))
        await ctx.yield_output(answer)

    workflow = WorkflowBuilder().set_start(ask).build()
    plain = await workflow.run("https://example.org")
    assert plain.outputs == ["made for real"], "nobody answers: the call is made"
    answered = await workflow.run("https://example.org", max_visits=7)
    assert answered.outputs == ["from the record"]
    assert seen[1][1] == 0.25
    assert seen[1][2] == datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert plugin.calls.asked == [
        ("http", {"url": "https://example.org"}),
        ("random", None),
        ("now", None),
    ]
    assert [o.max_visits for o in plugin.options] == [None, 7]
    assert outside_calls.get() == (), "the variable is reset after the invocation"


async def test_checkpoint_sections_are_kept_in_the_checkpoints(
    register_plugin: RegisterPlugin,
) -> None:
    from plait_durable import opened_store

    register_plugin(AnsweringPlugin())

    @executor(id="one")
    async def one(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="two")
    async def two(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(text)

    workflow = WorkflowBuilder().set_start(one).add_edge(one, two).build()
    result = await workflow.run("x", checkpoint="memory://sections", max_visits=7)
    async with opened_store("memory://sections") as store:
        infos = await store.list(result.run_id)
        states = [(await store.load(info.checkpoint_id)).state for info in infos]
    assert len(states) >= 2
    assert [s["observed"] for s in states] == [
        {"answering": {"checkpoint": n}} for n in range(1, len(states) + 1)
    ], "each checkpoint keeps the section asked for as it was taken"
    plain = await workflow.run("x", checkpoint="memory://sections")
    async with opened_store("memory://sections") as store:
        latest = await store.latest(plain.run_id)
    assert latest is not None and "observed" not in latest.state


class _Reporting:
    """What the budget-and-record test registers with llm: a model that answers "ok",
    reporting 3 tokens in and 7 out, and counts its calls."""

    def __init__(self) -> None:
        import llm

        calls = self.calls = [0]

        class Reporting(llm.Model):
            model_id = "outside-calls-test-model"

            class Options(llm.Options):
                max_tokens: int | None = None

            def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
                calls[0] += 1
                response.set_usage(input=3, output=7)
                yield "ok"

        self.model = Reporting()

    @property
    def hookimpl(self) -> Any:
        import llm

        model = self.model

        class Models:
            @llm.hookimpl
            def register_models(self, register: Any) -> None:
                register(model)

        return Models()


async def test_a_budget_and_a_recorder_answer_one_model_call(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget (outermost) and a recorder (innermost) both answer the agent's model call:
    the recorded budgeted run's ledger counts what the call used; its replay is equal
    without calling the model; a budget around the replay counts the recorded usage."""
    import llm
    from plait.spi import BuildContext
    from plait_budgets import Budget
    from plait_llm import AgentKind
    from plait_replay import read_recording, replay
    from plait_replay._recorder import Replaying

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    reporting = _Reporting()
    plugin = reporting.hookimpl
    llm.plugins.pm.register(plugin, name="outside-calls-test-models")
    try:

        def workflow() -> Any:
            agent = AgentKind().create(
                {"model": "outside-calls-test-model", "options": {"max_tokens": 20}},
                BuildContext(node_id="agent"),
            )

            @executor(id="done")
            async def done(text: str, ctx: WorkflowContext[Any, str]) -> None:
                await ctx.yield_output(text)

            return WorkflowBuilder("budgeted").set_start(agent).add_edge(agent, done).build()

        store = f"sqlite:///{tmp_path / 'runs.db'}"
        budget = Budget(tokens=1000, model_calls=5)
        recorded = await workflow().run("hello", checkpoint=store, record=True, budget=budget)
        assert recorded.ok and recorded.outputs == ["ok"]
        assert reporting.calls == [1]
        spent = recorded.usage["total"]
        assert (spent["input_tokens"], spent["output_tokens"], spent["model_calls"]) == (3, 7, 1)
        recording = await read_recording(store, str(recorded.run_id))
        (call,) = [c for c in recording.calls.values() if c["kind"] == "llm.prompt"]
        assert call["request"]["model"] == "outside-calls-test-model"
        assert call["response"]["usage"] == {"input": 3, "output": 7}

        report = await replay(workflow(), str(recorded.run_id), store)
        assert report.equal, report.text()
        assert reporting.calls == [1], "the replay answers from the record"

        # a budget around a replayed call counts what the recorded call used
        replayed = await workflow().run(
            "hello", record=True, replay_with=Replaying(recording), budget=budget
        )
        assert replayed.ok and replayed.outputs == ["ok"]
        assert reporting.calls == [1]
        again = replayed.usage["total"]
        assert (again["input_tokens"], again["output_tokens"], again["model_calls"]) == (3, 7, 1)
        assert replayed.usage["unreported"] == 0
    finally:
        llm.plugins.pm.unregister(plugin)


async def test_answerers_compose_by_place_whatever_order_they_are_added_in() -> None:
    """``add_answerer`` keeps what decides outermost and what answers innermost; each
    passes the call on (a changed request included) and ``remove_answerer`` takes one out
    in any order."""
    seen: list[str] = []

    class Passing:
        def __init__(self, name: str, place: str) -> None:
            self.name, self.place = name, place

        async def call(self, kind: str, request: Mapping[str, Any], invoke: Any) -> Any:
            seen.append(f"{self.name}:{request['model']}")
            if self.place == "decide":
                request = {**request, "model": "cheaper"}
            return await invoke(request)

        def value(self, kind: str, produce: Callable[[], Any]) -> Any:
            seen.append(self.name)
            return produce()

    record, trace = Passing("record", "answer"), Passing("trace", "watch")
    budget, cassette = Passing("budget", "decide"), Passing("cassette", "make")

    async def made(request: Mapping[str, Any]) -> str:
        return f"made with {request['model']}"

    add_answerer(cassette)  # a test's cassette, entered before the run's recorder is added
    add_answerer(record)
    add_answerer(trace)
    add_answerer(budget)
    try:
        assert outside_calls.get() == (budget, trace, record, cassette)
        answer = await outside_call("llm.prompt", {"model": "asked"}, made)
        assert answer == "made with cheaper"
        assert seen == ["budget:asked", "trace:cheaper", "record:cheaper", "cassette:cheaper"]
        drawn: list[Any] = []
        await _drawing(drawn).run("x")  # the run's invocations inherit this task's answerers
        assert seen[4:] == ["budget", "trace", "record", "cassette"] * 3, "random, random, now"
        assert 0 <= drawn[0][0] < 1
    finally:
        remove_answerer(trace)
        remove_answerer(budget)
        remove_answerer(record)
        remove_answerer(cassette)
    assert outside_calls.get() == ()
    with pytest.raises(ValueError, match="place must be one of decide, watch, answer, make"):
        add_answerer(Passing("odd", "elsewhere"))
