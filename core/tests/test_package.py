"""``import plait`` is lazy (PEP 562) yet every public name works as before (issue 9), and
loading the installed plugins imports each one's registration module only (issue 20).

The import checks run in fresh interpreters: this process has imported everything.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import types
from typing import Any

import plait
import pytest
from plait_testing.exports import declared_for_type_checkers


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
    else:
        home = declared_for_type_checkers(plait)[name]
        assert home.startswith("plait._")
        assert value is getattr(importlib.import_module(home), name)
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


#: What loading every installed plugin (``plait.get_plugin_manager()``, which every ``plait``
#: command and every build pays) must not import: what a plugin registers is imported when
#: that name is first used (``plait.spi.lazy``), so only the small module each entry point
#: names is imported. importlib.metadata (and zipfile, email, csv … under it) and packaging
#: are not here: the ``plait-core`` requirement check reads each plugin's METADATA with them.
NOT_WHEN_LOADING = [
    # the kernel's IR and its build and run machinery
    "plait._spec",
    "plait._workflow",
    "plait._graph",
    "plait._building",
    "plait._placement",
    "plait._routing",
    "plait._convert",
    "plait._runner",
    "plait._events",
    "asyncio",
    "difflib",
    # what first-party plugins register (their registration modules are imported)
    "plait_steps._base",
    "plait_steps._context",
    "plait_steps._executors",
    "plait_steps._foreach",
    "plait_steps._loader",
    "plait_steps._paths",
    "plait_routing._routers",
    "plait_flow._kinds",
    "plait_flow._compile",
    "plait_export._graph",
    "plait_ray.errors",
    "plait_ray._placement",
    "plait_documents._capabilities",
    "plait_documents._load",
    "plait_documents.build",
    "plait_dag._loader",
    "plait_dag._node",
    "plait_executors.python",
    "plait_cli._app",
    "plait_builders._builder",
    "plait_converters._standard",
    "plait_converters._graph",
    "plait_pipeline._pipeline",
    "plait_durable.checkpoint",
    "plait_durable.codec",
    "plait_durable._pydantic",
    "pydantic",
    "plait_textkit._kit",
    "plait_plugin_template._converter",
]


@pytest.fixture(scope="module")
def imported_by_loading() -> dict[str, Any]:
    report = _fresh(
        """
        import json, sys
        import plait

        before = set(sys.modules)
        manager = plait.get_plugin_manager()
        for kind in sorted({k for info in manager.describe() for k in info.registered}):
            if kind != "hook":
                manager.registry(kind)  # every registry that holds something, built
        manager.durability("the test"), manager.documents("the test")  # the one of each
        loaded = [i.name for i in manager.describe() if i.status == "loaded" and i.registered]
        imported = sorted(set(sys.modules) - before)
        print(json.dumps({"imported": imported, "registering": loaded}))
        """
    )
    assert isinstance(report["imported"], list) and isinstance(report["registering"], list)
    return report


@pytest.mark.parametrize("module", NOT_WHEN_LOADING)
def test_loading_the_plugins_imports_none_of_what_they_register(
    imported_by_loading: dict[str, Any], module: str
) -> None:
    assert module not in imported_by_loading["imported"]


def test_the_plugins_that_register_those_names_were_loaded(
    imported_by_loading: dict[str, Any],
) -> None:
    # the check would pass in silence if no plugin were installed. Whether loading imports
    # a plugin's registration module depends on its manifest (a later process registers
    # it from the manifest, importing nothing), so what is checked is that they loaded
    # and registered what they register
    assert {"steps", "flow", "export", "dag"} <= set(imported_by_loading["registering"])


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
        running = ["plait._runner", "plait_durable._durable", "plait_durable.codec",
                   "plait._streaming", "plait_durable._resume", "plait_durable.checkpoint",
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


@pytest.mark.parametrize("surface", ["plait", "plait.spi"])
def test_the_names_type_checkers_see_are_the_names_imported_at_run_time(surface: str) -> None:
    from plait_testing.exports import check_exports

    check_exports(importlib.import_module(surface))


def _lazily_exporting() -> list[str]:
    """Every installed plugin package (and plait_testing) whose exports come from
    :func:`plait.spi.lazy_exports`."""
    from importlib.metadata import entry_points

    names = {ep.value.split(":")[0].split(".")[0] for ep in entry_points(group="plait")}
    found = []
    for name in sorted(names | {"plait_testing"}):
        getter = getattr(importlib.import_module(name), "__getattr__", None)
        if getattr(getter, "__module__", None) == "plait._exports":
            found.append(name)
    return found


@pytest.mark.parametrize("package", _lazily_exporting())
def test_every_plugin_exports_what_its_type_checking_block_declares(package: str) -> None:
    from plait_testing.exports import check_exports

    module = importlib.import_module(package)
    defined = {
        name
        for name, value in vars(module).items()
        if callable(value) and getattr(value, "__module__", None) == package
    }
    check_exports(module, run_time_only=defined)


def test_the_first_party_plugins_export_through_the_one_helper() -> None:
    # the check above would pass in silence if no plugin used the helper
    assert {"plait_durable", "plait_steps", "plait_cli", "plait_testing"} <= set(
        _lazily_exporting()
    )
