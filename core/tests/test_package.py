"""``import plait`` is lazy (PEP 562) yet every public name works as before (issue 9).

The import checks run in fresh interpreters: this process has imported everything.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import types

import plait
import pytest


def _fresh(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("name", plait.__all__)
def test_every_public_name_is_the_object_its_module_defines(name: str) -> None:
    value = getattr(plait, name)
    if name == "__version__":
        assert value == plait.plugins.core_version()
    elif isinstance(value, types.ModuleType):
        assert value is importlib.import_module(f"plait._{name}")
    elif name == "executor":
        assert value is getattr(importlib.import_module(f"plait._{name}"), name)
    else:
        assert value is getattr(importlib.import_module(f"plait.{plait._LAZY[name]}"), name)
    assert name in dir(plait)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        plait.nothing_here  # type: ignore[attr-defined]  # noqa: B018


def test_import_plait_imports_neither_the_runner_nor_the_converter_graph() -> None:
    heavy = ["plait._workflow", "plait._convert", "plait._runner", "plait._events", "asyncio"]
    # nor what plugin loading needs: importlib.metadata and packaging wait for first use
    heavy += ["importlib.metadata", "packaging", "plait._plugins"]
    report = _fresh(
        f"""
        import json, sys
        import plait
        print(json.dumps({{"loaded": sorted(set({heavy!r}) & set(sys.modules))}}))
        """
    )
    assert report["loaded"] == []


def test_building_a_workflow_imports_nothing_that_only_running_needs() -> None:
    report = _fresh(
        """
        import json, sys
        from plait import Never, WorkflowContext, executor
        from plait_builders import WorkflowBuilder

        @executor(id="a")
        async def a(x: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(x)

        @executor(id="b")
        async def b(x: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(x)

        workflow = WorkflowBuilder().add_edge(a, b).set_start(a).build()
        running = ["plait._runner", "plait_durable._durable", "plait._codec",
                   "plait._streaming", "plait_durable._resume", "plait._checkpoint",
                   "plait._events", "asyncio"]
        before = sorted(set(running) & set(sys.modules))
        result = workflow.run_sync(1)
        print(json.dumps({"before": before, "outputs": result.outputs,
                          "after": "plait._runner" in sys.modules}))
        """
    )
    assert report == {"before": [], "outputs": [1], "after": True}


def test_executor_and_load_stay_functions_after_their_modules_are_imported() -> None:
    report = _fresh(
        """
        import json
        import plait
        import plait._executor, plait._workflow  # the import system binds submodules on plait
        from plait import executor, load
        print(json.dumps({"callable": [callable(executor), callable(load)],
                          "modules": [type(plait.executor).__name__, type(plait.load).__name__]}))
        """
    )
    assert report == {"callable": [True, True], "modules": ["function", "function"]}
