"""Published fragments: registered through plait_register_fragments, composed by name."""

from __future__ import annotations

from collections.abc import Iterator

import plait
import pytest
from plait import (
    Never,
    PluginLoadError,
    RegistrationError,
    UnknownNameError,
    WorkflowContext,
    executor,
    get_plugin_manager,
)
from plait.spi import PluginManager, Register
from plait_builders import (
    CompositionError,
    Contract,
    Fragment,
    FragmentInfo,
    SequentialBuilder,
    WorkflowBuilder,
    list_fragments,
)

pytestmark = pytest.mark.anyio


@executor(id="greet")
async def greet(name: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(f"hello {name}")


@executor(id="exclaim")
async def exclaim(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text + "!")


@executor(id="show")
async def show(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def greeting() -> WorkflowBuilder:
    return WorkflowBuilder("greeting").add_edge(greet, exclaim).set_start(greet)


GREETING = Fragment(
    "demo.greeting",
    greeting,
    version="1.2.0",
    input_types=[str],
    output_types=[str],
    description="greets a name",
)
UNDECLARED = Fragment(
    "demo.shout", lambda: SequentialBuilder("shout").participants([exclaim]), version="0.1"
)


class DemoFragments:
    """An in-process plugin publishing two fragments."""

    @plait.hookimpl
    def plait_register_fragments(self, register: Register) -> None:
        register(GREETING.name, GREETING)
        register(UNDECLARED.name, UNDECLARED)


@pytest.fixture
def published() -> Iterator[PluginManager]:
    manager = get_plugin_manager()
    name = manager.register(DemoFragments(), "demo-fragments")
    try:
        yield manager
    finally:
        manager.unregister(name)


async def test_a_published_fragment_composes_by_name(published: PluginManager) -> None:
    builder = WorkflowBuilder()
    handle = builder.add_workflow("demo.greeting")
    assert handle.prefix == "demo.greeting"
    assert handle.start.executor_id == "demo.greeting/greet"
    again = builder.add_workflow("demo.greeting", prefix="again")
    builder.connect(handle, again).connect(again, show).set_start(handle.start)
    assert (await builder.build().run("ada")).outputs == ["hello hello ada!!"]


def test_unknown_fragment_names_list_the_installed_ones(published: PluginManager) -> None:
    with pytest.raises(UnknownNameError) as info:
        WorkflowBuilder().add_workflow("demo.nope")
    assert "unknown fragment 'demo.nope' (for add_workflow)" in str(info.value)
    assert "demo.greeting" in str(info.value)


def test_list_fragments_gives_listing_data(published: PluginManager) -> None:
    infos = {info.name: info for info in list_fragments()}
    assert infos["demo.greeting"] == FragmentInfo(
        name="demo.greeting",
        version="1.2.0",
        distribution="(in-process)",
        plugin="demo-fragments",
        input_types=("str",),
        output_types=("str",),
        description="greets a name",
    )
    shout = infos["demo.shout"].to_dict()
    assert shout["input_types"] == ["str"] and shout["output_types"] == ["str"]
    assert list(infos) == sorted(infos)


def test_fragment_build_gives_a_fresh_builder_each_time() -> None:
    first, second = GREETING.build(), GREETING.build()
    assert first is not second and list(first._executors) == ["greet", "exclaim"]
    assert isinstance(UNDECLARED.build(), WorkflowBuilder)
    assert GREETING.contract == Contract((str,), (str,))
    assert UNDECLARED.contract.input_types == (str,)


async def test_a_fragment_object_composes_directly() -> None:
    builder = WorkflowBuilder()
    handle = builder.add_workflow(GREETING)
    builder.connect(handle, show).set_start(handle.start)
    assert (await builder.build().run("bo")).outputs == ["hello bo!"]


def test_a_factory_must_return_a_builder() -> None:
    broken = Fragment("demo.broken", lambda: 42, version="1")
    with pytest.raises(CompositionError, match="'demo.broken': its factory must return"):
        broken.build()
    with pytest.raises(CompositionError, match="'demo.broken': its factory must return"):
        WorkflowBuilder().add_workflow(broken)


def test_the_kernel_checks_fragments_have_build() -> None:
    class NotAFragment:
        @plait.hookimpl
        def plait_register_fragments(self, register: Register) -> None:
            register("demo.bad", object())

    manager = PluginManager(entry_points=[])
    with pytest.raises((RegistrationError, PluginLoadError), match="lacks build"):
        manager.register(NotAFragment(), "bad-fragments")
