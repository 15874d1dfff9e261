"""The kernel's modules import each other without a cycle.

Every import counts — module-level and function-level (a function-level import that
breaks a cycle only hides it) — except those under ``if TYPE_CHECKING:``, which never run
(``tests/test_plugin_boundary.py`` counts those too, for every first-party package). The
graph and the cycle finder are ``plait_testing.imports``', as every such check's.
"""

from __future__ import annotations

from pathlib import Path

import plait
from plait_testing.imports import cycles, import_graph

PACKAGE = Path(plait.__file__).parent


def kernel_import_graph() -> dict[str, set[str]]:
    """Module -> kernel modules it imports when it runs (``from .x import name`` counts as
    ``x``; ``from plait import Name`` as the module ``Name`` comes from)."""
    return import_graph(PACKAGE, type_checking=False)


def test_the_kernel_has_no_import_cycle() -> None:
    assert cycles(kernel_import_graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_runner_does_not_depend_on_the_workflow() -> None:
    graph = kernel_import_graph()
    seen, todo = set(), ["plait._runner"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    assert "plait._runner" in graph and len(seen) > 1  # the walk saw the runner's imports
    assert "plait._workflow" not in seen


def test_only_what_runs_counts_here(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._e import Thing\n"
    )
    (package / "_e.py").write_text("def f():\n    from . import _d\n")
    assert import_graph(package, type_checking=False)["pkg._d"] == set()
    assert import_graph(package)["pkg._d"] == {"pkg._e"}
    assert cycles(import_graph(package)) == [["pkg._d", "pkg._e"]]
    assert cycles(import_graph(package, type_checking=False)) == []
