"""Structured output: the words that ask a model for JSON, and the check of its answer.

A model with schema support (``llm.Model.supports_schema``) gets the schema through llm's
schema API; any other model gets it in its prompt (:func:`json_instruction`). Either way the
answer is parsed (:func:`parse_answer` tolerates a fenced ```` ```json ```` block and text
around one object) and validated against the schema (:func:`answer_problem`); a problem is
named by its JSON path, so a corrective prompt (:func:`correction`) and the final error can
say exactly what was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["answer_problem", "correction", "json_instruction", "parse_answer"]

#: how much of an unusable answer an error quotes
QUOTE = 200

_FENCE = "```"


def json_instruction(schema: Mapping[str, Any]) -> str:
    """The paragraph appended to a prompt to ask a model without schema support for JSON."""
    return (
        "Answer with only a JSON object that matches this JSON Schema, with no other "
        f"text:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def correction(problem: str, schema: Mapping[str, Any]) -> str:
    """The prompt of the one corrective retry: what was wrong, and the schema again."""
    return (
        f"Your answer could not be used: {problem}. Answer again with only a JSON object "
        f"that matches this JSON Schema, with no other text:\n"
        f"{json.dumps(schema, ensure_ascii=False)}"
    )


def _unfenced(text: str) -> str:
    """The inside of the first fenced block of ``text`` (```` ```json ```` or bare), else
    ``text``. Plain string search, linear in the answer."""
    start = text.find(_FENCE)
    if start < 0:
        return text
    body_start = text.find("\n", start)
    if body_start < 0:
        return text
    end = text.find(_FENCE, body_start)
    return text[body_start + 1 : end if end >= 0 else len(text)]


def parse_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value in a model's answer, and ``None``; or ``None`` and what is wrong.

    Tried in order: the whole answer, the inside of its first fenced block, the text from
    its first ``{`` to its last ``}`` (a model that wraps its object in a sentence).
    """
    candidates = [text.strip(), _unfenced(text).strip()]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first : last + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate), None
        except ValueError:
            continue
    quoted = text[:QUOTE] + ("…" if len(text) > QUOTE else "")
    return None, f"the answer is not JSON: {quoted!r}"


def answer_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """What makes ``value`` not match ``schema`` (the most relevant error, at its JSON path,
    ``$`` for the whole value), or ``None`` when it matches."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]

    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    return f"at {error.json_path}: {error.message}"
