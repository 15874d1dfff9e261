"""An edge whose target cannot handle a type its source sends, as the wiring check
(:func:`~plait_documents.wire_types`) reports it: made when the check first finds one, so a
build whose edges all fit never builds the class.
"""

from __future__ import annotations

import attrs

__all__ = ["EdgeTypeProblem"]


@attrs.frozen
class EdgeTypeProblem:
    """One edge whose target cannot handle a type a source sends: the edge ``group``'s
    id, the ``producers`` (the sources that send that type), the ``target`` and the
    ``message`` (its ``str()``), which names all of them and both types.
    """

    group: str
    producers: tuple[str, ...]
    target: str
    message: str

    def __str__(self) -> str:
        return self.message
