"""An edge that does not type-check is a TypeCheckError, reported with every other problem."""

from __future__ import annotations

from typing import Any

import plait_merge
import plait_routing
import pytest
from plait import Never, TypeCheckError, WorkflowContext, WorkflowValidationError, executor
from plait.spi import PluginManager
from plait_builders import WorkflowBuilder
from plait_testing import RegisterPlugin


@pytest.fixture(autouse=True)
def routers(plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin) -> None:
    register_plugin(plait_routing, "routing")
    register_plugin(plait_merge, "merge")


def sender(id: str, out: Any) -> Any:
    async def send(x: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(x)

    send.__annotations__.update(x=out, ctx=WorkflowContext[out])  # type: ignore[valid-type]
    return executor(send, id=id)


def sink(id: str, accepts: Any) -> Any:
    async def take(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(x)

    take.__annotations__["x"] = accepts
    return executor(take, id=id)


def test_an_edge_that_does_not_type_check_raises_type_check_error() -> None:
    builder = WorkflowBuilder().add_edge(sender("a", int), sink("b", bytes)).set_start("a")
    with pytest.raises(TypeCheckError) as info:
        builder.build()
    assert isinstance(info.value, WorkflowValidationError)
    (problem,) = info.value.problems
    assert problem.startswith("edge group 'direct:a->b': 'b' cannot handle int")


def test_type_problems_and_structural_problems_come_in_one_type_check_error() -> None:
    builder = WorkflowBuilder().add_edge(sender("a", int), sink("b", bytes))
    builder.add_edge(sender("c", str), sink("d", bytes)).set_start("a")
    with pytest.raises(TypeCheckError) as info:
        builder.build()
    problems = info.value.problems
    assert [p.split(":")[0:2] for p in problems if "cannot handle" in p] == [
        ["edge group 'direct", "a->b'"],
        ["edge group 'direct", "c->d'"],
    ]
    assert "unreachable executor(s) from start 'a': c, d" in problems


def test_a_graph_that_type_checks_but_is_malformed_is_not_a_type_check_error() -> None:
    builder = WorkflowBuilder().add_edge(sender("a", int), sink("b", int))
    builder.add_executor(sink("lonely", int)).set_start("a")
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    assert not isinstance(info.value, TypeCheckError)
    assert any("lonely" in p for p in info.value.problems)
