"""The workflow kind: a published fragment (or an inline spec) running as one executor."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import plait
import plait_catalog
import plait_executors
import plait_routing
import pytest
from executors_helpers import build, chain, paths
from plait import Never, WorkflowContext, executor
from plait.spi import BuildContext, PluginManager, set_plugin_manager
from plait_builders import Fragment, WorkflowBuilder
from plait_executors import WorkflowKind

pytestmark = pytest.mark.anyio
KIND = WorkflowKind()


@executor(id="words")
async def words(text: str, ctx: WorkflowContext[str]) -> None:
    for word in text.split():
        await ctx.send_message(word)


@executor(id="shout")
async def shout(word: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(word.upper())


def shouting() -> WorkflowBuilder:
    return WorkflowBuilder("shouting").add_edge(words, shout).set_start(words)


@plait.hookimpl
def plait_register_fragments(register: Any) -> None:
    register("demo.shout", Fragment("demo.shout", shouting, version="1.0"))


@pytest.fixture
def manager() -> Iterator[PluginManager]:
    """A fresh process-wide manager publishing ``demo.shout`` (and the routers it needs)."""
    fresh = PluginManager(entry_points=[], disabled=[])
    fresh.register(plait_routing, "routing")
    fresh.register(SimpleNamespace(plait_register_fragments=plait_register_fragments), "demo")
    previous = set_plugin_manager(fresh)
    try:
        yield fresh
    finally:
        set_plugin_manager(previous)


async def test_a_published_fragment_runs_as_one_executor(manager: PluginManager) -> None:
    node = build(KIND, {"fragment": "demo.shout"}, "loud", manager=manager)
    result = await chain(node).run("a b c")
    assert result.outputs == ["A", "B", "C"]
    assert result.supersteps == 2  # the inner supersteps run inside one outer superstep


async def test_without_a_manager_the_process_wide_one_is_used(manager: PluginManager) -> None:
    node = build(KIND, {"fragment": "demo.shout", "allow_direct_output": True}, "loud")
    result = await WorkflowBuilder().set_start(node).add_executor(node).build().run("x y")
    assert result.outputs == ["X", "Y"]  # yielded as the outer workflow's outputs


def test_an_unknown_fragment_lists_the_installed_ones(manager: PluginManager) -> None:
    (error,) = KIND.check({"fragment": "demo.shuot"}, BuildContext(node_id="n", manager=manager))
    assert error.path == "/config/fragment"
    assert "did you mean 'demo.shout'?" in str(error) and "installed: demo.shout" in str(error)


def test_exactly_one_of_fragment_and_spec(manager: PluginManager) -> None:
    ctx = BuildContext(node_id="n", manager=manager)
    for config in ({}, {"fragment": "demo.shout", "spec": {}}):
        (error,) = KIND.check(config, ctx)
        assert error.path == "/config" and "exactly one of 'fragment'" in str(error)


def test_config_errors_carry_json_paths_all_at_once() -> None:
    errors = KIND.check(
        {"fragment": "", "spec": [], "allow_direct_output": "yes", "fragmnet": "x"},
        BuildContext(node_id="nest"),
    )
    assert paths(errors) == [
        "/config/allow_direct_output",
        "/config/fragment",
        "/config/fragmnet",
        "/config/spec",
    ]
    assert "did you mean 'fragment'?" in str(errors[2])


# -- the spec form (Workflow.from_spec) ------------------------------------------------------


def shouting_spec() -> dict[str, Any]:
    """The ``shouting`` workflow as data: its nodes are python-kind refs to this module."""
    return shouting().build().spec.to_dict()


async def test_an_inline_spec_is_rebuilt_and_runs_as_one_executor(manager: PluginManager) -> None:
    manager.register(plait_executors, "executors")
    config = {"spec": shouting_spec()}
    node = build(KIND, config, "inline", manager=manager)
    result = await chain(node).run("d e")
    assert result.outputs == ["D", "E"]


def test_an_inline_spec_keeps_the_outer_documents_trust(manager: PluginManager) -> None:
    manager.register(plait_executors, "executors")
    untrusted = BuildContext(node_id="inline", manager=manager, allow_imports=False)
    errors = KIND.check({"spec": shouting_spec()}, untrusted)
    assert paths(errors) == ["/config/spec/nodes/0/config/ref", "/config/spec/nodes/1/config/ref"]
    assert all("imports are not allowed" in str(e) for e in errors)


def test_an_inline_spec_of_the_wrong_shape_is_an_error_at_its_path() -> None:
    (error,) = KIND.check({"spec": {"nodes": "none"}}, BuildContext(node_id="inline"))
    assert error.path == "/config/spec" and "not a workflow spec" in str(error)


# -- nesting: built once per load, and bounded ------------------------------------------------


def nested_spec(depth: int) -> dict[str, Any]:
    """``depth`` workflow nodes, each holding the next level's spec; the last runs ``shout``
    (passed by the caller, bound to the python node)."""
    spec: dict[str, Any] = {
        "name": "leaf",
        "start": "shout",
        "nodes": [{"id": "shout", "kind": "python", "config": {"ref": "nowhere:shout"}}],
        "edge_groups": [],
    }
    for level in range(depth):
        node = {"id": "nest", "kind": "workflow", "config": {"spec": spec}}
        node["config"]["allow_direct_output"] = True
        spec = {"name": f"level{level}", "start": "nest", "nodes": [node], "edge_groups": []}
    return spec


async def test_a_nested_spec_is_built_once_per_load() -> None:
    # check and create each built the nested workflow, so each level was built twice per
    # level above it (2**depth builds in all)
    from plait.spi import load_scope

    depth = 12
    with load_scope() as scope:
        workflow = plait.Workflow.from_spec(
            plait.WorkflowSpec.from_dict(nested_spec(depth)), {"shout": shout}
        )
    assert scope.builds == depth + 1
    assert (await workflow.run("deep")).outputs == ["DEEP"]


def test_nesting_is_bounded_with_an_error_at_its_path() -> None:
    from plait import LoadError
    from plait.spi import MAX_NESTING

    spec = plait.WorkflowSpec.from_dict(nested_spec(MAX_NESTING + 3))
    with pytest.raises(LoadError) as info:
        plait.Workflow.from_spec(spec, {"shout": shout})
    (problem,) = info.value.problems
    assert f"workflows nest more than {MAX_NESTING} deep" in str(problem)
    assert getattr(problem, "path", "").count("/config/spec") == MAX_NESTING
    assert str(problem).count("in the nested spec") == 1  # the path says how deep


def test_the_nodes_a_load_builds_are_bounded() -> None:
    from plait import LoadError
    from plait.spi import load_scope

    with load_scope() as scope:  # the load from_spec goes on, with a lower bound
        scope.max_nodes = 5
        spec = plait.WorkflowSpec.from_dict(nested_spec(4))  # 5 nodes: within the bound
        assert plait.Workflow.from_spec(spec, {"shout": shout}).spec == spec
    with load_scope() as scope:
        scope.max_nodes = 5
        spec = plait.WorkflowSpec.from_dict(nested_spec(5))  # 6 nodes
        with pytest.raises(LoadError, match="expands to more than 5 nodes, nested workflows"):
            plait.Workflow.from_spec(spec, {"shout": shout})


def test_as_executor_wraps_through_the_workflow_kind() -> None:
    from plait_executors import WorkflowExecutor

    nested = shouting().build().as_executor("loud", allow_direct_output=True)
    assert isinstance(nested, WorkflowExecutor) and nested.id == "loud"
    assert nested.allow_direct_output is True


def test_as_executor_names_the_distribution_to_install(plait_plugin_manager: Any) -> None:
    from plait import UnknownNameError

    plait_plugin_manager.register(plait_catalog, "catalog")  # says where a name comes from
    workflow = plait.Workflow(
        plait.WorkflowSpec.from_dict(
            {"name": "bare", "start": "shout", "nodes": [{"id": "shout"}], "edge_groups": []}
        ),
        {"shout": shout},
    )
    with pytest.raises(UnknownNameError) as info:
        workflow.as_executor()
    assert "unknown executor kind 'workflow' (for Workflow.as_executor())" in str(info.value)
    assert "it comes with plait-executors (part of plait:" in str(info.value)
