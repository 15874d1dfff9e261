"""Lazy exports: a package's public names, imported on first use (PEP 562), each written
once — in the package's ``if TYPE_CHECKING:`` block.

A package that should not import its submodules when it is imported (``plait``,
``plait.spi``, a plugin whose entry point module is imported on every ``plait`` command)
re-exports its names for type checkers only, and lets :func:`lazy_exports` build the
module ``__getattr__`` and ``__dir__`` from that same block::

    from typing import TYPE_CHECKING

    from plait.spi import lazy_exports

    if TYPE_CHECKING:
        from ._kinds import ShellKind as ShellKind
        from . import _checks as checks

    if not TYPE_CHECKING:  # type checkers read the block: a misspelt name stays an error
        __getattr__, __dir__ = lazy_exports(__name__)

An import in the block is an export when it is an explicit re-export, ``X as X`` (mypy's
and pyright's rule), or a submodule under another name (``from . import _checks as
checks``); an import without ``as`` is there for annotations only. ``__all__`` is the
exports plus the functions and classes the package itself defines (its hook
implementations).

The block is read from the package's source text, once, on the first name asked for: a
line scan costs tens of microseconds, where :mod:`ast` costs about 1.5 ms a package, and
every ``plait`` command reaches a dozen packages. ``plait_testing.exports.check_exports``
holds the scan to what :mod:`ast` reads, for every lazily exporting package.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["lazy_exports", "reexports"]


def reexports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """What the ``if TYPE_CHECKING:`` block of ``source`` re-exports: public name ->
    (absolute module, the name there), for a module whose imports resolve against
    ``package``.

    :raises ImportError: ``source`` has no such block at its top level.
    """
    import re

    start = source.find("\nif TYPE_CHECKING:\n")
    if start < 0:
        raise ImportError(f"{package}: lazy exports need an `if TYPE_CHECKING:` block")
    start += len("\nif TYPE_CHECKING:\n")
    # the block ends at the first line that starts in column 0 (code, a comment, `else:`)
    end = re.compile(r"^[^\s]", re.MULTILINE).search(source, start)
    block = re.sub(r"#[^\n]*", "", source[start : end.start() if end else len(source)])
    found: dict[str, tuple[str, str]] = {}
    statement = r"^\s*from\s+(\.*)([\w.]*)\s+import\s+(\([^)]*\)|[^\n]*)"
    for dots, module, names in re.findall(statement, block, re.MULTILINE):
        if dots:
            base = package.rsplit(".", len(dots) - 1)[0] if len(dots) > 1 else package
            module = f"{base}.{module}" if module else base
        for item in names.strip("()").split(","):
            words = item.split()
            if len(words) == 3 and words[1] == "as":  # an import without `as` is not exported
                found[words[2]] = (module, words[0])
    return found


def lazy_exports(name: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` (PEP 562) of module ``name``, which
    import each name its ``if TYPE_CHECKING:`` block re-exports on first use and keep it.

    Use: ``__getattr__, __dir__ = lazy_exports(__name__)``, under ``if not
    TYPE_CHECKING:``. The block is read from the module's source on the first name
    asked for (never for private names such as the submodules the import system probes).
    """
    module = sys.modules[name]
    package = (module.__spec__.parent if module.__spec__ is not None else None) or name
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            loader: Any = module.__spec__.loader if module.__spec__ is not None else None
            path = getattr(module, "__file__", None)
            try:
                source = loader.get_data(path).decode("utf-8")
            except (AttributeError, OSError, UnicodeDecodeError) as exc:
                raise ImportError(
                    f"{name} reads the names it exports from the `if TYPE_CHECKING:` block "
                    f"of its source, and cannot read {path} ({exc}); install it with its "
                    "source files",
                    name=name,
                ) from exc
            table.update(reexports(source, package))
        return table

    def __getattr__(attribute: str) -> Any:
        if attribute == "__all__":
            value: Any = sorted({*exports(), *_defined(module)})
        elif attribute.startswith("_") and not attribute.startswith("__"):
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        elif attribute in exports():
            home, original = table[attribute]
            import importlib

            source_module = importlib.import_module(home)
            try:
                value = getattr(source_module, original)
            except AttributeError:  # ``from . import _checks as checks``: a submodule
                value = importlib.import_module(f"{home}.{original}")
        else:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        setattr(module, attribute, value)  # the next lookup is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *exports(), *_defined(module)})

    return __getattr__, __dir__


def _defined(module: Any) -> list[str]:
    """The public functions and classes ``module`` defines itself (hook implementations)."""
    return [
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and isinstance(value, (type, types.FunctionType))
        and value.__module__ == module.__name__
    ]
