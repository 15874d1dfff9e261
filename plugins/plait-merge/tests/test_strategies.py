"""What each merge strategy of plait-merge returns, and how it types its output."""

from __future__ import annotations

from typing import Any

import plait
import plait_merge
import pytest
from plait.spi import PluginManager
from plait_merge import ConcatMerge, FirstMerge, KeyedMerge, LastMerge, ListMerge
from plait_testing import RegisterPlugin

SOURCES = ("researcher", "critic", "editor")


def _registered() -> dict[str, Any]:
    found: dict[str, Any] = {}

    def register(name: str, obj: Any, *, replaces: str | None = None) -> None:
        found[name] = obj

    plait_merge.plait_register_merge_strategies(register)
    return found


STRATEGIES = _registered()


# -- list ------------------------------------------------------------------------------------


def test_list_keeps_every_value_in_source_order() -> None:
    assert ListMerge().merge(["r", "c", "e"], SOURCES) == ["r", "c", "e"]


def test_list_returns_a_new_list() -> None:
    values = ["r", "c"]
    merged = ListMerge().merge(values, SOURCES[:2])
    assert merged == values and merged is not values


def test_list_output_type_is_a_list_of_the_input() -> None:
    assert ListMerge().output_type(str) == list[str]
    assert ListMerge().output_type(int) == list[int]  # so assignable to list[int]


# -- concat ----------------------------------------------------------------------------------


def test_concat_joins_strings_with_one_space_as_seed_000_says() -> None:
    assert ConcatMerge().merge(["resultA", "resultB"], SOURCES[:2]) == "resultA resultB"
    assert STRATEGIES["concat"].merge(["ab", "cd", "e"], SOURCES) == "ab cd e"


def test_concat_chains_lists_and_tuples() -> None:
    assert ConcatMerge().merge([[1, 2], (3,), []], SOURCES) == [1, 2, 3]


def test_concat_of_mixed_values_names_each_source_and_type() -> None:
    with pytest.raises(TypeError, match="researcher: str, critic: list, editor: int"):
        ConcatMerge().merge(["a", ["b"], 3], SOURCES)


def test_concat_of_strings_and_lists_is_mixed() -> None:
    with pytest.raises(TypeError, match="concat merges strings or lists"):
        ConcatMerge().merge(["a", ["b"]], SOURCES[:2])


def test_concat_output_type_is_the_input_type() -> None:
    assert ConcatMerge().output_type(str) is str


def test_concat_newline_puts_a_blank_line_between_values() -> None:
    newline = STRATEGIES["concat_newline"]
    assert newline.merge(["resultA", "resultB"], SOURCES[:2]) == "resultA\n\nresultB"
    assert newline.merge(["one", "two", "three"], SOURCES) == "one\n\ntwo\n\nthree"
    assert newline.merge(["alone"], SOURCES[:1]) == "alone"


def test_concat_newline_chains_lists_without_a_separator() -> None:
    assert STRATEGIES["concat_newline"].merge([["a"], ["b"]], SOURCES[:2]) == ["a", "b"]


def test_concat_with_options_takes_a_separator_and_leaves_the_original_alone() -> None:
    concat = STRATEGIES["concat"]
    piped = concat.with_options({"separator": " | "})
    assert piped.merge(["a", "b", "c"], SOURCES) == "a | b | c"
    assert concat.merge(["a", "b"], SOURCES[:2]) == "a b"
    assert STRATEGIES["concat_newline"].with_options({}).separator == "\n\n"


def test_concat_with_options_rejects_unknown_options_and_non_strings() -> None:
    with pytest.raises(ValueError, match="'separator' only, got 'sep'"):
        ConcatMerge().with_options({"sep": "-"})
    with pytest.raises(ValueError, match="must be a string, got 3"):
        ConcatMerge().with_options({"separator": 3})


def test_strategies_without_options_have_no_with_options() -> None:
    for name in ("list", "first", "last", "keyed"):
        assert not hasattr(STRATEGIES[name], "with_options"), name


# -- first / last --------------------------------------------------------------------------


def test_first_takes_the_first_declared_source() -> None:
    assert FirstMerge().merge(["r", "c", "e"], SOURCES) == "r"
    assert FirstMerge().output_type(int) is int


def test_last_takes_the_last_declared_source() -> None:
    assert LastMerge().merge(["r", "c", "e"], SOURCES) == "e"
    assert LastMerge().output_type(int) is int


def test_first_and_last_keep_the_object() -> None:
    value: dict[str, Any] = {"draft": 1}
    assert FirstMerge().merge([value], ["only"]) is value
    assert LastMerge().merge([value], ["only"]) is value


# -- keyed -----------------------------------------------------------------------------------


def test_keyed_maps_source_ids_and_keeps_their_order() -> None:
    merged = KeyedMerge().merge(["r", "c", "e"], SOURCES)
    assert merged == {
        "outputs": {"researcher": "r", "critic": "c", "editor": "e"},
        "order": ["researcher", "critic", "editor"],
    }
    assert list(merged["outputs"]) == merged["order"]


def test_keyed_gives_positional_access_through_order() -> None:
    merged = KeyedMerge().merge([10, 20], ("b", "a"))
    assert [merged["outputs"][source] for source in merged["order"]] == [10, 20]


def test_keyed_output_type_is_a_dict() -> None:
    assert KeyedMerge().output_type(str) == dict[str, Any]


# -- registration ----------------------------------------------------------------------------


def test_the_plugin_registers_through_the_kernel(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(plait_merge, "merge")
    registry = plait_plugin_manager.registry("merge_strategy")
    assert registry.names() == ["concat", "concat_newline", "first", "keyed", "last", "list"]
    assert isinstance(registry.get("concat_newline"), ConcatMerge)
    assert registry.entry("keyed").plugin == "merge"


def test_another_plugin_may_replace_a_strategy_by_naming_this_distribution(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    class Shouting:
        def merge(self, values: Any, sources: Any) -> str:
            return "".join(values).upper()

        def output_type(self, input_type: Any) -> Any:
            return str

    class Replacement:
        @plait.hookimpl
        def plait_register_merge_strategies(self, register: Any) -> None:
            register("concat", Shouting(), replaces="plait-merge")

    register_plugin(plait_merge, "merge", distribution="plait-merge")
    register_plugin(Replacement(), "loud")
    assert plait_plugin_manager.registry("merge_strategy").get("concat").merge(["a", "b"], []) == (
        "AB"
    )
