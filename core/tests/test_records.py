"""``plait.spi.record_repr``: the one ``__repr__`` of the kernel's records prints what the
``__repr__`` attrs generates would print, byte for byte, for every record."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import plait
import pytest
from plait import NodeSpec, RetryPolicy
from plait.spi import record_repr
from plait_testing.records import attrs_repr, check_record_repr

KERNEL = Path(plait.__file__).parent


def _records(module_name: str) -> list[type]:
    module = importlib.import_module(module_name)
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type) and attrs.has(value) and value.__module__ == module_name
    ]


#: every attrs class the kernel defines
RECORDS = [
    cls
    for path in sorted(KERNEL.glob("_*.py"))
    if "attrs." in path.read_text(encoding="utf-8")
    for cls in _records(f"plait.{path.stem}")
]


def test_the_kernel_has_records() -> None:
    assert len(RECORDS) >= 31
    assert NodeSpec in RECORDS and RetryPolicy in RECORDS


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: cls.__qualname__)
def test_each_record_shares_the_repr_and_it_prints_as_attrs_would(cls: type) -> None:
    # attrs compiles a __repr__ for a class that does not say repr=False: no record of the
    # kernel pays for one (a hand-written __repr__ is its own)
    generated = getattr(cls.__repr__, "__code__", None)
    assert generated is None or not generated.co_filename.startswith("<attrs generated")
    if cls.__repr__ is record_repr:
        check_record_repr(cls)


def test_real_records_print_as_before() -> None:
    node = NodeSpec("a", retry={"max_attempts": 3})
    assert repr(node) == attrs_repr(node)
    assert repr(node).startswith("NodeSpec(id='a', kind='python', ref=None, ")
    policy = RetryPolicy(max_attempts=3)
    assert repr(policy) == (
        "RetryPolicy(max_attempts=3, backoff='exponential', delay=0.1, max_delay=30.0, "
        "jitter=0.0, on=())"
    )


def _both(**fields: Any) -> tuple[type, type]:
    """A record sharing ``record_repr`` and its twin with attrs' generated repr, each with
    ``fields`` (fresh ``attrs.field`` objects for each)."""

    def make(repr_: bool) -> type:
        namespace = {name: attrs.field(**options) for name, options in fields.items()}
        cls = attrs.make_class("Thing", namespace, repr=repr_, slots=True, eq=False)
        if not repr_:
            cls.__repr__ = record_repr  # type: ignore[method-assign]
        return cls

    return make(False), make(True)


def test_left_out_and_custom_fields_print_as_attrs_prints_them() -> None:
    shout: Callable[[Any], str] = lambda value: f"<{str(value).upper()}>"  # noqa: E731
    options = {
        "name": {},
        "secret": {"repr": False},
        "loud": {"repr": shout},
        "late": {"init": False},
        "last": {"default": None},
    }
    ours, theirs = _both(**options)
    a, b = ours("n", "s", "quiet"), theirs("n", "s", "quiet")
    assert repr(a) == repr(b) == "Thing(name='n', loud=<QUIET>, late=NOTHING, last=None)"
    a.late, b.late = [1], [1]
    assert repr(a) == repr(b)


def test_a_record_reached_again_inside_its_own_repr_prints_dots() -> None:
    ours, theirs = _both(name={}, child={"default": None})
    a, b = ours("outer"), theirs("outer")
    a.child, b.child = [a], [b]
    assert repr(a) == repr(b) == "Thing(name='outer', child=[...])"
    # the guard is per object: the same object twice side by side is printed twice
    inner_a, inner_b = ours("inner"), theirs("inner")
    a.child, b.child = (inner_a, inner_a), (inner_b, inner_b)
    assert repr(a) == repr(b)
    assert repr(a).count("Thing(name='inner'") == 2


def test_a_failing_field_repr_leaves_no_guard_behind() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    ours, _ = _both(value={})
    record = ours(Broken())
    with pytest.raises(RuntimeError):
        repr(record)
    record.value = 1
    assert repr(record) == "Thing(value=1)"


def test_a_record_made_in_a_function_is_named_as_attrs_names_it() -> None:
    @attrs.frozen(repr=False)
    class Local:
        """A record of a function."""

        __repr__ = record_repr

        x: int

    assert "<locals>" in Local.__qualname__
    assert repr(Local(1)) == attrs_repr(Local(1)) == "Local(x=1)"


def test_threads_keep_their_own_guard() -> None:
    ours, _ = _both(value={})
    seen: list[str] = []
    gate = threading.Barrier(2)

    class Slow:
        def __repr__(self) -> str:
            gate.wait(timeout=10)  # both threads are inside the same record's repr
            return "slow"

    shared = ours(Slow())
    threads = [threading.Thread(target=lambda: seen.append(repr(shared))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert seen == ["Thing(value=slow)", "Thing(value=slow)"]
