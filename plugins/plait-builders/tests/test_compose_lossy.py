"""connect() and lossy converters: a lossy-only path needs allow_lossy on that connection."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import plait
import pytest
from plait import Never, WorkflowContext, WorkflowValidationError, executor
from plait.spi import Converter, PluginManager, Register
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio


@dataclasses.dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str


def transcript(messages: list[ChatMessage]) -> str:
    """Lossy: the roles are dropped."""
    return "\n".join(m.content for m in messages)


class ChatConverters:
    """An in-process plugin with the only converter from list[ChatMessage] to str."""

    @plait.hookimpl
    def plait_register_converters(self, register: Register) -> None:
        register(
            "test.transcript",
            Converter(list[ChatMessage], str, transcript, lossless=False, name="test.transcript"),
        )


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    """Installed plugins plus the chat converter, without touching the process-wide one."""
    manager = PluginManager()
    manager.register(ChatConverters(), "test-chat-converters")
    yield manager


@executor(id="chat")
async def chat(prompt: str, ctx: WorkflowContext[list[ChatMessage]]) -> None:
    await ctx.send_message([ChatMessage("user", prompt), ChatMessage("assistant", "hi there")])


@executor(id="reply")
async def reply(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def composed(manager: PluginManager, *, allow_lossy: bool) -> WorkflowBuilder:
    agent = WorkflowBuilder("agent").set_start(chat).add_executor(chat)
    output = WorkflowBuilder("output").set_start(reply).add_executor(reply)
    builder = WorkflowBuilder(plugin_manager=manager)
    agent_handle = builder.add_workflow(agent)
    output_handle = builder.add_workflow(output)
    builder.connect(agent_handle, output_handle, allow_lossy=allow_lossy)
    return builder.set_start(agent_handle.start)


def test_a_lossy_only_path_fails_without_permission(manager: PluginManager) -> None:
    with pytest.raises(WorkflowValidationError) as info:
        composed(manager, allow_lossy=False).build()
    message = str(info.value)
    assert "direct:agent/chat->output/reply" in message
    assert "test.transcript" in message and "lossy" in message
    assert "allow_lossy=True" in message


async def test_allow_lossy_on_connect_inserts_the_converter(manager: PluginManager) -> None:
    workflow = composed(manager, allow_lossy=True).build()
    converters = [n for n in workflow.spec.node_ids if n.startswith("convert:")]
    assert len(converters) == 1 and converters[0].endswith(":test.transcript")
    group = next(g for g in workflow.spec.edge_groups if g.sources == ("agent/chat",))
    assert group.options["allow_lossy"] is True
    assert (await workflow.run("hello")).outputs == ["hello\nhi there"]
    assert "{{" in workflow.to_mermaid()  # the converter is drawn as its own shape


async def test_a_built_workflow_with_a_converter_node_composes_twice(
    manager: PluginManager,
) -> None:
    built = composed(manager, allow_lossy=True).build()
    builder = WorkflowBuilder(plugin_manager=manager)
    one = builder.add_workflow(built, prefix="one")
    two = builder.add_workflow(built, prefix="two")

    @executor(id="fork")
    async def fork(prompt: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(prompt)

    builder.add_fan_out(fork, [one.start, two.start]).set_start(fork)
    workflow = builder.build()
    clones = [n for n in workflow.spec.node_ids if "/convert:" in n]
    assert [c.split("/")[0] for c in clones] == ["one", "two"]
    assert workflow.executors[clones[0]].id == clones[0]
    assert sorted((await workflow.run("yo")).outputs) == ["yo\nhi there", "yo\nhi there"]
    original = next(n for n in built.spec.node_ids if n.startswith("convert:"))
    assert built.executors[original].id == original  # the source keeps its nodes
