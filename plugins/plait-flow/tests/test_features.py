"""Beyond the seed: conditions, error edges, named flows and published fragments."""

from __future__ import annotations

from typing import Any

import plait
import plait_documents
import plait_executors
import plait_expr
import plait_flow
import plait_merge
import plait_routing
import pytest
from flow_agents import AGENTS
from plait import InvocationFailure, WorkflowContext, executor
from plait_builders import Fragment, WorkflowBuilder

pytestmark = pytest.mark.anyio


def load(flow: str, executors: dict[str, Any] | None = None, **options: Any) -> plait.Workflow:
    return plait.load(flow, format="flow", executors=executors or AGENTS, **options)


# -- conditions ------------------------------------------------------------------------------


async def test_a_condition_routes_to_one_branch_then_joins() -> None:
    workflow = load("researcher -> (size(message) > 14 ? critic : editor) -> writer")
    long = await workflow.run("a long question")
    short = await workflow.run("q")
    assert long.outputs == ["article[critique(research(a long question))]"]
    assert short.outputs == ["article[edit(research(q))]"]
    switch = next(g for g in workflow.spec.edge_groups if g.router == "switch")
    assert switch.options == {
        "case_targets": ["critic"],
        "default": "editor",
        "cases": [{"expr": "size(message) > 14"}],
    }


def test_conditions_see_the_keys_of_a_mapping_message() -> None:
    async def score(text: str) -> dict[str, Any]:
        return {"score": len(text), "text": text}

    async def good(msg: dict[str, Any]) -> str:
        return "good:" + str(msg["text"])

    async def bad(msg: dict[str, Any]) -> str:
        return "bad:" + str(msg["text"])

    workflow = load(
        "score -> (score >= 3 ? good : bad)", {"score": score, "good": good, "bad": bad}
    )
    assert workflow.run_sync("abcd").outputs == ["good:abcd"]
    assert workflow.run_sync("ab").outputs == ["bad:ab"]


def test_condition_branches_may_be_chains_blocks_and_conditions() -> None:
    flow = (
        "(message == 'a' ? [analyzer, summarizer] by concat"
        " : (message == 'b' ? critic -> editor : writer))"
    )
    workflow = load(flow)
    assert workflow.run_sync("a").outputs == ["analysis(a) summary(a)"]
    assert workflow.run_sync("b").outputs == ["edit(critique(b))"]
    assert workflow.run_sync("c").outputs == ["article[c]"]


def test_a_condition_inside_a_parallel_branch() -> None:
    flow = "[(message == 'x' ? critic : editor), writer] by concat"
    assert load(flow).run_sync("x").outputs == ["critique(x) article[x]"]
    assert load(flow).run_sync("y").outputs == ["edit(y) article[y]"]


# -- error edges -----------------------------------------------------------------------------


async def flaky(text: str) -> str:
    if "fail" in text:
        raise RuntimeError(f"cannot handle {text!r}")
    return f"ok({text})"


async def fallback(failure: InvocationFailure) -> str:
    return f"fallback({failure.executor_id}: {failure.error})"


def test_an_error_edge_takes_the_failure_and_the_run_goes_on() -> None:
    agents = {**AGENTS, "flaky": flaky, "fallback": fallback}
    workflow = load("researcher -> flaky -error-> fallback -> writer", agents)
    assert workflow.run_sync("fine").outputs == ["article[ok(research(fine))]"]
    failed = workflow.run_sync("fail")
    assert failed.outputs == ["article[fallback(flaky: cannot handle 'research(fail)')]"]
    error = next(g for g in workflow.spec.edge_groups if g.router == "error")
    assert (error.id, error.sources, error.targets) == (
        "error:flaky->fallback",
        ("flaky",),
        ("fallback",),
    )


def test_without_an_error_edge_the_failure_fails_the_run() -> None:
    workflow = load("researcher -> flaky -> writer", {**AGENTS, "flaky": flaky})
    with pytest.raises(plait.errors.WorkflowRunError, match="flaky"):
        workflow.run_sync("fail")


def test_an_error_edge_from_a_parallel_block_covers_each_branch() -> None:
    agents = {**AGENTS, "flaky": flaky, "fallback": fallback}
    workflow = load("[flaky, analyzer] -error-> fallback", agents)
    errors = [g for g in workflow.spec.edge_groups if g.router == "error"]
    assert [g.sources for g in errors] == [("flaky",), ("analyzer",)]
    assert workflow.run_sync("fail").outputs == ["fallback(flaky: cannot handle 'fail')"]


# -- named flows and fragments ---------------------------------------------------------------


def test_a_named_flow_is_inlined_under_a_prefix_at_each_use() -> None:
    text = """
    @review = critic -> editor
    researcher -> @review -> writer -> @review
    """
    workflow = load(text)
    ids = [n.id for n in workflow.spec.nodes]
    assert ids == [
        "researcher",
        "review/critic",
        "review/editor",
        "writer",
        "review#2/critic",
        "review#2/editor",
        "flow:output",
    ]
    assert workflow.run_sync("x").outputs == [
        "edit(critique(article[edit(critique(research(x)))]))"
    ]


def test_named_flows_may_use_earlier_ones() -> None:
    text = "@inner = critic; @outer = [@inner, editor] by concat; @outer -> writer"
    workflow = load(text)
    assert "outer/inner/critic" in workflow.spec.node_ids
    assert workflow.run_sync("x").outputs == ["article[critique(x) edit(x)]"]


def _fragment_plugins(register_plugin: Any) -> None:
    @executor(id="shout")
    async def shout(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(text.upper())

    class Fragments:
        @plait.hookimpl
        def plait_register_fragments(self, register: Any) -> None:
            register(
                "demo.shout",
                Fragment(
                    "demo.shout",
                    lambda: WorkflowBuilder("shout").set_start(shout).add_executor(shout),
                    version="1",
                ),
            )

    for module, name in [
        (plait_documents, "documents"),
        (plait_flow, "flow"),
        (plait_routing, "routing"),
        (plait_merge, "merge"),
        (plait_expr, "expr"),
        (plait_executors, "executors"),
    ]:
        register_plugin(module, name)
    register_plugin(Fragments(), "fragments")


def test_a_published_fragment_runs_as_a_nested_workflow(
    plait_plugin_manager: Any, register_plugin: Any
) -> None:
    _fragment_plugins(register_plugin)
    for text in ("researcher -> @demo.shout -> writer", "researcher -> demo.shout -> writer"):
        workflow = plait.load(
            text, format="flow", executors=AGENTS, plugin_manager=plait_plugin_manager
        )
        node = workflow.spec.node("demo.shout")
        assert (node.kind, node.config) == ("workflow", {"fragment": "demo.shout"})
        assert workflow.run_sync("x").outputs == ["article[RESEARCH(X)]"]


def test_an_unknown_sub_flow_lists_named_flows_and_fragments(
    plait_plugin_manager: Any, register_plugin: Any
) -> None:
    _fragment_plugins(register_plugin)
    with pytest.raises(plait.errors.LoadError) as info:
        plait.load(
            "@review = critic\nresearcher -> @reveiw",
            format="flow",
            executors=AGENTS,
            plugin_manager=plait_plugin_manager,
        )
    (problem,) = info.value.problems
    assert (getattr(problem, "line", None), getattr(problem, "column", None)) == (2, 16)
    assert "did you mean 'review'?" in str(problem)
    assert "named flows: review; fragments: demo.shout" in str(problem)


def test_the_seeds_workflow_call_spells_a_named_flow() -> None:
    text = "@review = critic -> editor\nresearcher -> workflow(review) -> writer"
    spelled = load(text)
    at = load("@review = critic -> editor\nresearcher -> @review -> writer")
    assert spelled.spec == at.spec
    ids = [n.id for n in spelled.spec.nodes]
    assert ids[:3] == ["researcher", "review/critic", "review/editor"]
    assert spelled.run_sync("x").outputs == ["article[edit(critique(research(x)))]"]


def test_the_seeds_workflow_call_runs_a_published_fragment(
    plait_plugin_manager: Any, register_plugin: Any
) -> None:
    _fragment_plugins(register_plugin)
    workflow = plait.load(
        "researcher -> workflow(demo.shout) -> writer",
        format="flow",
        executors=AGENTS,
        plugin_manager=plait_plugin_manager,
    )
    node = workflow.spec.node("demo.shout")
    assert (node.kind, node.config) == ("workflow", {"fragment": "demo.shout"})
    assert workflow.run_sync("x").outputs == ["article[RESEARCH(X)]"]


def test_a_workflow_call_of_nothing_known_names_it_as_written() -> None:
    with pytest.raises(plait_flow.InvalidFlowError) as info:
        load("@review = critic\nresearcher -> workflow(reveiw)")
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (2, 24)
    assert "no named flow or published fragment 'workflow(reveiw)'" in problem.reason
    assert "did you mean 'review'?" in problem.reason


def test_another_call_than_workflow_is_refused_where_it_is_written() -> None:
    with pytest.raises(plait_flow.InvalidFlowError) as info:
        load("@review = critic\nresearcher -> flow(review) -> writer")
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (2, 15)
    assert "unknown call 'flow(…)'" in problem.reason and "'workflow(name)'" in problem.reason


def test_a_named_flow_that_uses_itself_is_an_error() -> None:
    with pytest.raises(plait.errors.LoadError, match="'@loop' uses itself"):
        load("@loop = critic -> @loop\nresearcher -> @loop")
