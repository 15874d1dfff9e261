"""Helpers for tests that install distributions into a fresh virtual environment with uv.

uv is found as this machine has it (on ``PATH``, as a module of the running python, or
through ``.ci/uv``, which installs it first); it never downloads an interpreter. Every
command runs with an environment cleaned of the outer venv, ``PYTHONPATH`` and ``PLAIT_*``
settings, so what the new venv sees is only what was installed into it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_DROP = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PLAIT_", "PYTEST_", "UV_PROJECT")


def uv() -> list[str]:
    """uv as this machine has it: on PATH, as a module of python3, or through .ci/uv."""
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    return ["bash", str(ROOT / ".ci" / "uv")]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without the outer venv's settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env.update(extra or {})
    return env


def run(
    command: list[str], cwd: Path, *, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` and assert it succeeded, showing its output if it did not."""
    result = subprocess.run(
        command, cwd=cwd, env=clean_env(env), capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


def make_venv(where: Path) -> Path:
    """Create a venv at ``where`` with the machine's python; return its interpreter."""
    run([*uv(), "venv", "--quiet", "--python", sys.executable, str(where)], where.parent)
    return where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def install(python: Path, requirements: Iterable[str | Path], *, no_deps: bool = False) -> None:
    """``uv pip install`` local paths (built as wheels, not editable) or requirement specs."""
    command = [*uv(), "pip", "install", "--quiet", "--python", str(python)]
    if no_deps:
        command.append("--no-deps")
    run([*command, *(str(r) for r in requirements)], python.parents[2])


def write_plugin(
    root: Path,
    name: str,
    module_source: str,
    *,
    dependencies: Iterable[str] = ("plait-core>=0.1,<1",),
    version: str = "0.1.0",
) -> Path:
    """Write a minimal plugin distribution ``plait-<name>`` under ``root``; return its path.

    Its module ``plait_<name>`` holds ``module_source``; its entry point of group ``plait``
    is ``<name> = "plait_<name>"``.
    """
    package = f"plait_{name}"
    dist = root / f"plait-{name}"
    (dist / "src" / package).mkdir(parents=True)
    (dist / "src" / package / "__init__.py").write_text(
        textwrap.dedent(module_source), encoding="utf-8"
    )
    requires = ", ".join(f'"{d}"' for d in dependencies)
    (dist / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [project]
            name = "plait-{name}"
            version = "{version}"
            requires-python = ">=3.10"
            dependencies = [{requires}]

            [project.entry-points.plait]
            {name} = "{package}"

            [build-system]
            requires = ["hatchling>=1.25"]
            build-backend = "hatchling.build"

            [tool.hatch.build.targets.wheel]
            packages = ["src/{package}"]
            """
        ),
        encoding="utf-8",
    )
    return dist
