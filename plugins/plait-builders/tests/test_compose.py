"""Composition: add_workflow merges fragments under prefixes, connect wires their points."""

from __future__ import annotations

from typing import Any

import pytest
from plait import (
    Executor,
    Never,
    Workflow,
    WorkflowContext,
    WorkflowValidationError,
    executor,
    handler,
)
from plait_builders import (
    CompositionError,
    ConnectionHandle,
    ConnectionPoint,
    WorkflowBuilder,
    WorkflowConnection,
    connection_from_workflow,
)

pytestmark = pytest.mark.anyio


@executor(id="normalize")
async def normalize(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(" ".join(text.split()).lower())


@executor(id="enrich")
async def enrich(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(f"{text} ({len(text.split())} words)")


@executor(id="summarize")
async def summarize(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.title())


@executor(id="publish")
async def publish(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"published: {text}")


def prep_fragment() -> WorkflowBuilder:
    return WorkflowBuilder("prep").add_edge(normalize, enrich).set_start(normalize)


def summary_fragment() -> WorkflowBuilder:
    return WorkflowBuilder("summary").add_edge(summarize, publish).set_start(summarize)


def compose(prep: Any, summary: Any) -> Workflow:
    builder = WorkflowBuilder("composed")
    prep_handle = builder.add_workflow(prep, prefix="prep")
    summary_handle = builder.add_workflow(summary, prefix="summary")
    builder.connect(prep_handle.outputs[0], summary_handle.start)
    return builder.set_start(prep_handle.start).build()


EXPECTED = ["published: Hello Composition (2 Words)"]


async def test_composed_fragments_run_and_the_spec_shows_prefixed_ids() -> None:
    workflow = compose(prep_fragment(), summary_fragment())
    assert (await workflow.run("  Hello Composition  ")).outputs == EXPECTED
    spec = workflow.spec
    assert spec.node_ids == (
        "prep/normalize",
        "prep/enrich",
        "summary/summarize",
        "summary/publish",
    )
    assert spec.start == "prep/normalize"
    assert [g.id for g in spec.edge_groups] == [
        "direct:prep/normalize->prep/enrich",
        "direct:summary/summarize->summary/publish",
        "direct:prep/enrich->summary/summarize",
    ]
    assert spec.from_json(spec.to_json()) == spec


async def test_built_workflows_and_connections_compose_the_same_way() -> None:
    from_builders = compose(prep_fragment(), summary_fragment())
    prep_workflow = prep_fragment().set_start(normalize)
    built = summary_fragment().build()
    via_hook = connection_from_workflow(built)  # what add_workflow does with a Workflow
    assert isinstance(via_hook, WorkflowConnection)
    assert via_hook.start == "summarize" and via_hook.outputs == ("publish",)
    for summary in (built, via_hook):
        workflow = compose(prep_workflow.as_connection(), summary)
        assert (await workflow.run("  Hello Composition  ")).outputs == EXPECTED
        assert workflow.signature() == from_builders.signature()
    assert built.spec.node_ids == ("summarize", "publish")  # the source is untouched


def test_the_handle_carries_typed_points() -> None:
    handle = WorkflowBuilder().add_workflow(prep_fragment(), prefix="prep")
    assert isinstance(handle, ConnectionHandle)
    assert handle.prefix == "prep"
    assert handle.executor_ids == ("prep/normalize", "prep/enrich")
    assert handle.start == ConnectionPoint("prep/normalize", "normalize", (str,), (str,), ())
    (out,) = handle.outputs
    assert (out.executor_id, out.name, out.output_types) == ("prep/enrich", "enrich", (str,))
    assert handle.output() is out and handle.output("enrich") is out
    assert str(out) == "prep/enrich"
    assert "sends str" in repr(out)


async def test_one_fragment_twice_under_two_prefixes_runs_twice_independently() -> None:
    seen: list[tuple[str, str, int]] = []

    class Counter(Executor):
        @handler
        async def count(self, text: str, ctx: WorkflowContext[str]) -> None:
            ctx.state["n"] = ctx.state.get("n", 0) + 1
            seen.append((self.id, ctx.executor_id, ctx.state["n"]))
            await ctx.send_message(f"{self.id}:{text}")

    fragment = WorkflowBuilder("tag").add_edge(Counter("count"), normalize).set_start("count")
    builder = WorkflowBuilder()
    one = builder.add_workflow(fragment, prefix="one")
    two = builder.add_workflow(fragment, prefix="two")

    @executor(id="split")
    async def split(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="join")
    async def join(parts: list[str], ctx: WorkflowContext[Never, list[str]]) -> None:
        await ctx.yield_output(parts)

    builder.add_fan_out(split, [one.start, two.start])
    builder.add_fan_in([one.output(), two.output()], join).set_start(split)
    result = await builder.build().run("X")
    assert result.outputs == [["one/count:x", "two/count:x"]]
    assert sorted(seen) == [("one/count", "one/count", 1), ("two/count", "two/count", 1)]
    # the source fragment is never mutated, and its executor keeps its id
    assert list(fragment._executors) == ["count", "normalize"]
    assert fragment._executors["count"].id == "count"
    assert [g.id for g in fragment._groups] == ["direct:count->normalize"]


def test_one_prefix_twice_is_an_error_naming_it() -> None:
    builder = WorkflowBuilder()
    builder.add_workflow(prep_fragment(), prefix="prep")
    with pytest.raises(CompositionError, match="prefix 'prep' is already used"):
        builder.add_workflow(summary_fragment(), prefix="prep")
    builder.add_workflow(summary_fragment())  # default prefix: the fragment's name
    with pytest.raises(CompositionError, match="prefix 'summary' is already used"):
        builder.add_workflow(summary_fragment())
    with pytest.raises(CompositionError, match="'prep/inner' overlaps the prefix 'prep'"):
        builder.add_workflow(summary_fragment(), prefix="prep/inner")
    for bad in ("", "/x", "x/", "a//b"):
        with pytest.raises(CompositionError, match="must be a non-empty string"):
            builder.add_workflow(summary_fragment(), prefix=bad)


def test_an_id_taken_by_a_plain_executor_is_a_collision() -> None:
    taken = executor(id="prep/normalize")(normalize.fn)
    builder = WorkflowBuilder().add_executor(taken)
    with pytest.raises(CompositionError, match="prefix 'prep': executor id 'prep/normalize'"):
        builder.add_workflow(prep_fragment(), prefix="prep")


def test_default_prefixes_are_the_name_else_numbered() -> None:
    builder = WorkflowBuilder()
    unnamed = WorkflowBuilder().add_edge(normalize, enrich).set_start(normalize)
    assert builder.add_workflow(prep_fragment()).prefix == "prep"
    assert builder.add_workflow(unnamed).prefix == "fragment-2"
    assert builder.add_workflow(unnamed).prefix == "fragment-3"
    assert builder.add_workflow(unnamed.as_connection("mine")).prefix == "mine"
    assert builder.add_workflow(unnamed.as_connection("mine"), prefix="other").prefix == "other"


async def test_nested_prefixes_compose_outer_inner_id() -> None:
    middle = WorkflowBuilder("middle")
    inner = middle.add_workflow(prep_fragment(), prefix="inner")
    tail = middle.add_workflow(summary_fragment(), prefix="tail")
    middle.connect(inner, tail).set_start(inner.start)
    outer = WorkflowBuilder()
    handle = outer.add_workflow(middle, prefix="outer")
    workflow = outer.set_start(handle.start).build()
    assert handle.start.executor_id == "outer/inner/normalize"
    assert [p.executor_id for p in handle.outputs] == ["outer/tail/publish"]
    assert "outer/tail/summarize" in workflow.spec.node_ids
    assert "direct:outer/inner/enrich->outer/tail/summarize" in {
        g.id for g in workflow.spec.edge_groups
    }
    assert (await workflow.run("  Hello Composition  ")).outputs == EXPECTED


def test_topology_signature_is_stable_and_follows_fragment_changes() -> None:
    first = compose(prep_fragment(), summary_fragment())
    again = compose(prep_fragment(), summary_fragment())
    assert first.signature() == again.signature()

    @executor(id="shorten")
    async def shorten(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text[:20])

    changed_prep = prep_fragment().add_edge(enrich, shorten)
    changed = compose(changed_prep, summary_fragment())
    assert changed.signature() != first.signature()
    assert "executors added: prep/shorten" in first.spec.diff(changed.spec)


async def test_class_executor_handlers_run_on_the_clone() -> None:
    class Stamp(Executor):
        def __init__(self, id: str, mark: str) -> None:
            self.mark = mark
            super().__init__(id)

        @handler
        async def stamp(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"{self.id}|{ctx.executor_id}|{self.mark}|{text}")

    original = Stamp("stamp", "m")
    fragment = WorkflowBuilder("f").set_start(original).add_executor(original)
    builder = WorkflowBuilder()
    a = builder.add_workflow(fragment, prefix="a")
    b = builder.add_workflow(fragment, prefix="b")
    builder.add_fan_out(normalize, [a.start, b.start]).set_start(normalize)
    result = await builder.build().run("Hi")
    assert sorted(result.outputs) == ["a/stamp|a/stamp|m|hi", "b/stamp|b/stamp|m|hi"]
    assert original.id == "stamp" and original._dispatch == {}


def test_multi_exit_handles_need_an_explicit_output() -> None:
    @executor(id="left")
    async def left(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="right")
    async def right(text: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(len(text))

    fork = WorkflowBuilder("fork").add_fan_out(normalize, [left, right]).set_start(normalize)
    builder = WorkflowBuilder()
    handle = builder.add_workflow(fork)
    with pytest.raises(CompositionError) as info:
        builder.connect(handle, publish)
    message = str(info.value)
    assert "fragment 'fork' has 2 outputs; choose one" in message
    assert "handle.outputs[0] ('fork/left', sends str)" in message
    assert "handle.outputs[1] ('fork/right', sends int)" in message
    with pytest.raises(CompositionError, match="has no output 'middle'; its outputs: "):
        handle.output("middle")
    builder.connect(handle.outputs[0], publish).connect(handle.output("fork/right"), "sink")
    assert handle.output("right").executor_id == "fork/right"
    exits = fork.as_connection(outputs=[left]).outputs
    assert exits == ("left",)


def test_connecting_from_an_executor_that_only_yields_is_an_error() -> None:
    builder = WorkflowBuilder()
    summary = builder.add_workflow(summary_fragment())
    with pytest.raises(CompositionError, match="'summary/publish': it sends no messages"):
        builder.connect(summary, normalize)
    with pytest.raises(TypeError, match="got the handle of fragment 'summary'"):
        builder.add_edge(summary, normalize)  # type: ignore[arg-type]


async def test_points_work_wherever_executors_do() -> None:
    builder = WorkflowBuilder()
    prep = builder.add_workflow(prep_fragment())
    summary = builder.add_workflow(summary_fragment())
    builder.add_edge(prep.output(), summary.start).set_start(prep.start)
    assert (await builder.build().run("  Hello Composition  ")).outputs == EXPECTED


async def test_connect_type_checks_like_any_edge() -> None:
    @executor(id="count")
    async def count(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)

    builder = WorkflowBuilder(auto_convert=False)
    prep = builder.add_workflow(prep_fragment())
    builder.connect(prep, count).set_start(prep.start)
    with pytest.raises(WorkflowValidationError, match=r"'direct:prep/enrich->count': 'count'"):
        builder.build()


async def test_adapters_are_visible_nodes_with_deterministic_ids() -> None:
    @executor(id="count")
    async def count(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)

    def words(text: str) -> int:
        return len(text.split())

    def build() -> Workflow:
        builder = WorkflowBuilder()
        prep = builder.add_workflow(prep_fragment())
        return builder.connect(prep, count, adapter=words).set_start(prep.start).build()

    workflow = build()
    assert "adapt:prep/enrich->count" in workflow.spec.node_ids
    node = workflow.spec.node("adapt:prep/enrich->count")
    assert (node.input_types, node.output_types) == (("str",), ("int",))
    assert node.ref is not None and node.ref.endswith("words")
    assert (await workflow.run("a b c")).outputs == [5]  # "a b c (3 words)"
    assert build().signature() == workflow.signature()


async def test_a_converter_record_and_an_async_function_are_adapters() -> None:
    from plait.spi import Converter

    @executor(id="count")
    async def count(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)

    async def shout(text: str) -> str:
        return text.upper()

    length = Converter(source=str, target=int, fn=len, lossless=False, name="length")
    builder = WorkflowBuilder()
    builder.connect(normalize, count, adapter=length).connect(normalize, publish, adapter=shout)
    builder.connect(normalize, count, adapter=length)  # the same pair again: a new node
    workflow = builder.set_start(normalize).build()
    ids = workflow.spec.node_ids
    assert "adapt:normalize->count" in ids and "adapt:normalize->count#2" in ids
    assert "adapt:normalize->publish" in ids
    assert sorted(map(str, (await workflow.run("A b")).outputs)) == ["3", "3", "published: A B"]


async def test_switch_options_follow_the_renamed_targets() -> None:
    @executor(id="short")
    async def short(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"short:{text}")

    @executor(id="long")
    async def long(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"long:{text}")

    router = (
        WorkflowBuilder("router")
        .add_switch(normalize, [(lambda t: len(t) < 4, short)], default=long)
        .set_start(normalize)
    )
    builder = WorkflowBuilder()
    handle = builder.add_workflow(router)
    workflow = builder.set_start(handle.start).build()
    (group,) = workflow.spec.edge_groups
    assert group.options["case_targets"] == ["router/short"]
    assert group.options["default"] == "router/long"
    assert (await workflow.run("ABC")).outputs == ["short:abc"]
    assert (await workflow.run("ABCDEF")).outputs == ["long:abcdef"]


def test_fragment_settings_and_problems_travel_with_it() -> None:
    other = executor(id="normalize")(enrich.fn)
    fragment = (
        WorkflowBuilder("f", allow_lossy=True, executor_max_visits={"normalize": 3})
        .add_edge(normalize, enrich)
        .add_executor(other)
        .set_start(normalize)
    )
    builder = WorkflowBuilder(executor_max_visits={"mine": 1})
    builder.add_workflow(fragment)
    (group,) = builder._groups
    assert group.options == {"allow_lossy": True}
    assert builder.run_defaults["executor_max_visits"] == {"mine": 1, "f/normalize": 3}
    with pytest.raises(WorkflowValidationError, match="fragment 'f': two different executors"):
        builder.set_start("f/normalize").build()


def test_a_fragment_needs_a_start() -> None:
    with pytest.raises(CompositionError, match="fragment loose has no start executor"):
        WorkflowBuilder().add_workflow(WorkflowBuilder("loose").add_edge(normalize, enrich))


def test_a_connection_is_a_snapshot() -> None:
    fragment = prep_fragment()
    connection = fragment.as_connection()
    fragment.add_edge(enrich, publish)
    assert list(connection.builder._executors) == ["normalize", "enrich"]
    assert connection.outputs == ("enrich",) and connection.entry == "normalize"
    assert connection.exits == connection.outputs
    assert connection.contract.input_types == (str,)
    assert connection.contract.output_types == (str,)
    assert connection.contract.describe()["input_types"] == ["str"]
    assert "WorkflowConnection prep" in repr(connection)


def test_add_workflow_rejects_what_it_cannot_compose() -> None:
    with pytest.raises(TypeError, match="add_workflow needs a WorkflowBuilder"):
        WorkflowBuilder().add_workflow(42)
