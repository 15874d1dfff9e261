"""plait-testing's side: ``plait_testing.cassette`` records a plain test's model calls once
and answers them after; the ``plait_replay`` fixture and marker pass on an unchanged run,
fail with the first-divergence report on a changed one, and ``--plait-record`` records
the bundle again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import llm
import pytest
from plait_llm import AgentError, AgentExecutor
from plait_replay import ReplayMissError, export_bundle
from plait_testing import cassette
from replay_helpers import Models

pytest_plugins = ["pytester"]


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_RECORD", raising=False)
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
