"""The merge-strategy protocol: how a fan-in turns one message per source into one.

Strategies are registered by name through ``plait_register_merge_strategies``; the
``plait-merge`` plugin ships ``list`` (the default), ``concat``, ``concat_newline``,
``first``, ``last`` and ``keyed``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["MergeStrategy"]


@runtime_checkable
class MergeStrategy(Protocol):
    """Combines fan-in inputs, given in source-declaration order."""

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> Any:
        """One merged message from ``values`` (``values[i]`` came from ``sources[i]``)."""
        ...

    def output_type(self, input_type: Any) -> Any:
        """The type of the merged message when each input is ``input_type``."""
        ...
