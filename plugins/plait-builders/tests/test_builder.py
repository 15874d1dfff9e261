"""WorkflowBuilder: structure, validation (every problem at once) and type checks."""

from __future__ import annotations

from typing import Any

import attrs
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


def test_node_spec_fields() -> None:
    # the builder makes a node's spec with its fields by position (cheaper than keywords):
    # each setting lands in the field of its name, whatever it is
    from plait import NodeSpec, RetryPolicy
    from plait_builders._builder import _node_spec

    @executor(id="set", max_concurrency=3, max_visits=4, timeout=5.0, order="arrival")
    async def every(x: str, ctx: WorkflowContext[int, bytes]) -> None:
        await ctx.send_message(len(x))

    every.nonportable = "a test says so"  # type: ignore[attr-defined]
    policy = {"retry": RetryPolicy(max_attempts=2).to_dict(), "placement": "local"}
    node = _node_spec(every, policy)
    assert node == NodeSpec(
        id="set",
        kind="python",
        ref=every.ref,
        input_types=("str",),
        output_types=("int",),
        workflow_output_types=("bytes",),
        config={"ref": every.ref},
        uses=None,
        retry=policy["retry"],
        timeout=5.0,
        max_visits=4,
        max_concurrency=3,
        order="arrival",
        nonportable="a test says so",
        placement="local",
    )
    # a new field (or a new order) must be given its value in _node_spec too
    assert [field.name for field in attrs.fields(NodeSpec)] == [
        "id",
        "kind",
        "ref",
        "input_types",
        "output_types",
        "workflow_output_types",
        "config",
        "uses",
        "retry",
        "timeout",
        "max_visits",
        "max_concurrency",
        "order",
        "nonportable",
        "placement",
    ]


def test_the_public_names_are_listed_and_load() -> None:
    import plait_builders

    for name in plait_builders.__all__:
        assert getattr(plait_builders, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        plait_builders.nothing  # type: ignore[attr-defined]  # noqa: B018


# -- acyclic=True ------------------------------------------------------------------------


@executor(id="c")
async def c(x: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(x)


@executor(id="d")
async def d(x: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(x)


def test_an_acyclic_builder_reports_every_cycle_with_its_path() -> None:
    builder = (
        WorkflowBuilder("loops", acyclic=True)
        .add_edge(a, c)
        .add_edge(c, d)
        .add_edge(d, c)  # c -> d -> c
        .add_edge(d, a)  # a -> c -> d -> a
        .add_edge(d, d)  # d sends to itself
        .add_edge(d, b)
        .set_start(a)
    )
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    cycles = [p for p in info.value.problems if p.startswith("cycle ")]
    assert cycles == [
        "cycle c -> d -> c in a workflow declared acyclic (acyclic=True); remove an edge of "
        "it, or allow cycles",
        "cycle a -> c -> d -> a in a workflow declared acyclic (acyclic=True); remove an "
        "edge of it, or allow cycles",
        "cycle d -> d in a workflow declared acyclic (acyclic=True); remove an edge of it, "
        "or allow cycles",
    ]
    # the same graph without the flag builds: cycles are allowed by default
    builder.acyclic = False
    assert builder.build().spec.acyclic is False


def test_an_error_edge_back_is_a_cycle_too() -> None:
    builder = WorkflowBuilder("retrying", acyclic=True).add_edge(a, c).add_edge(c, b)
    builder.add_error_edge(c, a).set_start(a)
    with pytest.raises(WorkflowValidationError, match=r"cycle a -> c -> a in a workflow"):
        builder.build()


def test_an_acyclic_workflow_builds_and_its_spec_says_so() -> None:
    workflow = WorkflowBuilder("chain", acyclic=True).add_edge(a, c).add_edge(c, b)
    built = workflow.set_start(a).build()
    assert built.spec.acyclic is True and built.spec.cycles() == []
    assert built.spec.to_dict(portable=False)["acyclic"] is True
    assert WorkflowSpec.from_json(built.spec.to_json(portable=False)).acyclic is True
    assert built.run_sync("x").outputs == ["x"]


def test_a_spec_declares_acyclic_only_when_set() -> None:
    spec = WorkflowBuilder("chain").add_edge(a, b).set_start(a).to_spec()
    assert spec.acyclic is False and "acyclic" not in spec.to_dict(portable=False)
    cyclic = WorkflowSpec.from_dict({**spec.to_dict(portable=False), "acyclic": True})
    assert cyclic.acyclic is True and cyclic.problems() == []
    looped = WorkflowSpec(
        name="looped",
        start="a",
        nodes=spec.nodes,
        edge_groups=(*spec.edge_groups, *WorkflowBuilder().add_edge(b, a).to_spec().edge_groups),
        acyclic=True,
    )
    assert [p for p in looped.problems() if p.startswith("cycle")] == [
        "cycle a -> b -> a in a workflow declared acyclic (acyclic=True); remove an edge of "
        "it, or allow cycles"
    ]
