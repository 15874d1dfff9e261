"""Tests for plait._types: static assignability, run-time fit, dispatch decidability, names."""

from __future__ import annotations

import collections
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
from plait.spi import is_assignable, is_instance, type_name

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


@dataclasses.dataclass
class OtherData:
    text: str = ""


@attrs.define
class AttrsMsg:
    text: str = ""


@attrs.define
class AttrsSub(AttrsMsg):
    extra: int = 0


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


class BoolPoint(tx.TypedDict):
    x: bool
    y: bool


UserId = NewType("UserId", int)
AdminId = NewType("AdminId", UserId)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
TMsg = TypeVar("TMsg", bound=Msg)
TNum = TypeVar("TNum", int, str)


class Box(Generic[T_co]):
    pass


class Crate(Box[T_co]):
    pass


class StrKeyed(dict[str, T], Generic[T]):
    pass


# --------------------------------------------------------------------------- assignability table

ASSIGNABLE: list[tuple[Any, Any]] = [
    # identity, subclasses, attrs and dataclasses (nominal)
    (int, int),
    (SubMsg, Msg),
    (DataMsg, Msg),
    (AttrsSub, AttrsMsg),
    (bool, int),
    # Any and object
    (Any, int),
    (Any, list[int]),
    (int, Any),
    (list[int], object),
    (Msg, object),
    (object, object),
    # unions, Optional, None
    (int, Optional[int]),  # noqa: UP045 - testing the typing spelling on purpose
    (None, Optional[int]),  # noqa: UP045
    (type(None), int | None),
    (None, None),
    (int | str, int | str | bytes),
    (Union[int, str], str | int),  # noqa: UP007
    (SubMsg | None, Msg | None),
    (Never, int | str),
    # Literal
    (Literal["a"], str),
    (Literal["a"], Literal["a", "b"]),
    (Literal["a", "b"], Literal["a"] | Literal["b"]),
    (Literal["a", 1], str | int),
    (Literal[True], int),
    (Literal[None], None),
    (Literal["a"], Literal["a"] | int),
    # generics and variance
    (list[int], list[int]),
    (list[int], typing.Sequence[int]),
    (list[int], cabc.Sequence[int]),
    (list[bool], cabc.Sequence[int]),
    (list[int], cabc.Iterable[int]),
    (list[int], cabc.Collection[int]),
    (typing.List[int], list[int]),  # noqa: UP006
    (dict[str, Msg], typing.Mapping[str, Msg]),
    (dict[str, SubMsg], cabc.Mapping[str, Msg]),
    (dict[str, int], cabc.Iterable[str]),
    (collections.OrderedDict[str, int], dict[str, int]),
    (set[int], cabc.Set[int]),
    (frozenset[bool], frozenset[int]),
    (collections.deque[int], cabc.MutableSequence[int]),
    (type[SubMsg], type[Msg]),
    (list[list[bool]], cabc.Sequence[cabc.Sequence[int]]),
    (list[Any], list[int]),
    (list[int], list[Any]),
    # bare generics mean [Any]
    (list, list[Any]),
    (list[Any], list),
    (list[int], list),
    (list, list[int]),
    (list, cabc.Iterable[str]),
    (dict, cabc.Mapping[str, int]),
    # tuples
    (tuple[int, ...], tuple[int, ...]),
    (tuple[int, str], tuple[int, str]),
    (tuple[bool, bool], tuple[int, ...]),
    (tuple[()], tuple[int, ...]),
    (tuple[()], tuple[()]),
    (tuple[int, str], cabc.Sequence[int | str]),
    (tuple[int, ...], cabc.Iterable[int]),
    (tuple, tuple[int, str]),
    (tuple[Any, ...], tuple[int, str]),
    (typing.Tuple[int, str], tuple[int, str]),  # noqa: UP006
    # callables: parameters contravariant, result covariant
    (Callable[[Msg], SubMsg], Callable[[SubMsg], Msg]),
    (Callable[..., int], Callable[[int], int]),
    (typing.Callable[[int], bool], Callable[[bool], int]),
    # protocols (structural)
    (HasNameAndGreet, Named),
    (AttrsNamed, Named),
    (HasNameAndGreet, Greeter),
    (OnlyGreets, Greeter),
    (Named, Greeter),
    (int, typing.SupportsInt),
    # TypedDict
    (Point, dict[str, Any]),
    (Point, cabc.Mapping[str, Any]),
    (Point, cabc.Mapping[str, int]),
    (Point, dict[str, int]),
    (LabelledPoint, Point),
    (Point, Point),
    (LabelledPoint, OptionalLabel),
    (BoolPoint, Point),
    # Never / NoReturn
    (Never, int),
    (NoReturn, Msg),
    (Never, Never),
    (NoReturn, Never),
    (tx.Never, list[int]),
    # Annotated
    (Annotated[int, "meta"], int),
    (int, Annotated[int, "meta"]),
    (list[Annotated[int, "m"]], cabc.Sequence[int]),
    # NewType
    (UserId, int),
    (UserId, UserId),
    (AdminId, int),
    (AdminId, UserId),
    (list[UserId], cabc.Sequence[int]),
    # TypeVars: bound, constraints, or Any
    (TMsg, Msg),
    (SubMsg, TMsg),
    (Msg, TMsg),
    (T, int),
    (int, T),
    (TNum, int | str),
    (int, TNum),
    # user generics and their bases
    (Box[SubMsg], Box[Msg]),
    (Crate[SubMsg], Box[Msg]),
    (StrKeyed[int], cabc.Mapping[str, int]),
    # forward references are unknown: Any
    ("Msg", int),
]

NOT_ASSIGNABLE: list[tuple[Any, Any]] = [
    (Msg, SubMsg),
    (int, str),
    (object, int),
    (OtherData, DataMsg),
    (AttrsMsg, AttrsSub),
    # numeric tower deliberately absent: int -> float is a converter's job
    (int, float),
    (float, complex),
    (list[int], list[float]),
    # unions
    (Optional[int], int),  # noqa: UP045
    (None, int),
    (int | str, int),
    (int | None, str | None),
    # Literal
    (str, Literal["a"]),
    (Literal["c"], Literal["a", "b"]),
    (Literal["a", "c"], Literal["a", "b"]),
    (Literal[1], bool),
    (Literal[True], Literal[1]),
    (Literal[1], Literal[True]),
    (Literal[1], str),
    # variance
    (list[bool], list[int]),
    (dict[str, SubMsg], dict[str, Msg]),
    (dict[str, int], cabc.Mapping[int, int]),
    (dict[bool, int], cabc.Mapping[int, int]),  # Mapping keys are invariant
    (list[str], cabc.Iterable[int]),
    (list[int], cabc.Mapping[int, int]),
    (cabc.Sequence[int], list[int]),
    (set[int], list[int]),
    (type[Msg], type[SubMsg]),
    (list[list[bool]], list[list[int]]),
    (Box[Msg], Box[SubMsg]),
    (Crate[Msg], Box[SubMsg]),
    (StrKeyed[str], cabc.Mapping[str, int]),
    # tuples
    (tuple[int, str], tuple[int, ...]),
    (tuple[int], tuple[int, str]),
    (tuple[int, str], tuple[str, int]),
    (tuple[int, ...], tuple[int, int]),
    (tuple[int, ...], tuple[()]),
    (tuple[int], tuple[()]),
    (tuple[int, str], cabc.Sequence[int]),
    (list[int], tuple[int, ...]),
    # callables
    (Callable[[SubMsg], Msg], Callable[[Msg], Msg]),
    (Callable[[Msg], Msg], Callable[[Msg], SubMsg]),
    (Callable[[int], int], Callable[[int, int], int]),
    # protocols
    (OnlyGreets, Named),
    (Msg, Named),
    (str, typing.SupportsIndex),
    # TypedDict
    (Point, LabelledPoint),
    (dict[str, Any], Point),
    (Point, dict[str, str]),
    (Point, list[str]),
    (OptionalLabel, LabelledPoint),
    (Point, BoolPoint),
    # Never
    (int, Never),
    (None, Never),
    (Any | int, Never),
    # Annotated, NewType, TypeVar
    (Annotated[str, "m"], int),
    (int, UserId),
    (UserId, AdminId),
    (UserId, str),
    (int, TMsg),
    (TNum, int),
    (bytes, TNum),
]


@pytest.mark.parametrize(("source", "target"), ASSIGNABLE, ids=_stable_id)
def test_assignable(source: Any, target: Any) -> None:
    assert is_assignable(source, target)


@pytest.mark.parametrize(("source", "target"), NOT_ASSIGNABLE, ids=_stable_id)
def test_not_assignable(source: Any, target: Any) -> None:
    assert not is_assignable(source, target)


def test_unhashable_hints_are_computed_without_the_cache() -> None:
    unhashable = Annotated[list[int], []]
    with pytest.raises(TypeError):
        hash(unhashable)
    assert is_assignable(unhashable, cabc.Sequence[int])
    assert not is_assignable(unhashable, cabc.Sequence[str])
    assert is_instance([1], unhashable)


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
]


@pytest.mark.parametrize(("value", "tp"), FITS, ids=_stable_id)
def test_fits(value: Any, tp: Any) -> None:
    assert is_instance(value, tp)


@pytest.mark.parametrize(("value", "tp"), DOES_NOT_FIT, ids=_stable_id)
def test_does_not_fit(value: Any, tp: Any) -> None:
    assert not is_instance(value, tp)


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
@given(types_)
def test_reflexive(tp: Any) -> None:
    assert is_assignable(tp, tp)


@_FAST
@given(types_, types_)
def test_member_assignable_to_union(x: Any, y: Any) -> None:
    assert is_assignable(x, Union[x, y])  # noqa: UP007
    assert is_assignable(y, Union[x, y])  # noqa: UP007


@_FAST
@given(types_, types_, types_)
def test_transitive_through_unions(x: Any, y: Any, z: Any) -> None:
    middle, top = Union[x, y], Union[x, y, z]  # noqa: UP007
    assert is_assignable(x, middle)
    assert is_assignable(middle, top)
    assert is_assignable(x, top)


@_FAST
@given(st.data(), types_)
def test_generated_values_fit_their_type(data: st.DataObject, tp: Any) -> None:
    value = data.draw(st.from_type(tp))
    assert is_instance(value, tp)


@_FAST
@given(st.data(), types_, types_)
def test_assignable_types_admit_the_values(data: st.DataObject, source: Any, target: Any) -> None:
    # Soundness: what is_assignable lets through, is_instance accepts.
    if is_assignable(source, target):
        assert is_instance(data.draw(st.from_type(source)), target)


@pytest.mark.parametrize(
    ("a", "b", "c"),
    [
        (bool, int, object),
        (list[bool], cabc.Sequence[int], cabc.Iterable[int]),
        (Literal["a"], Literal["a", "b"], str),
        (LabelledPoint, Point, cabc.Mapping[str, Any]),
        (AdminId, UserId, int),
        (Never, SubMsg, Msg | None),
        (tuple[bool, bool], tuple[int, ...], cabc.Sequence[int]),
    ],
    ids=repr,
)
def test_transitivity_spot_checks(a: Any, b: Any, c: Any) -> None:
    assert is_assignable(a, b)
    assert is_assignable(b, c)
    assert is_assignable(a, c)
    assert not is_assignable(c, a)
