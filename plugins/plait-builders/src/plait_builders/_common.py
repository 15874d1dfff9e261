"""What the builder and the composition records share: the separator of prefixed ids,
:class:`CompositionError` and semantics tags.

Apart from :mod:`plait_builders._connection`, so that wiring and building a workflow
never makes the composition records' classes: :mod:`plait_builders._builder` imports those
when a fragment is first composed.
"""

from __future__ import annotations

from typing import Any

from plait import PlaitError

__all__ = ["SEPARATOR", "CompositionError"]

#: Separates a fragment's prefix from the ids inside it: ``prep/normalize``.
SEPARATOR = "/"


class CompositionError(PlaitError, ValueError):
    """Fragments cannot be composed as asked (prefix collision, ambiguous exit, …)."""


def _tags(value: Any) -> tuple[str, ...]:
    """Semantics tags as a tuple of strings (one string is one tag)."""
    tags = (value,) if isinstance(value, str) else tuple(value or ())
    for tag in tags:
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"a semantics tag must be a non-empty string, got {tag!r}")
    return tags
