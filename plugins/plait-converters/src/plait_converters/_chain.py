"""What a chain of converters is: the steps that turn one type into another.

The converter search (:func:`plait_converters.find_chain`) returns a :class:`Chain`; the
workflow builder turns each :class:`Step` into a node whose id it names
(``convert:<from>-><to>:<name>``). This module imports no search: the builder's type
check reads these records without paying for one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from plait.spi import type_name

__all__ = ["Chain", "Step"]


@attrs.frozen
class Step:
    """One converter bound to concrete types: a node of an inserted chain.

    :param converter: the registered converter (its ``fn`` is what the node calls).
    :param source: the concrete type it takes here (a family source is bound to it).
    :param target: the concrete type it gives here.
    :param distribution: the distribution that registered the converter.
    :param bound: the converter's target is a :class:`TypeFamily`, so its
        ``fn`` is called as ``fn(value, target)``.
    """

    name: str
    converter: Any
    source: Any
    target: Any
    lossless: bool
    cost: float
    distribution: str = "(in-process)"
    bound: bool = False

    @property
    def node_id(self) -> str:
        """``convert:<from>-><to>:<name>``, the id of the node that runs it."""
        return f"convert:{type_name(self.source)}->{type_name(self.target)}:{self.name}"

    def function(self) -> Callable[[Any], Any]:
        """The one-argument function the node calls."""
        fn: Callable[..., Any] = self.converter.fn
        if not self.bound:
            return fn
        target = self.target
        return lambda value: fn(value, target)

    def __str__(self) -> str:
        kind = "lossless" if self.lossless else "lossy"
        where = f", {self.distribution}" if self.distribution else ""
        return f"{self.name} ({type_name(self.source)} -> {type_name(self.target)}, {kind}{where})"


@attrs.frozen
class Chain:
    """The steps that turn ``source`` into a type the target accepts (maybe none)."""

    source: Any
    steps: tuple[Step, ...]
    cost: float = 0

    @property
    def lossless(self) -> bool:
        """True when no step is lossy."""
        return all(s.lossless for s in self.steps)

    @property
    def lossy_steps(self) -> tuple[Step, ...]:
        """The steps that lose information."""
        return tuple(s for s in self.steps if not s.lossless)

    def __str__(self) -> str:
        return " -> ".join(s.name for s in self.steps) or "(no conversion)"
