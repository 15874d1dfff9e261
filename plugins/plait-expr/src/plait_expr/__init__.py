"""Plait's first-party expression language, registered as ``"plait"``.

Conditions (``steps.qa.output.is_approved == true && attempts < 3``) and ``{{ expr }}``
templates over JSON-like data, parsed with an LALR grammar (``grammar.lark``, its tables
made ahead of time by lark: ``_tables.py``) and compiled once into nested closures. Safe by
construction: no ``eval``, no attribute access, a fixed set of functions, bounded input,
nesting, numbers and string growth. The reference is ``docs/expressions.md``.
:func:`expression_failed` is the run error a front-end raises when one fails while its
node runs.

Registering the language imports nothing heavy; the parser's tables are imported on the
first ``compile``, which builds nothing and never imports lark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._failed import expression_failed as expression_failed
    from ._language import (
        CompiledExpression as CompiledExpression,
        CompiledTemplate as CompiledTemplate,
        PlaitLanguage as PlaitLanguage,
    )


@plait.hookimpl
def plait_register_expression_languages(register: Register) -> None:
    """Register the ``"plait"`` language."""
    language = "plait_expr._language:PlaitLanguage"
    register("plait", lazy(language, provides=("compile", "compile_template")))


# the language's modules load when first used, not when plugins load
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
