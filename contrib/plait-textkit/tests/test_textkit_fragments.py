"""plait-textkit's own tests: its fragments, its converter, its registrations."""

from __future__ import annotations

import plait_textkit
import pytest
from plait import Never, WorkflowContext, executor
from plait.spi import PluginManager
from plait_builders import Fragment, WorkflowBuilder
from plait_textkit import NORMALIZE, SUMMARIZE, SUMMARY_TO_TEXT, Summary, summary_to_text

pytestmark = pytest.mark.anyio


@executor(id="keep")
async def keep(value: object, ctx: WorkflowContext[Never, object]) -> None:
    await ctx.yield_output(value)


async def run_fragment(fragment: Fragment, text: str) -> list[object]:
    builder = WorkflowBuilder()
    handle = builder.add_workflow(fragment)
    builder.connect(handle, keep).set_start(handle.start)
    return (await builder.build().run(text)).outputs


async def test_normalize_collapses_whitespace_and_folds_case() -> None:
    assert await run_fragment(NORMALIZE, "  Straße \t und\nMEHR ") == ["strasse und mehr"]


async def test_summarize_keeps_the_first_sentence_and_counts() -> None:
    outputs = await run_fragment(SUMMARIZE, "One two. Three four five? Six!")
    assert outputs == [Summary(text="One two.", sentences=3, words=6)]
    assert await run_fragment(SUMMARIZE, "   ") == [Summary(text="", sentences=0, words=0)]


def test_contracts_match_the_built_fragments() -> None:
    for fragment in (NORMALIZE, SUMMARIZE):
        declared = fragment.contract
        built = fragment.build().as_connection().contract
        assert (declared.input_types, declared.output_types) == (
            built.input_types,
            built.output_types,
        )


def test_the_converter_is_lossy_and_drops_only_the_counts() -> None:
    assert SUMMARY_TO_TEXT.lossless is False
    assert (SUMMARY_TO_TEXT.source, SUMMARY_TO_TEXT.target) == (Summary, str)
    assert summary_to_text(Summary("Hi.", 1, 1)) == "Hi."


def test_the_plugin_registers_two_fragments_and_a_converter() -> None:
    manager = PluginManager(entry_points=[])
    manager.register(plait_textkit, "textkit-under-test", distribution="plait-textkit")
    assert manager.registry("fragment").names() == ["textkit.normalize", "textkit.summarize"]
    assert manager.registry("converter").names() == ["textkit.summary_to_text"]
    assert manager.registry("fragment").entry("textkit.summarize").distribution == "plait-textkit"
