"""Plait's first-party expression language, registered as ``"plait"``.

Conditions (``steps.qa.output.is_approved == true && attempts < 3``) and ``{{ expr }}``
templates over JSON-like data, parsed with a lark LALR grammar (``grammar.lark``) and
compiled once into nested closures. Safe by construction: no ``eval``, no attribute access,
a fixed set of functions, bounded input, nesting, numbers and string growth. The reference
is ``docs/expressions.md``.

Registering the language imports nothing heavy; lark is imported, and the parser built, on
the first ``compile``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import plait
from plait.hookspecs import Register

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
    register("plait", PlaitLanguage())
