"""plait-routing's constructors for its own options build what its routers read."""

from __future__ import annotations

import pytest
from plait import EdgeGroupSpec
from plait_routing import (
    FanInRouter,
    SwitchRouter,
    fan_in_options,
    switch_options,
    switch_targets,
)
from plait_testing import StaticRouterEnv


def test_switch_options_pair_each_case_with_its_target() -> None:
    options = switch_options(["big"], [{"expr": "n > 9"}], "small")
    assert options == {"case_targets": ["big"], "default": "small", "cases": [{"expr": "n > 9"}]}
    assert switch_targets(["big", "big"], "small") == ["big", "small"]
    assert switch_targets(["big"]) == ["big"]
    with pytest.raises(ValueError, match="one target per case: 2 target"):
        switch_options(["a", "b"], [{"expr": "true"}])


def test_fan_in_options_check_when() -> None:
    assert fan_in_options() == {"merge": "list", "when": "all"}
    assert fan_in_options("concat", when="available", merge_options={"separator": "|"}) == {
        "merge": "concat",
        "when": "available",
        "merge_options": {"separator": "|"},
    }
    with pytest.raises(ValueError, match="'all' or 'available', got 'some'"):
        fan_in_options(when="some")


def test_the_routers_read_what_the_constructors_build() -> None:
    options = switch_options(["big"], [None], "small")  # the case is given as a parameter
    targets = tuple(switch_targets(["big"], "small"))
    group = EdgeGroupSpec("switch:source->big,small", "switch", ("source",), targets, options)
    runner = SwitchRouter().create(group, {"cases": [lambda n: n > 9]}, StaticRouterEnv({}))
    assert runner.route("source", 12, None, None) == [("big", 12)]
    assert runner.route("source", 3, None, None) == [("small", 3)]
    fan_in = EdgeGroupSpec(
        "fan_in:a,b->t", "fan_in", ("a", "b"), ("t",), fan_in_options(when="available")
    )
    env = StaticRouterEnv({"merge_strategy": {"list": object()}})
    assert FanInRouter().create(fan_in, {}, env).when == "available"
