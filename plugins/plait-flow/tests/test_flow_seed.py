"""Seed 000's flow DSL: its walkthrough, merge strategies, nesting, whitespace, comments,
repeated agents, and the Python API."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from flow_agents import AGENTS, analyzer, researcher, summarizer, writer
from plait import WorkflowContext, executor
from plait_flow import Flow

pytestmark = pytest.mark.anyio


def run(flow: str, message: str = "in", **options: Any) -> list[Any]:
    workflow = plait.load(flow, format="flow", executors=AGENTS, **options)
    return list(workflow.run_sync(message).outputs)


async def test_seed_walkthrough_runs_verbatim() -> None:
    workflow = Flow(
        executors=[researcher, analyzer, summarizer, writer],
        flow="researcher -> [analyzer, summarizer] -> writer",
        merge="concat_newline",
    )
    assert isinstance(workflow, plait.Workflow)
    result = await workflow.run("Research AI trends")
    research = "research(Research AI trends)"
    # 1. the researcher runs on the input; 2. both parallel agents get its output;
    # 3. their outputs are merged with a blank line; 4. the writer gets the merge;
    # 5. the writer's output is the result
    assert result.outputs == [f"article[analysis({research})\n\nsummary({research})]"]


def test_plait_load_gives_the_same_workflow_as_flow() -> None:
    text = "researcher -> [analyzer, summarizer] -> writer"
    loaded = plait.load(text, format="flow", executors=AGENTS, merge="concat_newline")
    made = Flow(executors=AGENTS, flow=text, merge="concat_newline")
    assert loaded.signature() == made.signature()
    assert loaded.spec.to_dict() == made.spec.to_dict()


@pytest.mark.parametrize(
    ("merge", "expected"),
    [
        ("concat", "analysis(in) summary(in)"),
        ("concat_newline", "analysis(in)\n\nsummary(in)"),
        ("first", "analysis(in)"),
        ("last", "summary(in)"),
        ("list", ["analysis(in)", "summary(in)"]),
    ],
)
def test_a_flow_ending_in_a_parallel_block_outputs_the_merged_value(
    merge: str, expected: Any
) -> None:
    assert run("[analyzer, summarizer]", merge=merge) == [expected]


def test_per_block_merge_overrides_the_flow_merge() -> None:
    flow = "[analyzer, summarizer] by first -> [critic, editor]"
    assert run(flow, merge="concat") == ["critique(analysis(in)) edit(analysis(in))"]


def test_merge_options_in_the_text_and_from_the_caller() -> None:
    assert run("[analyzer, summarizer] by concat(separator=' | ')") == [
        "analysis(in) | summary(in)"
    ]
    assert run("[analyzer, summarizer]", merge="concat", merge_options={"separator": "+"}) == [
        "analysis(in)+summary(in)"
    ]


def test_any_registered_merge_strategy_works_by_name(
    plait_plugin_manager: Any, register_plugin: Any
) -> None:
    import plait_documents
    import plait_expr
    import plait_flow
    import plait_merge
    import plait_routing

    class Shout:
        def merge(self, values: Any, sources: Any) -> str:
            return "!".join(v.upper() for v in values)

        def output_type(self, input_type: Any) -> Any:
            return str

    class Strategies:
        @plait.hookimpl
        def plait_register_merge_strategies(self, register: Any) -> None:
            register("shout", Shout())

    for module, name in [
        (plait_documents, "documents"),
        (plait_flow, "flow"),
        (plait_routing, "routing"),
        (plait_merge, "merge"),
        (plait_expr, "expr"),
    ]:
        register_plugin(module, name)
    register_plugin(Strategies(), "shout")
    workflow = plait.load(
        "[analyzer, summarizer] by shout",
        format="flow",
        executors=AGENTS,
        plugin_manager=plait_plugin_manager,
    )
    assert workflow.run_sync("x").outputs == ["ANALYSIS(X)!SUMMARY(X)"]


def test_merge_order_is_declaration_order_whichever_finishes_first() -> None:
    import anyio

    async def slow(text: str) -> str:
        await anyio.sleep(0.05)
        return "slow"

    async def fast(text: str) -> str:
        return "fast"

    workflow = Flow(executors={"slow": slow, "fast": fast}, flow="[slow, fast]", merge="concat")
    assert workflow.run_sync("x").outputs == ["slow fast"]


def test_nesting_chains_inside_parallel_blocks() -> None:
    flow = "researcher -> [analyzer -> critic, summarizer] -> writer"
    assert run(flow, merge="concat") == [
        "article[critique(analysis(research(in))) summary(research(in))]"
    ]


def test_nested_parallel_blocks_merge_inside_out() -> None:
    flow = "[[analyzer, summarizer] by concat, critic] by concat_newline"
    assert run(flow) == ["analysis(in) summary(in)\n\ncritique(in)"]


def test_a_parallel_block_may_open_and_close_a_flow() -> None:
    assert run("[analyzer, summarizer] -> writer", merge="concat") == [
        "article[analysis(in) summary(in)]"
    ]
    assert run("writer -> [analyzer, summarizer]", merge="concat") == [
        "analysis(article[in]) summary(article[in])"
    ]


def test_consecutive_parallel_blocks() -> None:
    flow = "[analyzer, summarizer] -> [critic, editor]"
    merged = "analysis(in) summary(in)"
    assert run(flow, merge="concat") == [f"critique({merged}) edit({merged})"]


def test_whitespace_is_insignificant() -> None:
    spaced = plait.load("researcher -> [ analyzer , summarizer ] -> writer", **_opts())
    tight = plait.load("researcher->[analyzer,summarizer]->writer", **_opts())
    lines = plait.load("researcher\n  ->\t[analyzer,\n   summarizer]\n-> writer\n", **_opts())
    assert spaced.signature() == tight.signature() == lines.signature()


def test_comments_and_several_lines() -> None:
    text = """
    # research first
    researcher ->   # then two views
      [analyzer,    # the details
       summarizer]  # the gist
      -> writer
    """
    assert plait.load(text, **_opts()).signature() == (
        plait.load("researcher -> [analyzer, summarizer] -> writer", **_opts()).signature()
    )


def test_the_same_agent_at_several_places_gets_deterministic_ids() -> None:
    workflow = plait.load("writer -> critic -> writer -> [writer, critic]", **_opts())
    ids = [node.id for node in workflow.spec.nodes]
    assert ids == ["writer", "critic", "writer#2", "writer#3", "critic#2", "flow:output"]
    assert [n.uses for n in workflow.spec.nodes[:5]] == [
        "writer",
        "critic",
        "writer",
        "writer",
        "critic",
    ]
    again = plait.load("writer -> critic -> writer -> [writer, critic]", **_opts())
    assert again.spec.to_dict() == workflow.spec.to_dict()
    assert workflow.run_sync("x").outputs == [
        "article[article[critique(article[x])]]\n\ncritique(article[critique(article[x])])"
    ]


def test_plait_executors_work_as_agents() -> None:
    @executor(id="shouter")
    async def shouter(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())
        await ctx.send_message(text.lower())

    workflow = Flow(executors=[shouter, writer], flow="shouter -> writer")
    assert workflow.run_sync("Hi").outputs == ["article[HI]", "article[hi]"]


def test_flow_from_a_file_by_suffix(tmp_path: Any) -> None:
    path = tmp_path / "pipeline.flow"
    path.write_text("researcher -> writer\n", encoding="utf-8")
    workflow = plait.load(path, executors=AGENTS)
    assert workflow.run_sync("f").outputs == ["article[research(f)]"]


def test_detect_picks_flow_text_without_a_format() -> None:
    workflow = plait.load("researcher -> writer", executors=AGENTS)
    assert workflow.run_sync("d").outputs == ["article[research(d)]"]


def _opts() -> dict[str, Any]:
    return {"format": "flow", "executors": AGENTS}
