"""WorkflowBuilder: structure, validation (every problem at once) and type checks."""

from __future__ import annotations

from typing import Any

import pytest
from plait import Never, WorkflowContext, WorkflowSpec, WorkflowValidationError, executor
from plait_builders import WorkflowBuilder


@executor(id="a")
async def a(x: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(x)


@executor(id="b")
async def b(x: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(x)


@executor(id="island")
async def island(x: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(x)


def test_build_reports_every_structural_problem_at_once() -> None:
    builder = (
        WorkflowBuilder("broken")
        .add_edge(a, b)
        .add_executor(island)
        .add_edge(a, "ghost")
        .add_fan_in([a, b], "b", merge="median")
    )
    builder._add_group("teleport", ["a"], ["b"])  # a router nobody installed
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    problems = "\n".join(info.value.problems)
    assert "no start executor" in problems
    assert "unknown target executor 'ghost'" in problems
    assert (
        "unknown router 'teleport'; installed: conditional, direct, error, fan_in, fan_out, switch"
        in problems
    )
    assert "unknown merge strategy 'median'" in problems and "keyed" in problems
    assert len(info.value.problems) >= 4
    assert "workflow 'broken' is invalid" in str(info.value)


def test_unreachable_executors_are_reported() -> None:
    builder = WorkflowBuilder().add_edge(a, b).add_executor(island).set_start(a)
    with pytest.raises(WorkflowValidationError, match="unreachable executor.*island"):
        builder.build()


def test_two_executors_with_one_id_are_a_problem() -> None:
    @executor(id="a")
    async def other(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(x)

    with pytest.raises(WorkflowValidationError, match="two different executors share the id 'a'"):
        WorkflowBuilder().add_edge(a, b).add_executor(other).set_start(a).build()


def test_bad_switch_and_condition_configuration() -> None:
    with pytest.raises(TypeError, match="a function or an expression string, got 42"):
        WorkflowBuilder().add_edge(a, b, condition=42)  # type: ignore[arg-type]
    with pytest.raises(WorkflowValidationError, match=r"conditional:a->b.*1:10"):
        WorkflowBuilder().add_edge(a, b, condition="size(x) >").set_start(a).build()


def test_an_expression_condition_is_data_and_routes() -> None:
    @executor(id="src")
    async def src(x: dict[str, int], ctx: WorkflowContext[dict[str, int]]) -> None:
        await ctx.send_message(x)

    @executor(id="sink")
    async def sink(x: dict[str, int], ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(x["score"])

    wf = WorkflowBuilder().add_edge(src, sink, condition="score > 5").set_start(src).build()
    assert wf.spec.edge_groups[0].options["condition"] == {"expr": "score > 5"}
    assert wf.run_sync({"score": 9}).outputs == [9]
    assert wf.run_sync({"score": 1}).outputs == []


def test_type_mismatch_on_an_edge_is_a_build_error() -> None:
    @executor(id="num")
    async def num(x: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(x)

    with pytest.raises(
        WorkflowValidationError, match=r"'num' cannot handle str from 'a' \(it accepts: int\)"
    ):
        WorkflowBuilder().add_edge(a, num).set_start(a).build()


def test_fan_in_target_receives_the_merged_type() -> None:
    @executor(id="join")
    async def join(xs: list[str], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(",".join(xs))

    @executor(id="c")
    async def c(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(x)

    ok = WorkflowBuilder().add_fan_out(a, [c, b]).add_fan_in([c], join).set_start(a).build()
    assert ok.run_sync("z").outputs == ["z", "z"]

    @executor(id="single")
    async def single(x: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(x)

    with pytest.raises(WorkflowValidationError, match=r"'single' cannot handle list\[str\]"):
        WorkflowBuilder().add_fan_out(a, [c]).add_fan_in([c], single).set_start(a).build()
    concat = WorkflowBuilder().add_fan_out(a, [c]).add_fan_in([c], single, merge="concat")
    assert concat.set_start(a).build().run_sync("y").outputs == ["y"]


def test_fan_in_separator_is_kept_in_the_group_options_and_honoured() -> None:
    @executor(id="c")
    async def c(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(x + "!")

    @executor(id="d")
    async def d(x: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(x + "?")

    @executor(id="single")
    async def single(x: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(x)

    built = (
        WorkflowBuilder()
        .add_fan_out(a, [d, c])
        .add_fan_in([d, c], single, merge="concat", separator=" | ")
        .set_start(a)
        .build()
    )
    group = next(g for g in built.spec.edge_groups if g.router == "fan_in")
    assert group.options["merge_options"] == {"separator": " | "}
    assert built.run_sync("y").outputs == ["y? | y!"]
    plain = WorkflowBuilder().add_fan_out(a, [d, c]).add_fan_in([d, c], single, merge="concat")
    assert "merge_options" not in plain.to_spec().edge_groups[-1].options
    with pytest.raises(WorkflowValidationError, match="'first' takes no options"):
        WorkflowBuilder().add_fan_out(a, [d, c]).add_fan_in(
            [d, c], single, merge="first", separator="-"
        ).set_start(a).build()


def test_spec_is_json_round_trippable_and_signed() -> None:
    def build() -> Any:
        return WorkflowBuilder("sig").add_edge(a, b, condition=bool).set_start(a).build()

    wf = build()
    spec = wf.spec
    again = WorkflowSpec.from_json(spec.to_json())
    assert again == spec
    assert again.signature() == spec.signature() == build().signature()
    assert spec.node("a").input_types == ("str",)
    assert spec.node("a").output_types == ("str",)
    assert spec.node("b").workflow_output_types == ("str",)
    changed = WorkflowBuilder("sig").add_edge(a, b).set_start(a).build()
    assert changed.signature() != spec.signature()
    assert spec.diff(changed.spec) == [
        "edges added: direct:a->b",
        "edges removed: conditional:a->b",
    ]


def test_the_public_names_are_listed_and_load() -> None:
    import plait_builders

    for name in plait_builders.__all__:
        assert getattr(plait_builders, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        plait_builders.nothing  # type: ignore[attr-defined]  # noqa: B018
