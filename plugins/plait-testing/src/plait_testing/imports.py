"""The import graph of a package read from its sources, and the cycles in it.

One helper for every check of how modules import each other (the kernel's layers and
its import cycles, every first-party plugin's cycles), so that each counts imports, and
finds cycles, the same way. Nothing is imported: the sources are parsed.

.. code-block:: python

    from plait_testing.imports import cycles, import_graph

    assert cycles(import_graph(Path(my_plugin.__file__).parent)) == []
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

__all__ = ["cycles", "import_graph", "is_type_checking", "package_modules", "parse"]


@functools.cache
def parse(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once for every check (nothing changes it)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def is_type_checking(test: ast.expr) -> bool:
    """Whether ``test`` (an ``if``'s condition) is ``TYPE_CHECKING`` or
    ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def package_modules(directory: Path) -> dict[str, Path]:
    """Module name -> file of every module of the package in ``directory``."""
    modules: dict[str, Path] = {}
    for path in sorted(directory.rglob("*.py")):
        parts = list(path.relative_to(directory.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(node: ast.AST, package: str) -> Iterator[tuple[str, str | None]]:
    """(module, name imported from it or None) of an import statement; ``package`` is the
    package relative imports start from."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            yield module, alias.name


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _facade(name: str, path: Path, modules: dict[str, Path]) -> dict[str, str]:
    """What a package's ``__init__`` takes from its own modules: exported name -> module,
    from every import it makes (its ``TYPE_CHECKING`` block included: a package that
    exports lazily names its sources there)."""
    found: dict[str, str] = {}
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.ImportFrom):
            for module, imported in _imported(node, name):
                if module in modules and module != name and imported is not None:
                    found[imported] = module
    return found


def _nodes(tree: ast.AST, *, type_checking: bool) -> Iterator[ast.AST]:
    """Every node of ``tree`` but, unless ``type_checking``, what is under an
    ``if TYPE_CHECKING:``."""
    if not type_checking and isinstance(tree, ast.If) and is_type_checking(tree.test):
        for branch in tree.orelse:
            yield from _nodes(branch, type_checking=type_checking)
        return
    yield tree
    for child in ast.iter_child_nodes(tree):
        yield from _nodes(child, type_checking=type_checking)


def import_graph(directory: Path, *, type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports.

    Every import counts: module-level and function-level (one that breaks a cycle only
    hides it), and with ``type_checking`` (the default) those under
    ``if TYPE_CHECKING:`` too (an annotation is a dependency of the design), except in a
    package's ``__init__``, whose ``TYPE_CHECKING`` block declares what it exports lazily.
    ``type_checking=False`` gives what runs: no ``TYPE_CHECKING`` import anywhere.
    ``from package import Name`` is an import of the module ``Name`` comes from (through
    the package's ``__init__``); ``from . import _module`` of that module.
    """
    modules = package_modules(directory)
    facades = {
        name: _facade(name, path, modules)
        for name, path in modules.items()
        if path.name == "__init__.py"
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = _package_of(name, path)
        targets: set[str] = set()
        own = type_checking and path.name != "__init__.py"
        for node in _nodes(parse(path), type_checking=own):
            for module, imported in _imported(node, package):
                if imported is not None and f"{module}.{imported}" in modules:
                    targets.add(f"{module}.{imported}")  # from . import _module
                elif module in facades and imported is not None:
                    targets.add(facades[module].get(imported, module))
                else:
                    while module and module not in modules:
                        module = module.rpartition(".")[0]
                    if module:
                        targets.add(module)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than one
    module (Tarjan), each sorted, in the order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
