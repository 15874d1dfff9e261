"""Checkpoint hooks for the small records a team asks with (``ctx.request_info``).

A request a team makes may be held by a workflow that does not declare its class (a team
nested in a workflow file's node passes its requests out to the outer run), so its class
registers cattrs hooks, as :class:`~plait_teams.HumanTurnRequest` does. Decoding is a trust
boundary: :func:`strict_hooks` rebuilds a record only from a dict of exactly its fields,
each of the declared JSON type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from plait_converters import CattrsHooks

__all__ = ["strict_hooks"]


def strict_hooks(
    cls: type, types: Mapping[str, type | tuple[type, ...]], *, requires: str
) -> CattrsHooks:
    """The cattrs hooks of the attrs record ``cls``: a dict of its fields out, and in only
    a dict of exactly those fields whose values have the ``types`` given per field.

    :param requires: the module that defines ``cls`` (its lazy registration says so).
    """
    from plait_converters import CattrsHooks

    names = sorted(a.name for a in attrs.fields(cls))
    label = cls.__name__

    def unstructure(record: Any) -> dict[str, Any]:
        return attrs.asdict(record)

    def structure(data: Any, _type: Any = cls) -> Any:
        if not isinstance(data, dict) or sorted(data) != names:
            raise ValueError(f"a stored {label} must be a dict of its fields {names}, got {data!r}")
        for name, value in data.items():
            if isinstance(value, bool) and bool not in _as_tuple(types[name]):
                raise ValueError(f"a stored {label}'s {name} must not be a bool")
            if not isinstance(value, types[name]):
                raise ValueError(f"a stored {label}'s {name} has the wrong type: {value!r}")
        return cls(**data)

    return CattrsHooks(cls, structure=structure, unstructure=unstructure, requires=requires)


def _as_tuple(value: type | tuple[type, ...]) -> tuple[type, ...]:
    return value if isinstance(value, tuple) else (value,)
