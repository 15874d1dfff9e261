"""Composition end to end: published fragments of an installed distribution (plait-textkit),
local fragments, high-level builders, converters, nested workflows and graph export."""

from __future__ import annotations

import pytest
from plait import Never, WorkflowContext, WorkflowValidationError, executor, get_plugin_manager
from plait_builders import ConcurrentBuilder, WorkflowBuilder, list_fragments
from plait_textkit import SUMMARY_TO_TEXT, Summary

pytestmark = pytest.mark.anyio

TEXT = "  The Quick   Brown Fox. It jumps!  "


@executor(id="enrich")
async def enrich(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(f"{text} Fin.")


@executor(id="publish")
async def publish(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"<{text}>")


def pipeline(*, allow_lossy: bool = True, adapter: object = None) -> WorkflowBuilder:
    """textkit.normalize -> enrich (local) -> textkit.summarize -> publish (local)."""
    builder = WorkflowBuilder("e2e")
    normalize = builder.add_workflow("textkit.normalize")
    summarize = builder.add_workflow("textkit.summarize", prefix="summary")
    builder.connect(normalize, enrich).connect(enrich, summarize)
    builder.connect(summarize, publish, allow_lossy=allow_lossy, adapter=adapter)
    return builder.set_start(normalize.start)


async def test_published_fragments_compose_with_local_executors() -> None:
    workflow = pipeline().build()
    assert (await workflow.run(TEXT)).outputs == ["<the quick brown fox.>"]
    ids = workflow.spec.node_ids
    assert ids[:4] == (
        "textkit.normalize/trim",
        "textkit.normalize/casefold",
        "summary/sentences",
        "summary/digest",
    )
    assert "convert:plait_textkit.Summary->str:textkit.summary_to_text" in ids
    mermaid = workflow.to_mermaid()
    assert 'subgraph s0 ["textkit.normalize"]' in mermaid and "{{" in mermaid
    assert 'label="summary";' in workflow.to_dot()


def test_the_lossy_textkit_converter_needs_permission() -> None:
    with pytest.raises(WorkflowValidationError, match=r"textkit\.summary_to_text"):
        pipeline(allow_lossy=False).build()


async def test_the_published_converter_works_as_an_explicit_adapter() -> None:
    published = get_plugin_manager().registry("converter").get("textkit.summary_to_text")
    assert published.resolve() is SUMMARY_TO_TEXT and not published.lossless  # registered lazily
    workflow = pipeline(allow_lossy=False, adapter=published).build()
    assert "adapt:summary/digest->publish" in workflow.spec.node_ids
    assert not any(n.startswith("convert:") for n in workflow.spec.node_ids)
    assert (await workflow.run(TEXT)).outputs == ["<the quick brown fox.>"]


def test_the_installed_fragments_are_listed_with_their_distribution() -> None:
    infos = {i.name: i for i in list_fragments()}
    assert infos["textkit.summarize"].distribution == "plait-textkit"
    assert infos["textkit.summarize"].output_types == ("plait_textkit.Summary",)
    assert infos["textkit.normalize"].to_dict()["input_types"] == ["str"]


async def test_inline_and_nested_composition_agree() -> None:
    """The seed's example both ways: an analysis fragment inline, and wrapped as an executor."""

    @executor(id="words")
    async def words(text: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(len(text.split()))

    @executor(id="chars")
    async def chars(text: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(len(text))

    @executor(id="report")
    async def report(counts: list[int], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{counts[0]} words, {counts[1]} chars")

    analysis = ConcurrentBuilder("analysis").participants([words, chars])

    inline = WorkflowBuilder()
    normalize = inline.add_workflow("textkit.normalize")
    handle = inline.add_workflow(analysis)
    inline.connect(normalize, handle).connect(handle, report).set_start(normalize.start)

    nested_analysis = analysis.build().as_executor("analysis")
    nested = WorkflowBuilder()
    normalize2 = nested.add_workflow("textkit.normalize")
    nested.connect(normalize2, nested_analysis).connect(nested_analysis, report)
    nested.set_start(normalize2.start)

    inline_result = await inline.build().run(TEXT)
    nested_result = await nested.build().run(TEXT)
    assert inline_result.outputs == nested_result.outputs == ["6 words, 30 chars"]
    assert nested_result.supersteps < inline_result.supersteps  # one boundary, own steps


async def test_a_summary_flows_to_a_consumer_that_takes_it() -> None:
    @executor(id="count")
    async def count(summary: Summary, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(summary.words)

    builder = WorkflowBuilder()
    summarize = builder.add_workflow("textkit.summarize")
    builder.connect(summarize, count).set_start(summarize.start)
    assert (await builder.build().run(TEXT)).outputs == [6]
