"""Converter node ids, and so the topology signature, do not depend on how a script starts.

A workflow started with ``python app.py`` (its types live in module ``__main__``) must be
the same graph when ``plait resume app.py:workflow`` imports it as module ``app``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

APP = textwrap.dedent(
    """
    from __future__ import annotations

    import attrs
    import plait
    from plait import Never, WorkflowContext, executor
    from plait_builders import WorkflowBuilder
    from plait_converters import converter


    @attrs.frozen
    class Celsius:
        value: float


    @attrs.frozen
    class Kelvin:
        value: float


    @converter(lossless=True)
    def to_kelvin(c: Celsius) -> Kelvin:
        return Kelvin(c.value + 273.15)


    @executor(id="read")
    async def read(c: Celsius, ctx: WorkflowContext[Celsius]) -> None:
        await ctx.send_message(c)


    @executor(id="show")
    async def show(k: Kelvin, ctx: WorkflowContext[Never, Kelvin]) -> None:
        await ctx.yield_output(k)


    workflow = WorkflowBuilder().add_edge(read, show).set_start(read).build()


    def describe() -> str:
        ids = sorted(n.id for n in workflow.spec.nodes if n.id.startswith("convert:"))
        return workflow.spec.signature() + " " + " ".join(ids)


    if __name__ == "__main__":
        print(describe())
    """
)


def _run(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def imported(tmp_path: Path) -> str:
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    return _run(tmp_path, "-c", "import app; print(app.describe())")


def test_imported_app_names_its_converter_node_by_module_app(imported: str) -> None:
    signature, node_id = imported.split()
    assert node_id == "convert:app.Celsius->app.Kelvin:to_kelvin"
    assert len(signature) == 64


def test_python_app_py_builds_the_graph_that_importing_app_builds(
    tmp_path: Path, imported: str
) -> None:
    assert _run(tmp_path, "app.py") == imported


def test_python_m_app_builds_the_graph_that_importing_app_builds(
    tmp_path: Path, imported: str
) -> None:
    assert _run(tmp_path, "-m", "app") == imported


def test_a_script_inside_a_package_is_named_with_its_package(tmp_path: Path) -> None:
    package = tmp_path / "flows"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "app.py").write_text(APP, encoding="utf-8")
    imported = _run(tmp_path, "-c", "import flows.app; print(flows.app.describe())")
    assert imported.endswith("convert:flows.app.Celsius->flows.app.Kelvin:to_kelvin")
    assert _run(tmp_path, str(Path("flows") / "app.py")) == imported
