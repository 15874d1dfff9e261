"""Registration: the loader and kinds are found, and registering imports no lark."""

from __future__ import annotations

import subprocess
import sys

import plait
import plait_flow
from plait import ConfigError
from plait.spi import BuildContext
from plait_flow import FlowJoin, FlowLoader, FlowOutput
from plait_flow._kinds import FlowJoinKind, FlowOutputKind


def test_the_loader_and_kinds_are_registered() -> None:
    manager = plait.get_plugin_manager()
    assert isinstance(manager.registry("loader").get("flow"), FlowLoader)
    assert manager.registry("loader").get("flow").suffixes == (".flow", ".flow.yaml", ".flow.yml")
    kinds = manager.registry("executor_kind")
    # registered lazily: the kinds' module is imported when a flow first builds a node
    assert isinstance(kinds.get("flow.output").resolve(), FlowOutputKind)
    assert isinstance(kinds.get("flow.join").resolve(), FlowJoinKind)


def test_registering_imports_no_lark_and_the_first_load_does() -> None:
    code = (
        "import sys, plait, plait_flow\n"
        "m = plait.get_plugin_manager()\n"
        "m.registry('loader').get('flow')\n"
        "print('lark' in sys.modules)\n"
        "async def a(t: str) -> str:\n    return t\n"
        "plait.load('a -> a', format='flow', executors={'a': a})\n"
        "print('lark' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_kinds_take_no_config_and_build_their_executors() -> None:
    ctx = BuildContext(node_id="flow:output")
    kind = FlowOutputKind()
    assert kind.check({}, ctx) == []
    (problem,) = kind.check({"x": 1}, ctx)
    assert isinstance(problem, ConfigError) and problem.path == "/config/x"
    output = kind.create({}, ctx)
    assert isinstance(output, FlowOutput) and output.id == "flow:output"
    join = FlowJoinKind().create({}, BuildContext(node_id="flow:join"))
    assert isinstance(join, FlowJoin) and join.plait_kind == "flow.join"


def test_detect() -> None:
    loader = plait_flow.FlowLoader()
    assert loader.detect("a -> [b, c]")
    assert not loader.detect('{"nodes": [], "x": "a -> b"}')
    assert not loader.detect("steps:\n  - id: a\n    run: a -> b\n")
    assert not loader.detect("just words")


def test_a_spec_round_trips_through_json_and_rebuilds() -> None:
    async def a(text: str) -> str:
        return text + "!"

    workflow = plait.load("[a, a] -> a", format="flow", executors={"a": a}, merge="concat")
    again = plait.Workflow.from_spec(
        plait.WorkflowSpec.from_json(workflow.spec.to_json(portable=False)), {"a": a}
    )
    assert again.signature() == workflow.signature()
    assert again.run_sync("x").outputs == ["x! x!!"]
