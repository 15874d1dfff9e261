"""Tests for plait._types: run-time fit, dispatch decidability, names (static assignability
is plait-converters': plugins/plait-converters/tests/test_assignable.py)."""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import importlib.machinery
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    NewType,
    NoReturn,
    Optional,
    Protocol,
    TypeVar,
    Union,
    runtime_checkable,
)

import attrs
import pytest
import typing_extensions as tx
from hypothesis import HealthCheck, given, settings, strategies as st
from plait import Never
from plait._types import is_class_decidable, normalize
from plait.spi import is_instance, type_name

# --------------------------------------------------------------------------- fixtures


def _stable_id(value: object) -> str:
    """A test id that is the same in every process (no memory addresses)."""
    import re

    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


class Msg:
    pass


class SubMsg(Msg):
    pass


@dataclasses.dataclass
class DataMsg(Msg):
    text: str = ""


@attrs.define
class AttrsMsg:
    text: str = ""


@runtime_checkable
class Named(Protocol):
    name: str

    def greet(self) -> str: ...


class Greeter(Protocol):  # not runtime-checkable
    def greet(self) -> str: ...


class HasNameAndGreet:
    name: str = "n"

    def greet(self) -> str:
        return "hi"


@attrs.define
class AttrsNamed:
    name: str

    def greet(self) -> str:
        return "hi"


class OnlyGreets:
    def greet(self) -> str:
        return "hi"


class Point(tx.TypedDict):
    x: int
    y: int


class LabelledPoint(tx.TypedDict):
    x: int
    y: int
    label: str


class OptionalLabel(tx.TypedDict, total=False):
    label: str


UserId = NewType("UserId", int)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
TMsg = TypeVar("TMsg", bound=Msg)
TNum = TypeVar("TNum", int, str)


class Box(Generic[T_co]):
    pass


class StrKeyed(dict[str, T], Generic[T]):
    pass


# --------------------------------------------------------------------------- run-time fit

FITS: list[tuple[Any, Any]] = [
    (1, int),
    (True, int),
    (SubMsg(), Msg),
    (None, None),
    (None, Optional[int]),  # noqa: UP045
    ("x", int | str),
    (object(), Any),
    (object(), object),
    ([1, 2], list[int]),
    ([], list[int]),
    ([[1], [2, 3]], list[list[int]]),
    ((1, "a"), tuple[int, str]),
    ((1, 2, 3), tuple[int, ...]),
    ((), tuple[()]),
    ({"a": 1}, dict[str, int]),
    ({"a": 1}, cabc.Mapping[str, int]),
    ({"a": 1}, cabc.Iterable[str]),
    ({1, 2}, set[int]),
    ("abc", cabc.Sequence[str]),
    (b"ab", cabc.Sequence[int]),
    (iter(["not", "consumed"]), cabc.Iterator[int]),
    (1, Literal[1, 2]),
    ("a", Literal["a"]),
    (True, Literal[True]),
    (None, Literal[None]),
    (HasNameAndGreet(), Named),
    (OnlyGreets(), Greeter),
    ({"x": 1, "y": 2}, Point),
    ({"x": 1, "y": 2, "extra": "allowed"}, Point),
    ({}, OptionalLabel),
    ({"label": "l"}, OptionalLabel),
    (3, UserId),
    (3, Annotated[int, "meta"]),
    (SubMsg(), TMsg),
    (Msg(), TMsg),
    ("s", TNum),
    (Msg, type[Msg]),
    (SubMsg, type[Msg]),
    (bool, type[int | str]),
    (list, type[list[int]]),
    (SubMsg, type[Any]),
    (HasNameAndGreet, type[Named]),  # a protocol with data members: by member names
    (AttrsNamed, type[Named]),
    (OnlyGreets, type[Greeter]),
    (LabelledPoint, type[Point]),  # a TypedDict: by its keys
    (Box[int](), Box[str]),
    (len, Callable[[str], int]),
    ({"a": [1]}, StrKeyed[list[int]] | dict[str, list[int]]),
]

DOES_NOT_FIT: list[tuple[Any, Any]] = [
    ("1", int),
    (1, float),
    (Msg(), SubMsg),
    (None, int),
    (1.5, int | str),
    (1, Never),
    ([1, "a"], list[int]),
    ([*range(1000), "x"], list[int]),
    ([[1], ["a"]], list[list[int]]),
    ((1, 2), list[int]),
    ([1, 2], tuple[int, ...]),
    ((1, 1), tuple[int, str]),
    ((1,), tuple[int, str]),
    ((1,), tuple[()]),
    ({"a": "x"}, dict[str, int]),
    ({1: 1}, dict[str, int]),
    ({"a": 1}, cabc.Iterable[int]),
    ("abc", cabc.Sequence[int]),
    (True, Literal[1]),
    (1, Literal[True]),
    (3, Literal["3"]),
    ("c", Literal["a", "b"]),
    (OnlyGreets(), Named),
    (Msg(), Greeter),
    ({"x": 1}, Point),
    ({"x": "1", "y": 2}, Point),
    ([("x", 1), ("y", 2)], Point),
    ({"label": 1}, OptionalLabel),
    ("3", UserId),
    ("s", Annotated[int, "meta"]),
    (1, TMsg),
    (b"s", TNum),
    (Msg, type[SubMsg]),
    (Msg(), type[Msg]),
    (float, type[int | str]),
    (Msg, type[Never]),
    (int, type[UserId]),
    (bool, type[Literal[True]]),
    (OnlyGreets, type[Named]),
    (Point, type[LabelledPoint]),
    (dict, type[Point]),
]


@pytest.mark.parametrize(("value", "tp"), FITS, ids=_stable_id)
def test_fits(value: Any, tp: Any) -> None:
    assert is_instance(value, tp)


@pytest.mark.parametrize(("value", "tp"), DOES_NOT_FIT, ids=_stable_id)
def test_does_not_fit(value: Any, tp: Any) -> None:
    assert not is_instance(value, tp)


def test_an_unhashable_hint_fits() -> None:
    unhashable = Annotated[list[int], []]
    with pytest.raises(TypeError):
        hash(unhashable)
    assert is_instance([1], unhashable)
    assert not is_instance(["a"], unhashable)


def test_checking_does_not_consume_an_iterator() -> None:
    items = iter([1, 2])
    assert is_instance(items, cabc.Iterator[int])
    assert list(items) == [1, 2]


def test_large_and_self_referential_values() -> None:
    assert is_instance(list(range(50_000)), list[int])
    loop: list[Any] = []
    loop.append(loop)
    assert is_instance(loop, list[Any])
    assert is_instance(loop, list[list[Any]])


# --------------------------------------------------------------------------- decidability


@pytest.mark.parametrize(
    "tp", [int, Msg, AttrsMsg, DataMsg, Any, object, None, Never, int | None, UserId, list]
)
def test_class_decidable(tp: Any) -> None:
    assert is_class_decidable(tp)


@pytest.mark.parametrize(
    "tp",
    [list[int], Literal["a"], Point, Named, Greeter, int | list[str], tuple[int, str], type[Msg]],
)
def test_not_class_decidable(tp: Any) -> None:
    assert not is_class_decidable(tp)


# --------------------------------------------------------------------------- names and normalising


@pytest.mark.parametrize(
    ("tp", "name"),
    [
        (int, "int"),
        (None, "None"),
        (Any, "Any"),
        (Never, "Never"),
        (list[str], "list[str]"),
        (typing.List[str], "list[str]"),  # noqa: UP006
        (Optional[str], "str | None"),  # noqa: UP045
        (str | None, "str | None"),
        (Literal["a"], "Literal['a']"),
        (Literal["a", 1], "Literal['a', 1]"),
        (Msg, f"{__name__}.Msg"),
        (dict[str, Msg], f"dict[str, {__name__}.Msg]"),
        (tuple[int, ...], "tuple[int, ...]"),
        (tuple[()], "tuple[()]"),
        (cabc.Sequence[int], "Sequence[int]"),
        (Callable[[int], str], "Callable[[int], str]"),
        (Annotated[int, "m"], "int"),
        (UserId, "UserId"),
        (T, "T"),
        ("Msg", "Msg"),
    ],
    ids=repr,
)
def test_type_name(tp: Any, name: str) -> None:
    assert type_name(tp) == name


def test_a_script_class_is_named_by_the_module_the_script_is_when_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "__init__.py").write_text("", encoding="utf-8")
    script = tmp_path / "flows" / "app.py"
    script.write_text("", encoding="utf-8")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    script_class = type("Msg", (), {"__module__": "__main__"})
    assert type_name(script_class) == "flows.app.Msg"
    assert type_name(list[script_class]) == "list[flows.app.Msg]"  # type: ignore[valid-type]
    main.__spec__ = importlib.machinery.ModuleSpec("flows.run", None)  # python -m flows.run
    assert type_name(script_class) == "flows.run.Msg"
    main.__spec__ = None
    del main.__file__  # python -c, a REPL: nothing better to say
    assert type_name(script_class) == "__main__.Msg"


def test_normalize() -> None:
    assert normalize(None) is type(None)
    assert normalize(Optional[int]) == Union[int, None]  # noqa: UP007, UP045
    assert normalize(int | None) == Union[int, None]  # noqa: UP007
    assert normalize(Annotated[Annotated[int, 1], 2]) is int
    assert normalize(NoReturn) is Never
    assert normalize(tx.Any) is Any
    assert normalize(TMsg) is Msg
    assert normalize(T) is Any
    assert normalize(TNum) == Union[int, str]  # noqa: UP007
    assert normalize(Union[int, Annotated[str, "m"]]) == Union[int, str]  # noqa: UP007
    assert normalize(list[int]) == list[int]


# --------------------------------------------------------------------------- properties

_FAST = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

_scalars = st.sampled_from([int, str, float, bytes, bool, type(None)])
_literals = st.lists(
    st.one_of(st.integers(-2, 2), st.sampled_from(["a", "b"]), st.booleans()),
    min_size=1,
    max_size=3,
).map(lambda values: Literal[tuple(values)])
_keys = st.one_of(st.sampled_from([int, str, bytes]), _literals)


def _compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda t: list[t]),  # type: ignore[valid-type]
        st.tuples(_keys, children).map(lambda kv: dict[kv[0], kv[1]]),  # type: ignore[valid-type]
        children.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        st.lists(children, min_size=1, max_size=3).map(lambda ts: tuple[tuple(ts)]),  # type: ignore[misc]
        st.tuples(children, children).map(lambda ab: Union[ab]),  # noqa: UP007
    )


types_ = st.recursive(st.one_of(_scalars, _literals), _compound, max_leaves=4)


@_FAST
@given(st.data(), types_)
def test_generated_values_fit_their_type(data: st.DataObject, tp: Any) -> None:
    value = data.draw(st.from_type(tp))
    assert is_instance(value, tp)


def test_a_long_list_of_plain_values_checks_one_item_per_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fan-in's ``list[int]`` of 10,000 values costs one check per distinct type of its
    items, not one per item; an item of another type still fails it."""
    import plait._types

    checks: list[Any] = []
    fits = plait._types._fits

    def counting(value: Any, tp: Any) -> bool:
        checks.append(tp)
        return fits(value, tp)

    monkeypatch.setattr(plait._types, "_fits", counting)
    values = list(range(10_000))
    assert is_instance(values, list[int])
    assert is_instance((*values, True), tuple[int, ...])  # bool: a subclass of int
    assert not is_instance([*values, "x"], list[int])
    assert not is_instance([*values, 1.5], list[int | str])  # a union: each type decides
    assert len(checks) < 20
    # where the type alone does not decide, every item is checked
    assert not is_instance([[1]] * 50 + [["x"]], list[list[int]])
    assert len(checks) > 50
