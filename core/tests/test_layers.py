"""The kernel's shape: its modules form layers, and no import goes up a layer.

Every import counts — module-level, function-level and under ``if TYPE_CHECKING:`` (an
annotation is a dependency of the design too). From the bottom:

1. **base** — errors, run-time type checks and type names, events and run results, run
   options and policies, the run-observer protocol, the lazy-export helper, the records'
   shared ``__repr__``: what everything else names.
2. **authoring** — ``Executor``, ``handler``, ``WorkflowContext`` and the run state a
   context writes to.
3. **spec** — the workflow IR and references to code, the router and merge-strategy
   protocols.
4. **engine** — the compiled graph (with its per-graph cache), the runner (with its commit
   and schedule seams, and what it tells its observer). It runs what it is given and
   knows plugins only through the ``Registries`` protocol: loading them is above it.
5. **plugins** — hook specifications, registries and plugin loading, the converter records
   (and their cattrs hooks), the build context, executor kinds, expression languages and
   the loader protocol, rebuilding executors from a spec.
6. **workflow** — ``Workflow``, the durability protocol it calls, its placements and event
   streams, ``plait.load`` (a thin call into the documents plugin's seam), and the two
   public surfaces (``plait``, ``plait.spi``).

Durable runs — checkpointing, resuming, what a checkpoint is (its records, the checkpoint
and blob store protocols, opening a store by URL), the value codec, the checkpoint byte
format and its typed body, the lease and prune rules stores share, content-addressed
values, the workflow fingerprint, stored-run views — are not here: they ship as the
``plait-durable`` plugin, which ``Workflow`` reaches through the ``durability`` registry,
never by an import. Nor are workflow documents — reading them, agent names, capabilities
and grants, and the spec builder, problems collector and did-you-mean every front-end
builds the IR with: they ship as ``plait-documents``, which ``plait.load`` reaches through
the ``documents`` registry. Nor
are static type assignability and the search for the cheapest chain of converters between
two types: they ship as ``plait-converters`` (``is_assignable``, ``find_chain``), which the
builder plugin imports; the kernel holds only the converter records plugins register. Nor
is the pipelined schedule: it ships as ``plait-pipeline``, which a run asking for it by
name reaches through the ``schedule`` registry.

Inside a layer, the imports form no cycle either, and the runner's import closure — every
kernel module a superstep can reach — is the engine's core only: never plugin loading or
the placements.

What plugins may use of the kernel (``plait`` and ``plait.spi``, no private attribute of a
kernel object) and that no first-party package has an import cycle are checked over the
plugins' sources by ``tests/test_plugin_boundary.py``.

``UPWARD`` lists the imports that still go up: each is a debt to pay (by moving the name
it needs down, or a protocol beside it), never a place to add one. The test fails when a
new one appears and when one listed is gone (then strike it from the list).
"""

from __future__ import annotations

import ast
from pathlib import Path

import plait
from plait_testing.imports import cycles

PACKAGE = Path(plait.__file__).parent

LAYERS: dict[str, tuple[str, ...]] = {
    "base": (
        "_version", "_errors", "_types", "_events", "_options",
        "_observer", "_exports", "_records",
    ),
    "authoring": ("_state", "_context", "_executor"),
    "spec": ("_spec", "_routing"),
    "engine": (
        "_graph", "_runner",
    ),
    "plugins": (
        "_hookspecs", "_registry", "_plugins",
        "_convert", "_building",
    ),
    "workflow": ("_workflow", "_streaming", "__init__", "spi"),
}  # fmt: skip

#: Imports that go up a layer today (importer, imported): none; a new one is a debt.
UPWARD: set[tuple[str, str]] = set()


def imports(path: Path) -> set[str]:
    """The kernel modules ``path`` imports, every import counted."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plait."):
            found.add(node.module.split(".")[1])  # type: ignore[union-attr]
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("plait."))
    return found


def layer_of() -> dict[str, int]:
    return {module: i for i, modules in enumerate(LAYERS.values()) for module in modules}


def test_every_kernel_module_has_a_layer() -> None:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    placed = set(layer_of())
    assert modules - placed == set(), "give these modules a layer"
    assert placed - modules == set(), "these modules are gone: strike them"


def test_no_import_goes_up_a_layer_but_the_listed_debts() -> None:
    layers = layer_of()
    upward = {
        (path.stem, target)
        for path in PACKAGE.glob("*.py")
        for target in imports(path)
        if target in layers and layers[target] > layers[path.stem]
    }
    assert upward - UPWARD == set(), "an import goes up a layer"
    assert UPWARD - upward == set(), "a debt is paid: strike it from UPWARD"


def kernel_graph() -> dict[str, set[str]]:
    """Kernel module -> the kernel modules it imports (every import counted)."""
    modules = {path.stem: path for path in PACKAGE.glob("*.py")}
    return {name: imports(path) & set(modules) - {name} for name, path in modules.items()}


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_kernel_import_cycle() -> None:
    assert cycles(kernel_graph()) == []


def test_cycles_are_found() -> None:
    # the check itself can fail: a two-module and a three-module cycle
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": set()}
    assert cycles(graph) == [["a", "b"], ["c", "d", "e"]]


#: What a superstep can reach: the runner's whole import closure. Growing it is a design
#: decision: strike or add a module here on purpose, never to make the test pass.
RUNNER_CLOSURE = {
    "_context",
    "_errors",
    "_events",
    "_executor",
    "_graph",
    "_observer",
    "_options",
    "_records",  # the records' one __repr__
    "_routing",
    "_spec",
    "_state",
    "_types",
}  # fmt: skip


def test_the_runner_reaches_only_the_engine_core() -> None:
    reached = closure(kernel_graph(), "_runner")
    assert reached == RUNNER_CLOSURE
    assert not reached & {"_plugins", "_workflow"}


def test_the_kernel_imports_no_plugin() -> None:
    # the kernel calls plugins through registries and seams only (plait.load through the
    # documents plugin's, Workflow.run(checkpoint=...) through the durability's)
    found = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            found.update(f"{path.stem}: {n}" for n in names if n.startswith("plait_"))
    assert found == set()
