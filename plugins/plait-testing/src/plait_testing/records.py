"""Checking a record that shares :func:`plait.spi.record_repr`: its repr is attrs' own.

A record declared ``repr=False`` with ``__repr__ = record_repr`` must print what the
``__repr__`` attrs would have generated prints, byte for byte: tests and users compare
reprs. :func:`check_record_repr` makes the record's attrs twin — the same fields, in the
same order, with the same ``repr`` settings, and the repr attrs generates — gives both
the same value in every field (each value names its field, so a field left out, added or
moved shows), and compares::

    import plait_testing.records

    def test_my_records_print_as_attrs_would() -> None:
        for cls in (Step, Document):
            plait_testing.records.check_record_repr(cls)
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["attrs_repr", "check_record_repr"]


class _Named:
    """A field value whose repr names the field: ``<value of timeout>``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<value of {self.name}>"


def _filled(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` holding ``values``, made without ``__init__`` (no
    validator or converter runs); a field missing from ``values`` stays unset."""
    instance: Any = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(instance, name, value)
    return instance


def attrs_repr(instance: Any) -> str:
    """What the ``__repr__`` attrs generates would print for ``instance``, an attrs
    record, whatever ``__repr__`` its class has: the same field values, printed by a twin
    class made with ``repr=True``."""
    cls = type(instance)
    fields = attrs.fields(cls)
    twin = attrs.make_class(
        cls.__name__,
        {f.name: attrs.field(repr=f.repr, init=f.init) for f in fields},
        repr=True,
        eq=False,
        slots=True,
    )
    twin.__qualname__ = cls.__qualname__
    missing = object()
    values = {f.name: getattr(instance, f.name, missing) for f in fields}
    return repr(_filled(twin, {k: v for k, v in values.items() if v is not missing}))


def check_record_repr(cls: type, **values: Any) -> None:
    """Assert that ``repr`` of a ``cls`` instance is what attrs' generated ``__repr__``
    prints, for an instance whose every field holds a value naming that field.

    :param cls: an attrs class (its ``__repr__`` is typically :func:`plait.spi.record_repr`).
    :param values: values for some fields instead of the named placeholders (a field's
        ``repr=callable`` may need a value of its own type).
    :raises AssertionError: the reprs differ (both are in the message).
    """
    assert attrs.has(cls), f"{cls.__qualname__} is not an attrs class"
    filled = {f.name: values.get(f.name, _Named(f.name)) for f in attrs.fields(cls)}
    instance = _filled(cls, filled)
    expected = attrs_repr(instance)
    assert repr(instance) == expected, f"{repr(instance)!r} != {expected!r} (attrs' repr)"
