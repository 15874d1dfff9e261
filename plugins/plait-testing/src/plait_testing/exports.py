"""Checking a lazily exporting package: what type checkers see is what Python imports.

A package that imports its public names on first use (PEP 562 ``__getattr__``) declares
them for type checkers in an ``if TYPE_CHECKING:`` block of explicit re-exports
(``from .mod import X as X``). With :func:`plait.spi.lazy_exports` that block is also the
run-time table, read by a quick line scan of the source; :func:`check_exports` reads the
block with :mod:`ast` and holds ``__all__`` and every value to it, so a name cannot be
visible to a type checker and missing at run time, or the reverse (and a package with a
hand-written ``__getattr__`` is checked the same way)::

    import plait_testing.exports

    def test_the_exports_agree() -> None:
        plait_testing.exports.check_exports(my_plugin, run_time_only={"plait_register_x"})
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import types
from collections.abc import Collection

__all__ = ["check_exports", "declared_for_type_checkers"]


def declared_for_type_checkers(module: types.ModuleType) -> dict[str, str]:
    """What the ``if TYPE_CHECKING:`` block of ``module`` re-exports: each name, and the
    full name of the module it comes from. A re-export is explicit (``X as X``) or a
    submodule alias (``from . import _errors as errors``); an import without ``as`` is
    there for annotations only, and is not one.

    :raises AssertionError: the module has no such block, or a statement in it is not an
        import.
    """
    tree = ast.parse(inspect.getsource(module))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    assert blocks, f"{module.__name__} has no `if TYPE_CHECKING:` block"
    package = module.__name__ if hasattr(module, "__path__") else module.__package__
    found: dict[str, str] = {}
    for statement in blocks[0].body:
        if isinstance(statement, ast.Import):  # ``import click``: for annotations
            continue
        assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
        source = importlib.util.resolve_name(
            "." * statement.level + (statement.module or ""), package
        ).rstrip(".")
        for alias in statement.names:
            if alias.asname is None:  # for annotations only
                continue
            if statement.module is None:  # ``from . import _errors as errors``: a submodule
                found[alias.asname] = f"{source}.{alias.name}"
            else:
                assert alias.asname == alias.name, ast.unparse(statement)
                found[alias.name] = source
    return found


def check_exports(module: types.ModuleType, *, run_time_only: Collection[str] = ()) -> None:
    """Assert that ``module.__all__`` is exactly what its ``TYPE_CHECKING`` block
    re-exports (plus ``run_time_only``: names it defines or imports eagerly, such as its
    hook implementations), and that each name is the very object of the module it is
    imported from there.

    :raises AssertionError: naming the names that differ.
    """
    declared = declared_for_type_checkers(module)
    exported = set(module.__all__)
    missing = exported - set(declared) - set(run_time_only)
    unseen = set(declared) - exported
    assert not missing, f"{module.__name__}: in __all__ but not seen by type checkers: {missing}"
    assert not unseen, f"{module.__name__}: seen by type checkers but not in __all__: {unseen}"
    for name, home in declared.items():
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            assert value.__name__ == home, (name, value.__name__, home)
        else:
            source = importlib.import_module(home)
            assert value is getattr(source, name), f"{module.__name__}.{name} is not {home}.{name}"
