"""Every merge strategy of plait-merge passes plait.testing's MergeStrategyContract."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import plait_merge
import pytest
from plait_testing import MergeStrategyContract

Oracle = Callable[[Sequence[Any], Sequence[str]], Any]


def registered_strategies() -> dict[str, Any]:
    """The strategy objects exactly as the plugin's hook registers them."""
    found: dict[str, Any] = {}

    def register(name: str, obj: Any, *, replaces: str | None = None) -> None:
        found[name] = obj

    plait_merge.plait_register_merge_strategies(register)
    return found


STRATEGIES = registered_strategies()


def test_the_plugin_registers_the_six_strategies() -> None:
    assert sorted(STRATEGIES) == ["concat", "concat_newline", "first", "keyed", "last", "list"]


class StrategyContract(MergeStrategyContract):
    """The contract with the strategy looked up by name and an oracle per strategy."""

    strategy_name = ""
    oracle: Oracle

    @pytest.fixture
    def merge_strategy(self) -> Any:
        return STRATEGIES[self.strategy_name]

    @pytest.fixture
    def expected_merge(self) -> Oracle:
        return type(self).oracle


class TestList(StrategyContract):
    strategy_name = "list"
    oracle = staticmethod(lambda values, sources: list(values))


class TestListOfNumbers(TestList):
    @pytest.fixture
    def merge_inputs(self) -> tuple[list[Any], tuple[str, ...]]:
        return [3, 1, 2], ("x", "y", "z")

    @pytest.fixture
    def merge_input_type(self) -> Any:
        return int


class TestConcat(StrategyContract):
    strategy_name = "concat"
    oracle = staticmethod(lambda values, sources: " ".join(values))


class TestConcatLists(StrategyContract):
    strategy_name = "concat"
    oracle = staticmethod(lambda values, sources: [x for v in values for x in v])

    @pytest.fixture
    def merge_inputs(self) -> tuple[list[Any], tuple[str, ...]]:
        return [[1, 2], [3], [4, 5]], ("a", "b", "c")

    @pytest.fixture
    def merge_input_type(self) -> Any:
        return list[int]


class TestConcatNewline(StrategyContract):
    strategy_name = "concat_newline"
    oracle = staticmethod(lambda values, sources: "\n\n".join(values))


class TestFirst(StrategyContract):
    strategy_name = "first"
    oracle = staticmethod(lambda values, sources: values[0])


class TestLast(StrategyContract):
    strategy_name = "last"
    oracle = staticmethod(lambda values, sources: values[-1])


class TestKeyed(StrategyContract):
    strategy_name = "keyed"
    oracle = staticmethod(
        lambda values, sources: {"outputs": dict(zip(sources, values)), "order": list(sources)}
    )
