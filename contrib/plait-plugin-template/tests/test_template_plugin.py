"""plait-plugin-template's own tests: plait-testing's contract suites, then the plugin's.

The fixtures ``plait_plugin_manager`` and ``plait_register_plugin`` come from the pytest
plugin of ``plait-testing`` (a test dependency). The last two tests need the
distribution installed (``pip install -e .``), since they look at its entry point.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import plait_plugin_template
import pytest
from plait.spi import ENTRY_POINT_GROUP, PluginManager
from plait_plugin_template import NOTE_TO_TEXT, LongestMerge, Note
from plait_testing import MergeStrategyContract, RegisterPlugin

#: The plugin's user-visible name: its entry point, what PLAIT_DISABLE_PLUGINS accepts.
PLUGIN = "template"
DISTRIBUTION = "plait-plugin-template"
REGISTERED = {
    "merge_strategy": ["template.longest"],
    "converter": ["template.note_to_text"],
}


# -- the merge strategy: the contract every merge strategy passes ----------------------------


class TestLongest(MergeStrategyContract):
    """The contract on strings (the default inputs hold a tie: alpha and gamma)."""

    @pytest.fixture
    def merge_strategy(self) -> Any:
        return LongestMerge()

    @pytest.fixture
    def expected_merge(self) -> Any:
        return lambda values, sources: max(values, key=len)


class TestLongestOfLists(TestLongest):
    """The same contract on lists."""

    @pytest.fixture
    def merge_inputs(self) -> tuple[list[Any], tuple[str, ...]]:
        return [[1, 2], [3, 4, 5], [6]], ("a", "b", "c")

    @pytest.fixture
    def merge_input_type(self) -> Any:
        return list[int]


def test_longest_prefers_the_earliest_declared_source_on_a_tie() -> None:
    assert LongestMerge().merge(["ab", "cd", "e"], ["x", "y", "z"]) == "ab"
    assert LongestMerge().merge(["cd", "ab", "e"], ["y", "x", "z"]) == "cd"


def test_longest_of_nothing_says_what_it_needs() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        LongestMerge().merge([], [])


# -- the converter -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "hello", "two\nlines, ünïcode"])
def test_note_to_text_is_lossless(text: str) -> None:
    note = Note(text)
    assert NOTE_TO_TEXT.lossless
    assert Note(NOTE_TO_TEXT(note)) == note


def test_the_converter_is_registered_from_notes_to_text(
    plait_plugin_manager: PluginManager, plait_register_plugin: RegisterPlugin
) -> None:
    # what the builder's converter search (plait-converters) chains where an edge sends a
    # Note to an executor that takes str
    plait_register_plugin(plait_plugin_template, PLUGIN)
    registered = plait_plugin_manager.registry("converter").get("template.note_to_text")
    assert (registered.source, registered.target, registered.lossless) == (Note, str, True)


# -- registration --------------------------------------------------------------------------


def test_the_plugin_registers_through_the_kernel(
    plait_plugin_manager: PluginManager, plait_register_plugin: RegisterPlugin
) -> None:
    plait_register_plugin(plait_plugin_template, PLUGIN, distribution=DISTRIBUTION)
    for kind, names in REGISTERED.items():
        assert plait_plugin_manager.registry(kind).names() == names
    merge = plait_plugin_manager.registry("merge_strategy").entry("template.longest")
    assert isinstance(merge.obj, LongestMerge)
    assert merge.distribution == DISTRIBUTION


def test_the_installed_distribution_declares_its_entry_point() -> None:
    found = [
        ep
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP, name=PLUGIN)
        if ep.dist is not None and ep.dist.metadata["Name"] == DISTRIBUTION
    ]
    assert [ep.value for ep in found] == ["plait_plugin_template"], (
        f"{DISTRIBUTION} is not installed with entry point {PLUGIN!r}; run: pip install -e ."
    )


def test_the_installed_plugin_loads_with_its_registrations() -> None:
    described = {info.name: info for info in PluginManager(disabled=[]).describe()}
    assert PLUGIN in described, f"{DISTRIBUTION} is not installed; run: pip install -e ."
    info = described[PLUGIN]
    assert info.distribution == DISTRIBUTION
    assert info.status == "loaded", info.error
    assert info.registered == REGISTERED
