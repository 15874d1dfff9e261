"""Every router of plait-routing passes plait.testing's RouterContract."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plait_routing
import pytest
from plait import EdgeGroupSpec
from plait.spi import RouterEnv
from plait_testing import RouterContract, StaticRouterEnv


class ListOf:
    """A stand-in for plait-merge's ``list`` strategy: plait-routing does not depend on it."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> list[Any]:
        return list(values)

    def output_type(self, input_type: Any) -> Any:
        return list[input_type]  # type: ignore[valid-type,unused-ignore]


def registered_routers() -> dict[str, Any]:
    """The router objects exactly as the plugin's hook registers them."""
    found: dict[str, Any] = {}

    def register(name: str, obj: Any, *, replaces: str | None = None) -> None:
        found[name] = obj

    plait_routing.plait_register_routers(register)
    return found


ROUTERS = registered_routers()


def test_the_plugin_registers_the_six_routers() -> None:
    assert sorted(ROUTERS) == ["conditional", "direct", "error", "fan_in", "fan_out", "switch"]


class RoutingContract(RouterContract):
    """The contract with routers looked up by name and merges from a static env."""

    router_name = ""

    @pytest.fixture
    def router(self) -> Any:
        return ROUTERS[self.router_name]

    @pytest.fixture
    def router_env(self) -> RouterEnv:
        return StaticRouterEnv({"merge_strategy": {"list": ListOf()}})


class TestDirect(RoutingContract):
    router_name = "direct"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec("direct:a->b", "direct", ("a",), ("b",))


class TestDirectWithCondition(TestDirect):
    @pytest.fixture
    def router_params(self) -> Mapping[str, Any]:
        return {"condition": lambda message: isinstance(message, str)}


class TestConditional(RoutingContract):
    router_name = "conditional"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec("conditional:a->b", "conditional", ("a",), ("b",))

    @pytest.fixture
    def router_params(self) -> Mapping[str, Any]:
        return {"condition": lambda message: isinstance(message, (str, int))}


class TestFanOutToAll(RoutingContract):
    router_name = "fan_out"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec("fan_out:a->b,c,d", "fan_out", ("a",), ("b", "c", "d"))


class TestFanOutToASelection(TestFanOutToAll):
    @pytest.fixture
    def router_params(self) -> Mapping[str, Any]:
        def selection(message: Any, targets: list[str]) -> list[str]:
            return targets[:1] if isinstance(message, str) else targets[1:]

        return {"selection": selection}


class TestFanIn(RoutingContract):
    router_name = "fan_in"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec(
            "fan_in:a,b,c->d", "fan_in", ("a", "b", "c"), ("d",), {"merge": "list"}
        )


class TestFanInWhenAvailable(RoutingContract):
    router_name = "fan_in"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec(
            "fan_in:a,b->c", "fan_in", ("a", "b"), ("c",), {"merge": "list", "when": "available"}
        )


class TestSwitch(RoutingContract):
    router_name = "switch"

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec(
            "switch:a->b,c,d",
            "switch",
            ("a",),
            ("b", "c", "d"),
            {"case_targets": ["b", "c"], "default": "d"},
        )

    @pytest.fixture
    def router_params(self) -> Mapping[str, Any]:
        return {
            "cases": [
                lambda message: isinstance(message, str),
                lambda message: isinstance(message, int),
            ]
        }
