"""The schedule contract (``plait_testing.schedules``): it passes for a schedule that keeps
the superstep schedule's results, and fails, naming the seed and backend, for run options
that change them."""

from __future__ import annotations

import pytest
from plait_testing.schedules import (
    DrawnGraph,
    DrawnNode,
    Recorder,
    ScheduleContract,
    build_drawn,
    run_drawn,
)


def chain(*, loop: bool = False) -> DrawnGraph:
    """``n0 -> n1 -> n2``, ``n2`` looping back to ``n1`` once when ``loop``."""

    def node(i: int, **overrides: object) -> DrawnNode:
        fields: dict[str, object] = dict(
            id=f"n{i}",
            kind="start" if i == 0 else "edge",
            parents=() if i == 0 else (f"n{i - 1}",),
            concurrency=1,
            arrival=False,
            fan="direct",
            loop_to=None,
            loop_bound=1,
            asks=False,
            max_visits=None,
        )
        return DrawnNode(**(fields | overrides))  # type: ignore[arg-type]

    last = node(2, loop_to="n1", loop_bound=3) if loop else node(2)
    return DrawnGraph((node(0), node(1), last), 100, ("a", "b"))


class TestTheSuperstepSchedule(ScheduleContract):
    """The kernel's schedule against itself: its results do not depend on the sleeps."""

    examples = 4
    seeds = 6


def test_a_drawn_graph_builds_to_a_workflow_of_its_nodes() -> None:
    workflow = build_drawn(chain(), Recorder(None))
    assert sorted(workflow.executors) == ["n0", "n1", "n2"]


def test_what_a_run_did_is_the_same_on_both_backends_and_any_seed() -> None:
    expected = run_drawn(chain(loop=True))
    assert expected["status"] == "idle" and expected["supersteps"] == 5
    assert expected["calls"]["n0"] == [(1, "drawn:1:n0:0", "ab")]
    assert expected["visits"] == {"n0": 1, "n1": 2, "n2": 2}  # n2 took its back edge once
    assert run_drawn(chain(loop=True), 3) == expected
    assert run_drawn(chain(loop=True), 3, backend="asyncio", scale=0.001) == expected


def test_the_contract_fails_on_options_that_change_the_results() -> None:
    class TestOneVisit(ScheduleContract):
        # a visit limit of one fails every run that visits an executor twice
        options = ({"max_visits": 1},)
        examples = 30
        seeds = 1
        asyncio_seeds = 0

    with pytest.raises(AssertionError, match=r"seed 0 on trio, \{'max_visits': 1\}"):
        TestOneVisit().test_runs_equal_the_superstep_run()
