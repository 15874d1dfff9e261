"""What a converter's source or target may be besides a type: a :class:`TypeFamily`.

Kept apart from the search in :mod:`plait.chains`, so that defining converters (what every
converter plugin does when it loads) never imports the search: a process pays for it when
an edge first needs a conversion.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["TypeFamily"]


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"'{attribute.name}' must be a non-empty str, got {value!r}")


def _is_cost(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


@attrs.frozen
class TypeFamily:
    """Many types at once, given by a predicate: a converter's source or target.

    As a source, the converter applies to every type ``contains(tp)`` accepts; its ``fn``
    is called as ``fn(value)``. As a target, it is bound to the type the edge's target
    declares (when ``contains`` accepts it) and ``fn`` is called as ``fn(value, type)``.

    .. versionadded:: 0.1
    """

    name: str = attrs.field(validator=_name)
    contains: Callable[[Any], bool] = attrs.field(validator=attrs.validators.is_callable())

    def __contains__(self, tp: object) -> bool:
        try:
            return bool(self.contains(tp))
        except Exception:  # a predicate that chokes on an odd hint does not match it
            return False

    def __str__(self) -> str:
        return f"<{self.name}>"
