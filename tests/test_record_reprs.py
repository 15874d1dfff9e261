"""The first-party plugins' records that ``plait run`` of a document and a cold build
make share ``plait.spi.record_repr`` (no generated ``__repr__`` to compile at import), and
each prints what attrs' generated ``__repr__`` would print, byte for byte.
(The kernel's records: ``core/tests/test_records.py``.)"""

from __future__ import annotations

import importlib

import attrs
import pytest
from plait.spi import record_repr
from plait_testing.records import check_record_repr

#: the plugin modules with records that a ``plait run`` of a steps file imports
MODULES = [
    "plait_cli._follow",
    "plait_cli._run",
    "plait_cli._target",
    "plait_documents._capabilities",
    "plait_documents._source",
    "plait_durable._options",
    "plait_durable._runindex",
    "plait_durable.checkpoint",
    "plait_steps._document",
]

RECORDS = [
    value
    for name in MODULES
    for value in vars(importlib.import_module(name)).values()
    if isinstance(value, type) and attrs.has(value) and value.__module__ == name
]


def test_every_module_has_records() -> None:
    assert {cls.__module__ for cls in RECORDS} == set(MODULES)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_each_record_shares_the_repr_and_it_prints_as_attrs_would(cls: type) -> None:
    assert cls.__repr__ is record_repr
    check_record_repr(cls)
