"""plait-testing's side: ``plait_testing.cassette`` records a plain test's model calls once
and answers them after; the ``plait_replay`` fixture and marker pass on an unchanged run,
fail with the first-divergence report on a changed one, and ``--plait-record`` records
the bundle again."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import llm
import pytest
from plait_llm import AgentError, AgentExecutor
from plait_replay import RecordedCallError, ReplayMissError, export_bundle
from plait_testing import cassette
from replay_helpers import Models

pytest_plugins = ["pytester"]


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_RECORD", raising=False)
    monkeypatch.delenv("PLAIT_LIVE", raising=False)
    plugin = Models()
    llm.plugins.pm.register(plugin, name="plait-replay-cassette-models")
    try:
        yield plugin
    finally:
        llm.plugins.pm.unregister(plugin)


def _ask(prompt: str) -> str:
    agent = AgentExecutor("writer", llm.get_model("replay-test-writer"), system="Be brief.")
    return str(anyio.run(agent.ask, prompt))


def test_a_cassette_records_once_and_answers_after(models: Models, tmp_path: Path) -> None:
    with cassette("brief", directory=tmp_path):
        assert _ask("hello") == "noted: hello"
    assert models.writer.prompts == ["hello"]
    saved = json.loads((tmp_path / "brief.json").read_text())
    (interaction,) = saved["interactions"]
    assert interaction["kind"] == "llm.prompt"
    assert interaction["request"]["prompt"] == "hello"
    assert interaction["request"]["system"] == "Be brief."
    models.writer.answer = "changed"
    with cassette("brief", directory=tmp_path):
        assert _ask("hello") == "noted: hello", "answered from the cassette"
    assert models.writer.prompts == ["hello"], "the model was not called again"
    missing = pytest.raises(AgentError, match="has no answer to this llm.prompt call")
    with missing as failed, cassette("brief", directory=tmp_path):
        _ask("hello there")
    miss = failed.value.__cause__  # the agent names itself, the miss is the cause
    assert isinstance(miss, ReplayMissError)
    assert '-  "prompt": "hello",' in miss.diff
    assert '+  "prompt": "hello there",' in miss.diff
    with cassette("brief", directory=tmp_path, mode="all"):
        assert _ask("hello") == "changed: hello"
    saved = json.loads((tmp_path / "brief.json").read_text())
    assert saved["interactions"][0]["response"]["text"] == "changed: hello"


def _known(model_id: str) -> bool:
    return any(m.model.model_id == model_id for m in llm.get_models_with_aliases())


def test_a_cassette_stands_in_for_a_model_that_is_not_installed(
    models: Models, tmp_path: Path
) -> None:
    with cassette("absent", directory=tmp_path):
        assert _ask("hello") == "noted: hello"
    llm.plugins.pm.unregister(models)  # the model's plugin is gone (a CI without weights)
    try:
        assert not _known("replay-test-writer")
        with cassette("absent", directory=tmp_path) as played:
            assert played.stand_ins == ["replay-test-writer"]
            assert _ask("hello") == "noted: hello", "answered for the stand-in"
            with pytest.raises(AgentError, match="has no answer") as failed:
                _ask("hello there")  # the cassette's miss, before the stand-in is asked
            assert isinstance(failed.value.__cause__, ReplayMissError)
        assert played.answered == 1
        assert not _known("replay-test-writer"), "the stand-in ends with the block"
    finally:
        llm.plugins.pm.register(models, name="plait-replay-cassette-models")
    assert models.writer.prompts == ["hello"]
    with cassette("absent", directory=tmp_path) as played:  # installed: no stand-in
        assert played.stand_ins == []


def test_only_the_calls_a_cassette_takes_are_recorded_and_answered(
    models: Models, tmp_path: Path
) -> None:
    def writer_only(kind: str, request: Mapping[str, Any]) -> bool:
        return request.get("model") == "replay-test-writer"

    def ask_both() -> tuple[str, str]:
        critic = AgentExecutor("critic", llm.get_model("replay-test-critic"))
        return _ask("draft"), str(anyio.run(critic.ask, "review"))

    with cassette("some", directory=tmp_path, only=writer_only):
        assert ask_both() == ("noted: draft", "noted: review")
    saved = json.loads((tmp_path / "some.json").read_text())
    assert [i["request"]["model"] for i in saved["interactions"]] == ["replay-test-writer"]
    models.writer.answer = models.critic.answer = "now"
    with cassette("some", directory=tmp_path, only=writer_only):
        assert ask_both() == ("noted: draft", "now: review")  # the critic went out
    assert models.writer.prompts == ["draft"]
    assert models.critic.prompts == ["review", "review"]


def test_a_call_that_failed_fails_again_from_the_cassette(models: Models, tmp_path: Path) -> None:
    def refuse(prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        raise ValueError("Requested tokens (600) exceed context window of 512")

    models.writer.execute = refuse  # type: ignore[method-assign]
    # a block that ends well is written: the error is caught inside it
    with (
        cassette("refused", directory=tmp_path),
        pytest.raises(AgentError, match="exceed context window"),
    ):
        _ask("a very long prompt")
    (saved,) = json.loads((tmp_path / "refused.json").read_text())["interactions"]
    assert saved["error"] == {
        "type": "ValueError",
        "message": "Requested tokens (600) exceed context window of 512",
    }
    assert "response" not in saved
    del models.writer.execute  # the model would answer now: the cassette does not ask it
    with (
        pytest.raises(AgentError, match="exceed context window") as failed,
        cassette("refused", directory=tmp_path),
    ):
        _ask("a very long prompt")
    cause = failed.value.__cause__
    assert isinstance(cause, RecordedCallError)
    assert (cause.error_type, cause.error) == (
        "ValueError",
        "Requested tokens (600) exceed context window of 512",
    )
    assert models.writer.prompts == []


def test_a_live_cassette_stands_aside(
    models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cassette("lively", directory=tmp_path):
        _ask("hello")
    before = (tmp_path / "lively.json").read_text()
    models.writer.answer = "live"
    monkeypatch.setenv("PLAIT_LIVE", "1")  # what pytest --plait-live sets
    with cassette("lively", directory=tmp_path) as lively:
        assert lively.mode == "live"
        assert _ask("hello") == "live: hello"
        assert _ask("something new") == "live: something new"
    assert (tmp_path / "lively.json").read_text() == before, "a live run records nothing"
    assert models.writer.prompts == ["hello", "hello", "something new"]


LIVE_TESTS = """
import os

import pytest


@pytest.mark.plait_live(only=True)
def test_the_installed_model():
    assert os.environ["PLAIT_LIVE"] == "1"


@pytest.mark.plait_live
def test_from_a_cassette():
    assert os.environ.get("PLAIT_LIVE") == ("1" if LIVE else None)
"""


def test_plait_live_runs_the_marked_tests_live(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLAIT_LIVE", raising=False)
    pytester.makepyfile(test_live="LIVE = False\n" + LIVE_TESTS)
    replayed = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    replayed.assert_outcomes(passed=1, deselected=1)  # (the live-only test: never skipped)
    pytester.makepyfile(test_live="LIVE = True\n" + LIVE_TESTS)
    live = pytester.runpytest_inprocess("-q", "-p", "no:randomly", "--plait-live")
    live.assert_outcomes(passed=2)
    assert "PLAIT_LIVE" not in os.environ, "the session's setting ends with it"
    selected = pytester.runpytest_inprocess("-q", "-p", "no:randomly", "-m", "not plait_live")
    selected.assert_outcomes(deselected=2)


FLOWS = """
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder


def build(suffix):
    @executor(id="roll")
    async def roll(name: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"{name} {ctx.random():.6f}")

    @executor(id="say")
    async def say(text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(text + suffix)

    return WorkflowBuilder().set_start(roll).add_edge(roll, say).build()


def same():
    return build("")


def changed():
    return build("!")
"""

TESTS = """
import pytest


@pytest.mark.plait_replay("run.plait", "flows_under_test:same")
def test_marked_unchanged(plait_replay):
    assert plait_replay.report.equal


def test_fixture_changed(plait_replay):
    plait_replay.check("run.plait", "flows_under_test:changed")
"""


def test_the_plait_replay_fixture_fails_with_the_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(flows_under_test=FLOWS, test_bundle=TESTS)
    pytester.syspathinsert()
    import flows_under_test  # type: ignore[import-not-found]

    async def record() -> None:
        result = await flows_under_test.same().run("ada", checkpoint="memory://pt", record=True)
        await export_bundle("memory://pt", result.run_id, pytester.path / "run.plait")

    anyio.run(record)
    before = (pytester.path / "run.plait").read_bytes()
    result = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*diverged at superstep 2, executor 'say'*",
            "*the workflow's outputs differ*",
        ]
    )
    assert (pytester.path / "run.plait").read_bytes() == before
    rerecorded = pytester.runpytest_inprocess("-q", "-p", "no:randomly", "--plait-record")
    rerecorded.assert_outcomes(passed=2)
    assert (pytester.path / "run.plait").read_bytes() != before
    # the bundle now holds the changed workflow's run: the changed test passes, the
    # unchanged one fails (as its fixture is set up: a marked test is checked there)
    again = pytester.runpytest_inprocess("-q", "-p", "no:randomly")
    again.assert_outcomes(passed=1, errors=1)
    again.stdout.fnmatch_lines(["*diverged at superstep 2, executor 'say'*"])
