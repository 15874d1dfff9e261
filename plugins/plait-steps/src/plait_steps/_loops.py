"""A steps document's loops: each ``goto`` that goes back to an earlier step is a
:class:`Loop` the compiler keeps (imported when a document's first ``goto`` goes back: a
document without one never builds the class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from ._document import Step

__all__ = ["Loop"]


@attrs.define
class Loop:
    """One back-edge: the step it goes back to, the list both are in, and the span of that
    list the loop goes round (``first``..``last``, by index)."""

    target: str
    steps: list[Step]
    first: int
    last: int

    def members(self) -> set[str]:
        """The ids of every step the loop goes round."""
        return {s.id for top in self.steps[self.first : self.last + 1] for s in top.walk()}
