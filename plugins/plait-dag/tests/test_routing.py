"""Conditions, loops, parallel joins, sub-workflows, checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plait
import pytest
from dag_helpers import Recorder, text
from plait_dag import DagLoopError

pytestmark = pytest.mark.anyio


def _node(id: str, agent: str | None = None, **fields: Any) -> dict[str, Any]:
    # agents are named apart from nodes: Plait binds an executor passed under a node's id
    # to that node directly (see test_validation)
    node: dict[str, Any] = {"id": id, **fields}
    if agent is not None:
        node["agent_name"] = f"{agent}-agent"
    return node


def _suffixed(agents: dict[str, Any]) -> dict[str, Any]:
    """``agents`` under the names :func:`_node` gives them."""
    return {f"{name}-agent": agent for name, agent in agents.items()}


def _conn(source: str, target: str, **fields: Any) -> dict[str, Any]:
    return {"source_id": source, "target_id": target, **fields}


ROUTER = {
    "nodes": [
        _node("triage", "triage", is_entry=True),
        _node("urgent", "urgent", is_exit=True),
        _node("routine", "routine", is_exit=True),
        _node("fallback", "fallback", is_exit=True),
    ],
    "connections": [
        _conn("triage", "urgent", condition="severity >= 8"),
        _conn("triage", "routine", condition="severity >= 3"),
        _conn("triage", "fallback"),
    ],
}


@pytest.mark.parametrize(
    ("severity", "taken"), [(9, "urgent"), (8, "urgent"), (5, "routine"), (1, "fallback")]
)
async def test_the_first_connection_whose_condition_holds_is_taken(
    severity: int, taken: str
) -> None:
    recorder = Recorder()
    workflow = plait.load(
        text(ROUTER),
        executors=_suffixed(recorder.agents("triage", "urgent", "routine", "fallback")),
    )
    result = await workflow.run({"severity": severity})
    assert recorder.visited == ["triage", taken]
    assert result.outputs == [{"severity": severity}]


async def test_a_condition_sees_the_updates_of_the_node_just_finished() -> None:
    recorder = Recorder()
    agents = recorder.agents("urgent", "routine", "fallback")
    agents["triage"] = recorder.agent("triage", {"severity": 9})
    workflow = plait.load(text(ROUTER), executors=_suffixed(agents))
    await workflow.run({"severity": 0})
    assert recorder.visited == ["triage", "urgent"]


async def test_a_key_named_message_is_an_ordinary_context_key() -> None:
    document = {
        "nodes": [
            _node("a", "a", is_entry=True),
            _node("yes", "yes", is_exit=True),
            _node("no", "no", is_exit=True),
        ],
        "connections": [_conn("a", "yes", condition="message == 'hi'"), _conn("a", "no")],
    }
    recorder = Recorder()
    workflow = plait.load(text(document), executors=_suffixed(recorder.agents("a", "yes", "no")))
    await workflow.run({"message": "hi"})
    assert recorder.visited == ["a", "yes"]


async def test_no_connection_holding_ends_the_route_as_seed_001_does() -> None:
    document = {
        "nodes": [_node("a", "a", is_entry=True), _node("b", "b", is_exit=True)],
        "connections": [_conn("a", "b", condition="go")],
    }
    recorder = Recorder()
    workflow = plait.load(text(document), executors=_suffixed(recorder.agents("a", "b")))
    result = await workflow.run({"go": False})
    assert recorder.visited == ["a"]
    assert result.outputs == [{"go": False}]


# -- loops -----------------------------------------------------------------------------------


def _loop(max_iterations: int) -> dict[str, Any]:
    return {
        "nodes": [
            _node("plan", "plan", is_entry=True),
            _node("draft", "draft"),
            _node("review", "review"),
            _node("publish", "publish", is_exit=True),
        ],
        "connections": [
            _conn("plan", "draft"),
            _conn("draft", "review"),
            _conn(
                "review",
                "draft",
                condition="!approved",
                max_iterations=max_iterations,
                context_passed=["drafts", "notes"],
            ),
            _conn("review", "publish"),
        ],
    }


def _drafting(approve_at: int) -> tuple[Recorder, dict[str, Any]]:
    recorder = Recorder()
    agents: dict[str, Any] = recorder.agents("plan", "publish")

    async def draft(ctx: dict[str, Any]) -> dict[str, Any]:
        recorder.calls.append(("draft", ctx))
        return {"drafts": ctx.get("drafts", 0) + 1}

    async def review(ctx: dict[str, Any]) -> dict[str, Any]:
        recorder.calls.append(("review", ctx))
        return {"approved": ctx["drafts"] >= approve_at, "notes": "more"}

    agents.update(draft=draft, review=review)
    return recorder, agents


async def test_a_declared_loop_runs_until_its_condition_fails() -> None:
    recorder, agents = _drafting(approve_at=3)
    workflow = plait.load(text(_loop(5)), executors=_suffixed(agents))
    result = await workflow.run({"topic": "tides"})
    assert recorder.visited == ["plan", *["draft", "review"] * 3, "publish"]
    assert result.outputs == [{"topic": "tides", "drafts": 3, "approved": True, "notes": "more"}]
    # going back, the loop's connection passes only its keys
    second_draft = [ctx for name, ctx in recorder.calls if name == "draft"][1]
    assert second_draft == {"drafts": 1, "notes": "more"}


async def test_a_loop_past_max_iterations_is_an_error_naming_the_loop() -> None:
    recorder, agents = _drafting(approve_at=100)
    workflow = plait.load(text(_loop(2)), executors=_suffixed(agents))
    with pytest.raises(DagLoopError) as caught:
        await workflow.run({})
    message = str(caught.value)
    assert "loop 'review' -> 'draft' (/connections/2)" in message
    assert "max_iterations=2" in message
    assert caught.value.executor_id == "review"
    assert recorder.visited.count("draft") == 3  # the first pass and two iterations


async def test_a_loop_entered_again_from_outside_counts_afresh() -> None:
    # outer: a -> inner loop (b <-> c, at most 1 iteration) -> d -> back to a (at most 2)
    document = {
        "nodes": [
            _node("a", "a", is_entry=True),
            _node("b", "b"),
            _node("c", "c"),
            _node("d", "d", is_exit=True),
        ],
        "connections": [
            _conn("a", "b"),
            _conn("b", "c"),
            _conn("c", "b", condition="inner < 2", max_iterations=1),
            _conn("c", "d"),
            _conn("d", "a", condition="outer < 3", max_iterations=2),
        ],
    }
    recorder = Recorder()
    agents: dict[str, Any] = recorder.agents("b", "d")

    async def a(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"outer": ctx.get("outer", 0) + 1, "inner": 0}

    async def c(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"inner": ctx["inner"] + 1}

    agents.update(a=a, c=c)
    workflow = plait.load(text(document), executors=_suffixed(agents))
    result = await workflow.run({})
    assert result.outputs == [{"outer": 3, "inner": 2}]
    assert recorder.visited == ["b", "b", "d"] * 3


# -- parallel branches and joins --------------------------------------------------------------


def _diamond(strategy: str) -> dict[str, Any]:
    return {
        "nodes": [
            _node("start", "start", is_entry=True),
            _node("research", "research"),
            _node("analyze", "analyze"),
            _node("check", "check"),
            _node("summarize", "summarize", join=strategy, is_exit=True),
        ],
        "connections": [
            _conn("start", "research", parallel=True),
            _conn("start", "analyze", parallel=True, context_passed=["topic"]),
            _conn("research", "summarize"),
            _conn("analyze", "check"),
            _conn("check", "summarize"),
        ],
    }


def _branch_agents() -> tuple[Recorder, dict[str, Any]]:
    recorder = Recorder()
    agents = {
        "start": recorder.agent("start", {"topic": "tides"}),
        "research": recorder.agent("research", {"facts": ["moon"]}),
        "analyze": recorder.agent("analyze", {"analysis": "periodic"}),
        "check": recorder.agent("check", {"checked": True}),
        "summarize": recorder.agent("summarize", {"summary": "done"}),
    }
    return recorder, agents


async def test_a_keyed_join_merges_the_branches_updates_by_branch() -> None:
    recorder, agents = _branch_agents()
    workflow = plait.load(text(_diamond("keyed")), executors=_suffixed(agents))
    result = await workflow.run({"user": "ada"})
    branches = {
        "outputs": {
            "research": {"facts": ["moon"]},
            "check": {"analysis": "periodic", "checked": True},
        },
        "order": ["research", "check"],
    }
    summarize_saw = dict(recorder.calls)["summarize"]
    assert summarize_saw == {"user": "ada", "topic": "tides", "branches": branches}
    assert result.outputs == [{**summarize_saw, "summary": "done"}]
    assert dict(recorder.calls)["analyze"] == {"topic": "tides"}
    assert recorder.visited.count("summarize") == 1


async def test_a_list_join_merges_in_connection_order() -> None:
    _, agents = _branch_agents()
    workflow = plait.load(text(_diamond("list")), executors=_suffixed(agents))
    result = await workflow.run({})
    assert result.outputs[0]["branches"] == [
        {"facts": ["moon"]},
        {"analysis": "periodic", "checked": True},
    ]


async def test_a_branch_whose_condition_fails_is_left_out_of_the_join() -> None:
    document = _diamond("keyed")
    document["connections"][0]["condition"] = "deep"
    recorder, agents = _branch_agents()
    workflow = plait.load(text(document), executors=_suffixed(agents))
    result = await workflow.run({"deep": False})
    assert "research" not in recorder.visited
    assert result.outputs[0]["branches"]["order"] == ["check"]


# -- sub-workflows -------------------------------------------------------------------------


async def test_a_node_may_run_another_dag_file(tmp_path: Path) -> None:
    inner = {
        "nodes": [_node("x", "double", is_entry=True), _node("y", "label", is_exit=True)],
        "connections": [_conn("x", "y")],
    }
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.json").write_text(text(inner))
    outer = {
        "nodes": [
            _node("first", "first", is_entry=True),
            _node("nested", workflow="sub/inner.json", skip_condition="skip_inner"),
            _node("last", "last", is_exit=True),
        ],
        "connections": [
            _conn("first", "nested", context_passed=["n"]),
            _conn("nested", "last"),
        ],
    }
    path = tmp_path / "outer.json"
    path.write_text(text(outer))

    async def double(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"n": ctx["n"] * 2}

    async def label(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"label": f"n={ctx['n']}"}

    recorder = Recorder()
    agents = {**recorder.agents("first", "last"), "double": double, "label": label}
    workflow = plait.load(path, executors=_suffixed(agents))
    result = await workflow.run({"n": 21, "other": "kept"})
    assert result.outputs == [{"n": 42, "other": "kept", "label": "n=42"}]
    # the spec holds the inner document: it rebuilds from JSON alone
    again = plait.Workflow.from_spec(
        plait.WorkflowSpec.from_json(workflow.spec.to_json()),
        _suffixed(agents),
        allow_imports=False,
    )
    assert (await again.run({"n": 1, "skip_inner": True})).outputs == [{"n": 1, "skip_inner": True}]


async def test_a_node_may_run_a_published_fragment(register_plugin: Any) -> None:
    async def shout(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"text": ctx["text"].upper()}

    inner = {"nodes": [_node("s", "shout", is_entry=True, is_exit=True)], "connections": []}
    shouting = _suffixed({"shout": shout})

    class Fragment:
        def build(self) -> plait.Workflow:
            return plait.load(text(inner), executors=shouting)

    class Plugin:
        @plait.hookimpl
        def plait_register_fragments(self, register: Any) -> None:
            register("test.shout", Fragment())

    register_plugin(Plugin(), "test-fragments")
    outer = {
        "nodes": [
            {"id": "a", "agent_name": "test.shout", "is_entry": True},
            _node("b", workflow="test.shout", is_exit=True),
        ],
        "connections": [_conn("a", "b")],
    }
    workflow = plait.load(text(outer))
    assert (await workflow.run({"text": "hi"})).outputs == [{"text": "HI"}]


# -- checkpoints -----------------------------------------------------------------------------


async def test_a_run_resumes_from_a_checkpoint_with_its_context(tmp_path: Path) -> None:
    # the check node fails once, after the research branch already waits at the join: a
    # resumed run gets the forks, the join's buffer and the context back from the store
    recorder, agents = _branch_agents()
    failures = ["once"]

    async def check(ctx: dict[str, Any]) -> dict[str, Any]:
        if failures:
            raise RuntimeError(failures.pop())
        recorder.calls.append(("check", ctx))
        return {"checked": True}

    agents["check"] = check
    workflow = plait.load(text(_diamond("keyed")), executors=_suffixed(agents))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    failed = await workflow.run({"user": "ada"}, checkpoint=store, raise_on_failure=False)
    assert not failed.ok
    assert sorted(recorder.visited) == ["analyze", "research", "start"]
    again = plait.load(text(_diamond("keyed")), executors=_suffixed(agents))
    resumed = await again.resume(failed.run_id, store)
    assert recorder.visited[3:] == ["check", "summarize"]
    (output,) = resumed.outputs
    assert output["branches"]["outputs"] == {
        "research": {"facts": ["moon"]},
        "check": {"analysis": "periodic", "checked": True},
    }
    assert output["user"] == "ada" and output["summary"] == "done"


async def test_a_chain_of_dag_files_builds_each_file_once(tmp_path: Path) -> None:
    # each level used to be built three times per level above it (the dag.node and
    # workflow kinds' check and create each rebuilt it): 13 files took more than a minute
    from plait.rebuild import load_scope

    files = 13
    (tmp_path / "f12.json").write_text(
        text({"nodes": [_node("x", "double", is_entry=True, is_exit=True)], "connections": []})
    )
    for i in range(files - 1):
        level = {
            "nodes": [_node("n", workflow=f"f{i + 1}.json", is_entry=True, is_exit=True)],
            "connections": [],
        }
        (tmp_path / f"f{i}.json").write_text(text(level))

    async def double(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"n": ctx["n"] * 2}

    with load_scope() as scope:
        workflow = plait.load(tmp_path / "f0.json", executors=_suffixed({"double": double}))
    assert scope.builds == files  # one build per file, whatever its depth
    assert (await workflow.run({"n": 4})).outputs == [{"n": 8}]
