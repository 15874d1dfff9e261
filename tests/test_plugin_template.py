"""The plugin template works: a plugin generated from it installs, passes its tests, loads.

``contrib/plait-plugin-template/new_plugin.py`` generates ``plait-demo`` outside the
workspace; it is installed (with the kernel and plait-merge, built as wheels) into a fresh
venv, its own tests run there, and ``describe()`` — what ``plait plugins --json`` will
print — lists it as loaded with its registrations.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from venvtools import ROOT, install, make_venv, run

TEMPLATE = ROOT / "contrib" / "plait-plugin-template"

DESCRIBE = """\
import json

import attrs
import plait

print(json.dumps([attrs.asdict(p) for p in plait.plugins.describe()]))
"""


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("new_plugin", TEMPLATE / "new_plugin.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while decorating
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_a_generated_plugin_installs_passes_its_own_tests_and_loads(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    # the venv holds nothing yet: the generator needs only the standard library
    run([str(python), "-I", str(TEMPLATE / "new_plugin.py"), "demo", str(tmp_path)], tmp_path)
    plugin = tmp_path / "plait-demo"

    pyproject = (plugin / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "plait-demo"' in pyproject
    assert 'demo = "plait_demo"' in pyproject
    assert "workspace" not in pyproject  # outside the workspace plait-core comes from PyPI
    assert (plugin / "src" / "plait_demo" / "py.typed").is_file()
    assert (plugin / "tests" / "test_demo_plugin.py").is_file()
    assert not (plugin / "new_plugin.py").exists()
    for path in [plugin / "pyproject.toml", *plugin.rglob("*.py")]:
        assert "template" not in path.read_text(encoding="utf-8").lower(), path

    testing = ROOT / "plugins" / "plait-testing"
    install(python, [ROOT / "core", ROOT / "plugins" / "plait-merge", testing, plugin])
    install(python, ["trio"])
    tests = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], plugin)
    summary = tests.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed in [\d.]+s", summary), tests.stdout

    script = tmp_path / "describe_plugins.py"
    script.write_text(DESCRIBE, encoding="utf-8")
    described = json.loads(run([str(python), "-I", str(script)], tmp_path).stdout)
    plugins = {p["name"]: p for p in described}
    assert set(plugins) == {"demo", "merge"}
    assert plugins["demo"]["status"] == "loaded", plugins["demo"]["error"]
    assert plugins["demo"]["distribution"] == "plait-demo"
    assert plugins["demo"]["entry_point"] == "demo = plait_demo"
    assert plugins["demo"]["registered"] == {
        "merge_strategy": ["demo.longest"],
        "converter": ["demo.note_to_text"],
    }
    assert plugins["merge"]["status"] == "loaded"


def test_inside_the_workspace_the_plugin_keeps_the_workspace_source(tmp_path: Path) -> None:
    generator = _generator()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.uv.workspace]\nmembers = ["core", "plugins/*"]\n', encoding="utf-8"
    )
    inside = generator.generate("my-thing", tmp_path / "plugins", template=TEMPLATE)
    outside = generator.generate("my-thing", tmp_path / "elsewhere", template=TEMPLATE)

    kept = (inside / "pyproject.toml").read_text(encoding="utf-8")
    assert "plait-core = { workspace = true }" in kept
    assert 'my-thing = "plait_my_thing"' in kept
    assert "workspace" not in (outside / "pyproject.toml").read_text(encoding="utf-8")
    package = inside / "src" / "plait_my_thing"
    source = (package / "__init__.py").read_text(encoding="utf-8")
    assert '"my-thing.longest"' in source and '"my-thing.note_to_text"' in source
    # the converter lives in the module its lazy registration names
    assert '"plait_my_thing._converter:NOTE_TO_TEXT"' in source
    converter = (package / "_converter.py").read_text(encoding="utf-8")
    assert 'name="my-thing.note_to_text"' in converter
    assert (inside / "tests" / "test_my_thing_plugin.py").is_file()


@pytest.mark.parametrize("bad", ["", "my.thing", "9lives", "my thing", "a--b", "plait-"])
def test_invalid_names_are_refused_with_the_rule(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="lowercase letters, digits"):
        _generator().generate(bad, tmp_path, template=TEMPLATE)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "plait-demo").mkdir()
    with pytest.raises(FileExistsError, match="plait-demo exists already"):
        _generator().generate("plait-demo", tmp_path, template=TEMPLATE)
