"""The kernel's boundary as plugins see it: every first-party and contrib plugin uses the
kernel through ``plait`` and ``plait.spi`` only, and no package has an import cycle.

Three checks, each over the source of every package under ``plugins/*/src`` and
``contrib/*/src`` (the kernel's own layers are ``core/tests/test_layers.py``):

- **imports** — a plugin imports ``plait``, ``plait.spi``, itself and other plugins' public
  modules; never a private kernel module (``plait._runner``, ``from plait import
  _runner``), nor a private name of ``plait`` or ``plait.spi``.
- **private reaches** — a plugin reads or writes no private attribute of a kernel object:
  ``ctx._run``, ``workflow._graph``, ``getattr(workflow, "_graph")``, a key written into a
  kernel object's ``__dict__``, or a kernel base class's private attribute through
  ``self``. What a plugin needs is public (``plait.spi``, or ``plait`` where users need
  it). How a reach is told from a plugin's use of its own objects is
  :func:`private_reaches`'s docstring.
- **cycles** — inside every package (the kernel too), the modules import each other
  without a cycle. Every import counts: module-level, function-level (one that breaks a
  cycle only hides it) and under ``if TYPE_CHECKING:`` (an annotation is a dependency of
  the design too, as in the kernel's layers) — but a package ``__init__``'s
  ``TYPE_CHECKING`` block, which declares what the package exports lazily, not what the
  ``__init__`` needs. ``from package import Name`` counts as an import of the module the
  ``__init__`` takes ``Name`` from, not of the ``__init__`` itself; a name the
  ``__init__`` defines is an import of the ``__init__``.

Each check is tested on a small plugin written for the purpose, so that a check that
stopped finding anything would fail (:func:`test_the_checks_find_what_they_look_for`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import plait
from plait_testing.imports import cycles, import_graph, parse

ROOT = Path(__file__).resolve().parent.parent
KERNEL = Path(plait.__file__).parent

#: Private reaches a plugin is allowed, as ``{(file relative to the root, expression):
#: why}``. Empty: every reach found so far was given a public seam instead.
ALLOWED: dict[tuple[str, str], str] = {}


# -- where the packages are -----------------------------------------------------------


def plugin_packages(root: Path = ROOT) -> dict[str, Path]:
    """Import name -> source directory of every first-party and contrib plugin package."""
    return {
        package.name: package
        for package in sorted([*root.glob("plugins/*/src/*"), *root.glob("contrib/*/src/*")])
        if package.is_dir() and (package / "__init__.py").exists()
    }


def sources(directory: Path) -> Iterator[tuple[Path, ast.Module]]:
    """Every Python file under ``directory`` with its syntax tree."""
    for path in sorted(directory.rglob("*.py")):
        yield path, parse(path)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# -- imports --------------------------------------------------------------------------


def _not_allowed(module: str, own: str, packages: set[str]) -> bool:
    """Whether a plugin of package ``own`` may not import ``module``: it may import
    ``plait`` and ``plait.spi``, itself, and other plugins' public modules (no ``_`` part)."""
    head, *rest = module.split(".")
    if head == "plait":
        return module != "plait.spi" and bool(rest)
    if head == own or head not in packages:
        return False
    return any(part.startswith("_") for part in rest)


def forbidden_imports(own: str, tree: ast.Module, packages: set[str]) -> list[str]:
    """What a module of plugin package ``own`` imports that a plugin may not: a private
    module of the kernel or of another plugin, or a private name of ``plait`` or
    ``plait.spi`` (``from plait import _runner``)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _not_allowed(node.module, own, packages):
                found.append(node.module)
            elif node.module in ("plait", "plait.spi"):
                found.extend(
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and alias.name != "__version__"
                )
        elif isinstance(node, ast.Import):
            found.extend(
                alias.name for alias in node.names if _not_allowed(alias.name, own, packages)
            )
    return found


# -- private reaches ------------------------------------------------------------------


def defined_private_names(trees: list[ast.Module]) -> set[str]:
    """The private attribute names the classes of ``trees`` define: methods and class
    attributes, ``__slots__`` entries, and what their methods assign to ``self._x`` or
    ``cls._x``."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        for target in targets:
                            if isinstance(target, ast.Name):
                                names.add(target.id)
                                if target.id == "__slots__" and item.value is not None:
                                    names.update(
                                        c.value
                                        for c in ast.walk(item.value)
                                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                                    )
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return {name for name in names if _is_private(name)}


def defined_classes(trees: list[ast.Module]) -> set[str]:
    """The names of the classes ``trees`` define."""
    return {
        node.name for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    }


def _annotation_names(annotation: ast.expr | None) -> set[str]:
    """The class names an annotation mentions (``WorkflowBuilder | None`` ->
    ``{"WorkflowBuilder", "None"}``; a string annotation is parsed)."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    return {
        node.id if isinstance(node, ast.Name) else node.attr
        for node in ast.walk(annotation)
        if isinstance(node, (ast.Name, ast.Attribute))
    }


def _known_types(tree: ast.Module) -> dict[ast.AST, set[str]]:
    """Every node -> what the functions around it say of their local names, as
    ``"name:Class"`` strings: a parameter's annotation (``builder: WorkflowBuilder``), an
    annotated local, and a local assigned a new instance (``builder = WorkflowBuilder()``)."""
    scope: dict[ast.AST, set[str]] = {}

    def visit(node: ast.AST, params: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            params = params | {
                f"{arg.arg}:{name}" for arg in every for name in _annotation_names(arg.annotation)
            }
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                    params |= {
                        f"{inner.target.id}:{name}" for name in _annotation_names(inner.annotation)
                    }
                elif (
                    isinstance(inner, ast.Assign)
                    and len(inner.targets) == 1
                    and isinstance(inner.targets[0], ast.Name)
                    and isinstance(inner.value, ast.Call)
                    and isinstance(inner.value.func, ast.Name)
                ):
                    params.add(f"{inner.targets[0].id}:{inner.value.func.id}")
        scope[node] = params
        for child in ast.iter_child_nodes(node):
            visit(child, params)

    visit(tree, set())
    return scope


def _accesses(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.expr, str]]:
    """(node, receiver, private name) of every private attribute a module reads or writes:
    ``x._name``, ``getattr(x, "_name")`` (and ``setattr``, ``hasattr``, ``delattr``), and a
    private key of ``x.__dict__`` or ``vars(x)`` (``x.__dict__["_name"]``,
    ``x.__dict__.setdefault("_name", ...)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            yield node, node.value, node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = node.args
            if (
                node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                and len(args) >= 2
                and isinstance(args[1], ast.Constant)
                and isinstance(args[1].value, str)
                and _is_private(args[1].value)
            ):
                yield node, args[0], args[1].value
        dictionary = _object_dict(node)
        if dictionary is not None:
            key = _dict_key(node)
            if key is not None and _is_private(key):
                yield node, dictionary, key


def _object_dict(node: ast.AST) -> ast.expr | None:
    """``x`` when ``node`` is ``x.__dict__[...]``, ``x.__dict__.method(...)`` or the same
    with ``vars(x)``."""
    if isinstance(node, ast.Subscript):
        target = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        target = node.func.value
    else:
        return None
    if isinstance(target, ast.Attribute) and target.attr == "__dict__":
        return target.value
    if (
        isinstance(target, ast.Call)
        and isinstance(target.func, ast.Name)
        and target.func.id == "vars"
        and len(target.args) == 1
    ):
        return target.args[0]
    return None


def _dict_key(node: ast.AST) -> str | None:
    key: ast.expr | None = None
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and node.args:
        key = node.args[0]
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    return None


def private_reaches(
    trees: dict[Path, ast.Module], kernel_names: set[str], root: Path = ROOT
) -> list[str]:
    """The private reaches into kernel objects in the modules of one plugin package, as
    ``"file:line: expression"``.

    Which object a name stands for is not known without running the code, so the check
    goes by the attribute's name, and leans to finding a reach:

    - a private key read or written through another object's ``__dict__`` (or ``vars``)
      is always a reach: a plugin keeps what it derives from a kernel object in the
      kernel's per-graph cache (:meth:`plait.spi.CompiledGraph.cached`) or its own table;
    - ``x._name`` (or ``getattr(x, "_name")``) where ``x`` is not ``self`` or ``cls`` is a
      reach when a kernel class defines ``_name``, unless the plugin's own classes define
      it too and ``x`` is a local name the function says is one of the plugin's own
      classes (a parameter's annotation, or ``x = OwnClass(...)``);
    - ``self._name`` is a reach when a kernel class defines ``_name`` and no class of the
      plugin does: the plugin uses a private attribute it inherits from a kernel class.

    A private name no kernel class defines is the plugin's own or a library's
    (``SplitResult._replace``), not a reach into the kernel.
    """
    own_trees = list(trees.values())
    own_names = defined_private_names(own_trees)
    own_classes = defined_classes(own_trees)
    found: list[str] = []
    for path, tree in trees.items():
        annotated: dict[ast.AST, set[str]] | None = None  # worked out when first needed
        for node, receiver, name in _accesses(tree):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}: {ast.unparse(node)}"
            if isinstance(node, (ast.Subscript, ast.Call)) and _object_dict(node) is not None:
                found.append(where)
                continue
            if name not in kernel_names:
                continue
            selfish = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            if selfish:
                if name not in own_names:
                    found.append(where)
                continue
            if name in own_names and isinstance(receiver, ast.Name):
                if annotated is None:
                    annotated = _known_types(tree)
                params = annotated.get(node, set())
                if any(f"{receiver.id}:{cls}" in params for cls in own_classes):
                    continue
            found.append(where)
    return found


def kernel_private_names() -> set[str]:
    """The private attribute names the kernel's classes define."""
    return defined_private_names([tree for _, tree in sources(KERNEL)])


# -- cycles ---------------------------------------------------------------------------


# -- the checks -----------------------------------------------------------------------


def test_plugins_import_only_plait_plait_spi_and_public_plugin_modules() -> None:
    packages = plugin_packages()
    found = {
        f"{path.relative_to(ROOT)}: {module}"
        for own, directory in packages.items()
        for path, tree in sources(directory)
        for module in forbidden_imports(own, tree, set(packages))
    }
    assert found == set()


def test_no_plugin_reaches_a_private_attribute_of_a_kernel_object() -> None:
    kernel_names = kernel_private_names()
    found = {
        (reach.split(":", 1)[0], reach.split(": ", 1)[1]): reach
        for directory in plugin_packages().values()
        for reach in private_reaches(dict(sources(directory)), kernel_names)
    }
    assert [reach for key, reach in found.items() if key not in ALLOWED] == []
    assert set(ALLOWED) - set(found) == set(), "an allowed reach is gone: strike it"


def test_no_first_party_package_has_an_import_cycle() -> None:
    found = {
        directory.name: found
        for directory in [KERNEL, *plugin_packages().values()]
        if (found := cycles(import_graph(directory)))
    }
    assert found == {}


# -- the checks can fail --------------------------------------------------------------

#: A plugin that breaks every rule once, and keeps them where it uses its own objects.
FIXTURE = {
    "__init__.py": """
from typing import TYPE_CHECKING, Any
from plait import _runner
import plait._state
from plait.spi import _private_helper

if TYPE_CHECKING:
    from ._cache import Cache
    from ._b import helper


def __getattr__(name: str) -> Any:
    from . import _cache
    return getattr(_cache, name)
""",
    "_cache.py": """
from plait import Executor, WorkflowContext


class Cache:
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries = {}


def own(cache: Cache) -> object:
    return cache._entries                       # its own object: no reach


async def reach(ctx: WorkflowContext, workflow, graph) -> None:
    ctx._run.outbox.append(1)                   # a kernel attribute
    getattr(workflow, "_graph")                 # the same through getattr
    graph.__dict__["_plait_cached"] = 1         # a write into a kernel object
    graph.__dict__.setdefault("_plait_more", {})


class Mine(Executor):
    def handlers(self) -> object:
        return self._handlers                   # a kernel base class's private attribute
""",
    "_a.py": "from ._b import helper\n",
    "_b.py": """
def helper() -> None:
    from plait_fixture import Cache             # through the facade: _b -> _cache
    from . import _a                            # function-level: still a cycle
""",
    "_c.py": "from plait_fixture import Cache\n",
    "_d.py": """
from typing import TYPE_CHECKING

if TYPE_CHECKING:                               # an annotation's import counts
    from ._e import Thing
""",
    "_e.py": """
class Thing:
    def other(self) -> None:
        from . import _d                        # _d -> _e -> _d, hidden in a function
""",
}


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    package = tmp_path / "plugins" / "plait-fixture" / "src" / "plait_fixture"
    package.mkdir(parents=True)
    for name, text in FIXTURE.items():
        (package / name).write_text(text, encoding="utf-8")
    assert plugin_packages(tmp_path) == {"plait_fixture": package}
    trees = dict(sources(package))

    imports = [
        m for tree in trees.values() for m in forbidden_imports("plait_fixture", tree, set())
    ]
    assert sorted(imports) == ["plait._runner", "plait._state", "plait.spi._private_helper"]

    reaches = [
        r.split(": ", 1)[1] for r in private_reaches(trees, kernel_private_names(), tmp_path)
    ]
    assert sorted(reaches) == sorted(
        [
            "ctx._run",
            "getattr(workflow, '_graph')",
            "graph.__dict__['_plait_cached']",
            "graph.__dict__.setdefault('_plait_more', {})",
            "self._handlers",
        ]
    )

    graph = import_graph(package)
    assert graph["plait_fixture._c"] == {"plait_fixture._cache"}  # not the __init__
    assert cycles(graph) == [
        ["plait_fixture._a", "plait_fixture._b"],
        ["plait_fixture._d", "plait_fixture._e"],
    ]
    # the __init__'s TYPE_CHECKING block declares exports: _b, importing the package,
    # is no cycle with it
    assert "plait_fixture._b" not in graph["plait_fixture"]


#: The five first-party checkpoint stores, each written against the store kit.
STORES = {
    "memory": "plugins/plait-stores/src/plait_stores/_memory.py",
    "file": "plugins/plait-stores/src/plait_stores/_file.py",
    "sqlite": "plugins/plait-stores/src/plait_stores/_sqlite.py",
    "redis": "plugins/plait-redis/src/plait_redis/_store.py",
    "postgres": "plugins/plait-postgres/src/plait_postgres/_store.py",
}


def test_each_store_is_written_against_at_most_ten_names_of_plait_durable() -> None:
    """Issue 35: a store needs the kit's base and the records it keeps, nothing more (the
    kit's methods say every error's wording)."""
    counts: dict[str, list[str]] = {}
    for store, path in STORES.items():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        counts[store] = sorted(
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] == "plait_durable"
            for alias in node.names
        )
    assert all("CheckpointStoreBase" in names for names in counts.values()), counts
    too_many = {store: names for store, names in counts.items() if len(names) > 10}
    assert not too_many, too_many
