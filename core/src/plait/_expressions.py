"""Expression languages: safe conditions and ``{{ }}`` templates over JSON-like data.

A language is registered by name through ``plait_register_expression_languages``; the
first-party one (``plait-expr``) is named ``"plait"`` and is every front-end's default.
Expressions are compiled once, when a workflow is loaded, so a syntax error is reported
then, with line, column and a caret (:class:`~plait.ExpressionError`). A compiled
expression only ever reads JSON-like data (mappings, sequences, strings, numbers, booleans,
``None``): nothing reaches Python attributes, nothing is imported, nothing is ``eval``'d.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_LANGUAGE",
    "CompiledExpression",
    "CompiledTemplate",
    "ExpressionLanguage",
    "compile_expression",
    "compile_template",
]

#: The language front-ends use when a document does not name one.
DEFAULT_LANGUAGE = "plait"


@runtime_checkable
class CompiledExpression(Protocol):
    """An expression, parsed and ready to evaluate many times."""

    #: the source text
    text: str
    #: the top-level names it reads (``steps``, ``attempts`` …), for load-time checks
    names: frozenset[str]

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        """The value of the expression over ``data`` (JSON-like). Raises
        :class:`~plait.ExpressionError` (never another exception) when evaluation
        fails or exceeds a bound."""
        ...


@runtime_checkable
class CompiledTemplate(Protocol):
    """A string with ``{{ expr }}`` parts, parsed and ready to render."""

    text: str
    names: frozenset[str]

    def render(self, data: Mapping[str, Any]) -> str:
        """The text with every ``{{ expr }}`` replaced by its value (strings as-is,
        other values as JSON)."""
        ...

    def value(self, data: Mapping[str, Any]) -> Any:
        """For a template that is exactly one ``{{ expr }}``, the expression's raw value
        (a bool for a condition); otherwise :meth:`render`."""
        ...


@runtime_checkable
class ExpressionLanguage(Protocol):
    """A safe expression language."""

    def compile(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledExpression:
        """Parse ``text``. ``line``/``column`` say where it starts in its document, so
        errors point into the document. Raises :class:`~plait.ExpressionError`."""
        ...

    def compile_template(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledTemplate:
        """Parse a template with ``{{ expr }}`` parts."""
        ...


def _language(language: str | None, manager: Any) -> ExpressionLanguage:
    if manager is None:
        from ._plugins import get_plugin_manager

        manager = get_plugin_manager()
    lang: ExpressionLanguage = manager.registry("expression_language").get(
        language or DEFAULT_LANGUAGE, what="an expression"
    )
    return lang


def compile_expression(
    text: str,
    *,
    language: str | None = None,
    source: str | None = None,
    line: int = 1,
    column: int = 1,
    manager: Any = None,
) -> CompiledExpression:
    """Compile ``text`` in ``language`` (default :data:`DEFAULT_LANGUAGE`)."""
    return _language(language, manager).compile(text, source=source, line=line, column=column)


def compile_template(
    text: str,
    *,
    language: str | None = None,
    source: str | None = None,
    line: int = 1,
    column: int = 1,
    manager: Any = None,
) -> CompiledTemplate:
    """Compile a ``{{ }}`` template in ``language`` (default :data:`DEFAULT_LANGUAGE`)."""
    return _language(language, manager).compile_template(
        text, source=source, line=line, column=column
    )
