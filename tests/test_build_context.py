"""One build-context type: loaders, executor kinds and routers all get a BuildContext."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plait
import pytest
from plait import ConfigError, Executor, WorkflowContext, WorkflowSpec, handler
from plait.spi import BuildContext


class Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(text)


seen: dict[str, Any] = {}


class EchoKind:
    config_schema: Mapping[str, Any] = {"type": "object"}
    capabilities = ()

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        seen["kind"] = ctx
        return []

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return Echo(ctx.node_id)


class OneLineLoader:
    suffixes = (".oneline",)

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        seen["loader"] = ctx
        data = {
            "name": "one",
            "start": text.strip(),
            "nodes": [{"id": text.strip(), "kind": "test.echo", "config": {}}],
            "edge_groups": [],
        }
        return WorkflowSpec.from_dict(data)


class Plugin:
    @plait.hookimpl
    def plait_register_executor_kinds(self, register: Any) -> None:
        register("test.echo", EchoKind())

    @plait.hookimpl
    def plait_register_loaders(self, register: Any) -> None:
        register("test.oneline", OneLineLoader())


@pytest.fixture
def plugin() -> Any:
    seen.clear()
    instance = Plugin()
    plait.register(instance)
    yield instance
    plait.unregister(instance)


def test_loaders_and_kinds_get_one_build_context(plugin: Any) -> None:
    wf = plait.load("shout", format="test.oneline")
    assert plait.Workflow.run_sync(wf, "hi").outputs == ["hi"]
    loader_ctx, kind_ctx = seen["loader"], seen["kind"]
    assert type(loader_ctx) is BuildContext and type(kind_ctx) is BuildContext
    assert loader_ctx.source == "<string>" and loader_ctx.allow_imports is False
    assert "test.echo" in loader_ctx.names
    assert kind_ctx.node_id == "shout" and kind_ctx.allow_imports is False


def test_for_node_keeps_the_rest_of_the_context() -> None:
    ctx = BuildContext(source="flow.yaml", executors={"a": 1}, allow_imports=True)
    node = ctx.for_node("b", allow_imports=False)
    assert (node.node_id, node.source, node.executors, node.allow_imports) == (
        "b",
        "flow.yaml",
        {"a": 1},
        False,
    )
    assert ctx.for_node("c").allow_imports is True
