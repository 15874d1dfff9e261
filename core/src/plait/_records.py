"""One ``__repr__`` for every attrs record: :func:`record_repr`.

attrs writes a ``__repr__`` for each class it decorates (unless ``repr=False``), and
compiling that generated method is about a quarter of what making the class costs — paid
at import, for every record of every module a command imports. A record that says
``repr=False`` and takes this shared function instead prints exactly what attrs' own would
have printed, and its class is cheaper to make::

    import attrs
    from plait.spi import record_repr


    @attrs.frozen(repr=False)
    class Step:
        name: str
        timeout: float | None = None

        __repr__ = record_repr

A subclass decorated by attrs writes its own ``repr=False`` (attrs would otherwise give it
a generated one again); it inherits ``__repr__``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

__all__ = ["record_repr"]

#: the ids of the objects being repr'd on this thread: an object reached again inside its
#: own repr prints ``...`` (attrs keeps the same guard, a set per thread)
_repring = threading.local()


def record_repr(self: Any) -> str:
    """``ClassName(field=value, ...)`` of an attrs instance, as attrs' generated
    ``__repr__`` writes it.

    Each field of ``__attrs_attrs__`` in order, but those declared ``repr=False``; a field
    declared ``repr=callable`` is shown by that callable instead of :func:`repr`. The class
    name is its ``__qualname__`` after the last ``>.`` (a class made in a function shows
    its own name). A field set to an object already being repr'd on this thread (a
    cycle) shows ``...``; a field without ``init`` that was never set shows ``NOTHING``.
    """
    try:
        active: set[int] = _repring.active
    except AttributeError:
        active = _repring.active = set()
    if id(self) in active:
        return "..."
    active.add(id(self))
    try:
        parts = []
        for field in self.__class__.__attrs_attrs__:
            shown = field.repr
            if shown is False:
                continue
            if field.init:
                value = getattr(self, field.name)
            else:  # attrs' rule: a field outside __init__ may be unset
                value = getattr(self, field.name, attrs.NOTHING)
            parts.append(f"{field.name}={repr(value) if shown is True else shown(value)}")
        name = self.__class__.__qualname__.rsplit(">.", 1)[-1]
        return f"{name}({', '.join(parts)})"
    finally:
        active.discard(id(self))
