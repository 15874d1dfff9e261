"""Placements are resolved when a workflow compiles: the runner imports no placement or
remote-invocation code, whether a run uses placements or not."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import plait

PACKAGE = Path(plait.__file__).parent


def test_importing_the_runner_imports_no_placement_code() -> None:
    code = (
        "import sys, plait._runner, plait_durable._durable; "
        "print(sorted(m for m in sys.modules if m.startswith('plait')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(ast.literal_eval(done.stdout.strip()))
    assert "plait._runner" in loaded  # the check itself ran
    assert "plait._workflow" not in loaded
    assert not {m for m in loaded if m.startswith("plait_ray")}


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports: module-level, function-level and TYPE_CHECKING."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "plait." * node.level + (node.module or "")
            found.add(base.replace("plait..", "plait.").rstrip("."))
            found.update(
                f"{base}.{alias.name}".replace("plait..", "plait.") for alias in node.names
            )
    return found


def test_the_run_path_imports_no_placement_and_the_kernel_no_remote_encoding() -> None:
    # the round trip (encode, rebuild on a worker, replay) is plait_ray.remote's
    assert not (PACKAGE / "_remote.py").exists() and not (PACKAGE / "remote.py").exists()
    import plait_durable

    durable = Path(plait_durable.__file__).parent
    for path in (
        *(PACKAGE / name for name in ("_runner.py", "_graph.py")),
        *(durable / name for name in ("_durable.py", "_checkpointer.py")),
    ):
        imported = _imported(path)
        assert "plait._workflow" not in imported, path.name
        assert "plait.spi.Placement" not in imported, path.name
        assert not {m for m in imported if "remote" in m}, path.name
