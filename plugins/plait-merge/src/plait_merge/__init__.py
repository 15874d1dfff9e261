"""Merge strategies for fan-in, registered through ``plait_register_merge_strategies``.

Each strategy receives one value per source, in source-declaration order.

A strategy may take options: it defines ``with_options(options) -> strategy``, which
returns a configured copy (or raises ``ValueError`` naming the bad option). The
``fan_in`` router calls it with the edge group's ``merge_options``
(``WorkflowBuilder.add_fan_in(..., merge="concat", separator=" | ")``). ``concat`` and
``concat_newline`` take ``separator``; the others take none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plait
from plait.spi import Register

__all__ = [
    "ListMerge",
    "ConcatMerge",
    "FirstMerge",
    "LastMerge",
    "KeyedMerge",
    "plait_register_merge_strategies",
]


class ListMerge:
    """``list``: the values as a list (the fan-in default)."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> list[Any]:
        return list(values)

    def output_type(self, input_type: Any) -> Any:
        return list[input_type]


class ConcatMerge:
    """``concat`` / ``concat_newline``: strings joined by ``separator``, or lists chained.

    ``concat`` joins with one space (``"resultA resultB"``), ``concat_newline`` with a
    blank line (``"resultA\n\nresultB"``); option ``separator`` sets another.
    """

    def __init__(self, separator: str = " ") -> None:
        if not isinstance(separator, str):
            raise TypeError(f"separator must be a string, got {separator!r}")
        self.separator = separator

    def with_options(self, options: Mapping[str, Any]) -> ConcatMerge:
        """A copy configured by ``options``: only ``separator`` (a string).

        :raises ValueError: an unknown option or a separator that is not a string.
        """
        unknown = sorted(set(options) - {"separator"})
        if unknown:
            raise ValueError(
                f"concat takes the option 'separator' only, got {', '.join(map(repr, unknown))}"
            )
        separator = options.get("separator", self.separator)
        if not isinstance(separator, str):
            raise ValueError(f"concat option 'separator' must be a string, got {separator!r}")
        return ConcatMerge(separator)

    def __repr__(self) -> str:
        return f"ConcatMerge(separator={self.separator!r})"

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> Any:
        if all(isinstance(v, str) for v in values):
            return self.separator.join(values)
        if all(isinstance(v, (list, tuple)) for v in values):
            out: list[Any] = []
            for v in values:
                out.extend(v)
            return out
        kinds = ", ".join(f"{s}: {type(v).__name__}" for s, v in zip(sources, values))
        raise TypeError(f"concat merges strings or lists, got {kinds}")

    def output_type(self, input_type: Any) -> Any:
        return input_type


class FirstMerge:
    """``first``: the first source's value (in declaration order)."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> Any:
        return values[0]

    def output_type(self, input_type: Any) -> Any:
        return input_type


class LastMerge:
    """``last``: the last source's value (in declaration order)."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> Any:
        return values[-1]

    def output_type(self, input_type: Any) -> Any:
        return input_type


class KeyedMerge:
    """``keyed``: ``{"outputs": {source_id: value}, "order": [source_id, ...]}``.

    The shape of seed 002's parallel outputs: access by executor id, or by position
    through ``order``.
    """

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> dict[str, Any]:
        return {"outputs": dict(zip(sources, values)), "order": list(sources)}

    def output_type(self, input_type: Any) -> Any:
        return dict[str, Any]


@plait.hookimpl
def plait_register_merge_strategies(register: Register) -> None:
    """Register the standard merge strategies."""
    register("list", ListMerge())
    register("concat", ConcatMerge(" "))
    register("concat_newline", ConcatMerge("\n\n"))
    register("first", FirstMerge())
    register("last", LastMerge())
    register("keyed", KeyedMerge())
