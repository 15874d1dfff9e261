"""Plait's first-party expression language, registered as ``"plait"``.

Conditions (``steps.qa.output.is_approved == true && attempts < 3``) and ``{{ expr }}``
templates over JSON-like data, parsed with an LALR grammar (``grammar.lark``, its tables
made ahead of time by lark: ``_tables.py``) and compiled once into nested closures. Safe by
construction: no ``eval``, no attribute access, a fixed set of functions, bounded input,
nesting, numbers and string growth. The reference is ``docs/expressions.md``.

Registering the language imports nothing heavy; the parser's tables are imported on the
first ``compile``, which builds nothing and never imports lark.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy

if TYPE_CHECKING:
    from ._language import CompiledExpression, CompiledTemplate, PlaitLanguage

__all__ = [
    "CompiledExpression",
    "CompiledTemplate",
    "PlaitLanguage",
    "plait_register_expression_languages",
]


@plait.hookimpl
def plait_register_expression_languages(register: Register) -> None:
    """Register the ``"plait"`` language."""
    language = "plait_expr._language:PlaitLanguage"
    register("plait", lazy(language, provides=("compile", "compile_template")))


def __getattr__(name: str) -> Any:
    # the language's modules load when first used, not when plugins load
    if name in ("CompiledExpression", "CompiledTemplate", "PlaitLanguage"):
        from . import _language

        return getattr(_language, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
