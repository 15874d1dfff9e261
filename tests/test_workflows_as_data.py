"""A workflow is data: its spec round-trips through JSON and rebuilds in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import data_workflows
import plait
import pytest
from plait import (
    LoadError,
    Never,
    NotPortableError,
    Workflow,
    WorkflowContext,
    WorkflowSpec,
    WorkflowValidationError,
    executor,
)
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder

HERE = Path(__file__).parent

REBUILD = """
import json, sys
from plait import Workflow, WorkflowSpec
import data_workflows
spec = WorkflowSpec.from_json(sys.stdin.read())
workflow = Workflow.from_spec(spec)
print(json.dumps({"signature": workflow.signature(), "outputs": data_workflows.outputs(workflow)}))
"""


def rebuild_in_a_fresh_process(spec_json: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", REBUILD],
        input=spec_json,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_built_workflow_rebuilds_from_json_in_a_fresh_process() -> None:
    original = data_workflows.build()
    text = original.spec.to_json()
    spec = json.loads(text)
    conditions = {g["id"]: g["options"] for g in spec["edge_groups"]}
    assert conditions["conditional:score->tagged"]["condition"] == {"expr": "size(tags) > 1"}
    assert conditions["conditional:score->loud"]["condition"] == {"ref": "data_workflows:is_loud"}
    rebuilt = rebuild_in_a_fresh_process(text)
    assert rebuilt["signature"] == original.signature()
    assert rebuilt["outputs"] == data_workflows.outputs(original)
    assert data_workflows.outputs(original) == [
        ["short:hi"],
        ["long:hello world", "tagged:hello,world"],
        ["long:SHOUTING NOW", "loud:SHOUTING NOW", "tagged:SHOUTING,NOW"],
    ]


def test_a_spec_written_by_hand_runs_the_same() -> None:
    original = data_workflows.build()
    by_hand = {
        "name": "as-data",
        "start": "score",
        "retry": {"max_attempts": 1, "delay": 0},
        "nodes": [
            {"id": name, "kind": "python", "config": {"ref": f"data_workflows:{name}"}}
            for name in ("score", "fan", "short", "long", "tagged", "loud")
        ],
        "edge_groups": [
            {
                "id": "direct:score->fan",
                "router": "direct",
                "sources": ["score"],
                "targets": ["fan"],
            },
            {
                "id": "switch:fan->short,long",
                "router": "switch",
                "sources": ["fan"],
                "targets": ["short", "long"],
                "options": {
                    "case_targets": ["short", "long"],
                    "default": None,
                    "cases": [{"expr": "score <= 5"}, {"expr": "score > 5"}],
                },
            },
            {
                "id": "conditional:score->tagged",
                "router": "conditional",
                "sources": ["score"],
                "targets": ["tagged"],
                "options": {"condition": {"expr": "size(tags) > 1"}},
            },
            {
                "id": "conditional:score->loud",
                "router": "conditional",
                "sources": ["score"],
                "targets": ["loud"],
                "options": {"condition": {"ref": "data_workflows:is_loud"}},
            },
        ],
    }
    workflow = Workflow.from_spec(WorkflowSpec.from_dict(by_hand))
    assert data_workflows.outputs(workflow) == data_workflows.outputs(original)
    rebuilt = rebuild_in_a_fresh_process(json.dumps(by_hand))
    assert rebuilt["outputs"] == data_workflows.outputs(original)
    assert rebuilt["signature"] == workflow.signature()


def test_policies_travel_with_the_spec() -> None:
    spec = data_workflows.build().spec
    assert spec.retry is not None and spec.retry["max_attempts"] == 1
    assert spec.node("loud").timeout == 5.0
    again = WorkflowSpec.from_json(spec.to_json())
    assert again == spec and again.signature() == spec.signature()


@executor(id="a")
async def a(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


@executor(id="b")
async def b(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def test_a_lambda_runs_in_process_but_is_named_when_serialised() -> None:
    workflow = WorkflowBuilder().add_edge(a, b, condition=lambda t: t != "no").set_start(a).build()
    assert workflow.run_sync("yes").outputs == ["yes"]
    assert workflow.run_sync("no").outputs == []
    with pytest.raises(NotPortableError) as info:
        workflow.spec.to_json()
    assert "edge group 'conditional:a->b' condition" in str(info.value)
    assert "it is a lambda" in str(info.value)
    assert '"nonportable"' in workflow.spec.to_json(portable=False)  # for display
    with pytest.raises(WorkflowValidationError, match=r"conditional:a->b.*it is a lambda"):
        Workflow.from_spec(workflow.spec)


def test_a_closure_executor_is_named_when_rebuilt() -> None:
    @executor(id="inner")
    async def inner(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)

    workflow = WorkflowBuilder().add_edge(a, inner).set_start(a).build()
    assert workflow.spec.node("inner").nonportable is not None
    with pytest.raises(LoadError) as info:
        Workflow.from_spec(workflow.spec)
    message = str(info.value)
    assert "/nodes/1" in message and "'inner'" in message and "inside a function" in message
    # given in Python, the same node rebuilds and runs
    again = Workflow.from_spec(workflow.spec, {"inner": inner})
    assert again.run_sync("hi").outputs == ["hi"] and again.signature() == workflow.signature()


def test_untrusted_specs_import_nothing() -> None:
    spec = data_workflows.build().spec
    with pytest.raises(LoadError) as info:
        Workflow.from_spec(spec, allow_imports=False)
    assert "/nodes/0/config/ref" in str(info.value)


def test_every_bad_node_is_reported_with_its_json_path() -> None:
    spec = WorkflowSpec.from_dict(
        {
            "name": None,
            "start": "x",
            "nodes": [
                {"id": "x", "kind": "shell", "config": {"argv": "echo hi", "timout": 3}},
                {"id": "y", "kind": "nonesuch"},
            ],
            "edge_groups": [
                {"id": "direct:x->y", "router": "direct", "sources": ["x"], "targets": ["y"]}
            ],
        }
    )
    with pytest.raises(LoadError) as info:
        Workflow.from_spec(spec)
    paths = [p.position.path for p in info.value.problems]  # type: ignore[attr-defined]
    assert "/nodes/0/config/argv" in paths
    assert any(p.startswith("/nodes/0/config") and p != "/nodes/0/config/argv" for p in paths)
    assert "/nodes/1/kind" in paths
    assert "did you mean 'timeout'" in str(info.value)


class SpecLoader:
    """A loader for this test: a document is a WorkflowSpec as JSON."""

    suffixes = (".spec.json",)
    options = ("name",)

    def detect(self, text: str) -> bool:
        return text.lstrip().startswith("{") and '"edge_groups"' in text

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        try:
            return WorkflowSpec.from_json(text)
        except ValueError as exc:
            raise LoadError([plait.errors.ConfigError(str(exc))], source=ctx.source) from exc


class SpecLoaderPlugin:
    @plait.hookimpl
    def plait_register_loaders(self, register: Any) -> None:
        register("spec", SpecLoader())


def test_plait_load_picks_a_loader_and_binds_python_executors(register_plugin: Any) -> None:
    register_plugin(SpecLoaderPlugin(), "spec-loader")
    spec = WorkflowBuilder().add_edge(a, b).set_start(a).build().spec
    text = spec.to_json()
    # detected; executors by name: nothing is imported from an untrusted text
    workflow = plait.load(text, executors={"a": a, "b": b})
    assert workflow.run_sync("hey").outputs == ["hey"]
    with pytest.raises(LoadError, match="<string> at /nodes/0: node 'a' .*needs imports"):
        plait.load(text)
    assert plait.load(text, allow_imports=True).run_sync("ok").outputs == ["ok"]
    with pytest.raises(plait.errors.UnknownNameError, match="unknown workflow format 'nope'"):
        plait.load(text, format="nope")


def test_plait_load_reads_paths(register_plugin: Any, tmp_path: Path) -> None:
    register_plugin(SpecLoaderPlugin(), "spec-loader")
    path = tmp_path / "w.spec.json"
    path.write_text(WorkflowBuilder().add_edge(a, b).set_start(a).build().spec.to_json())
    assert plait.load(path, executors={"a": a, "b": b}).run_sync("p").outputs == ["p"]
    assert plait.load(str(path), executors={"a": a, "b": b}).run_sync("s").outputs == ["s"]
    with pytest.raises(LoadError, match="cannot tell the format"):
        plait.load("?? not any format ??")


def test_a_loader_s_declared_options_are_the_only_ones_accepted(register_plugin: Any) -> None:
    register_plugin(SpecLoaderPlugin(), "spec-loader")
    text = WorkflowBuilder().add_edge(a, b).set_start(a).build().spec.to_json()
    with pytest.raises(
        LoadError, match=r"unknown option\(s\) for the spec loader: nmae; accepted: name"
    ):
        plait.load(text, executors={"a": a, "b": b}, nmae="x")


class Shouting:
    """A kind that builds its node itself, whatever the caller passes."""

    config_schema: dict[str, Any] = {"type": "object"}

    def check(self, config: Any, ctx: Any) -> list[Any]:
        return []

    def create(self, config: Any, ctx: Any) -> Any:
        @executor(id=ctx.node_id)
        async def shout(text: str, c: WorkflowContext[Never, str]) -> None:
            await c.yield_output(text.upper())

        return shout


class Binding(Shouting):
    """The same, but a passed executor stands for its node (as the ``python`` kind does)."""

    binds_passed_executors = True


class KindsPlugin:
    @plait.hookimpl
    def plait_register_executor_kinds(self, register: Any) -> None:
        register("test.shouting", Shouting())
        register("test.binding", Binding())


@executor(id="echo")
async def echo(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def test_a_kind_says_whether_a_passed_executor_stands_for_its_node(register_plugin: Any) -> None:
    register_plugin(KindsPlugin(), "kinds")
    for kind, expected in (("test.shouting", ["HI"]), ("test.binding", ["hi"])):
        spec = WorkflowSpec.from_dict(
            {
                "name": None,
                "start": "echo",
                "nodes": [{"id": "echo", "kind": kind}],
                "edge_groups": [],
            }
        )
        workflow = Workflow.from_spec(spec, {"echo": echo})
        assert workflow.run_sync("hi").outputs == expected, kind
    # a kind nobody registers: the passed executor is bound
    spec = WorkflowSpec.from_dict(
        {
            "name": None,
            "start": "echo",
            "nodes": [{"id": "echo", "kind": "test.absent"}],
            "edge_groups": [],
        }
    )
    assert Workflow.from_spec(spec, {"echo": echo}).run_sync("hi").outputs == ["hi"]
