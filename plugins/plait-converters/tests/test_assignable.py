"""plait_converters.is_assignable: static assignability, the builder's edge check and the
search's, and that it agrees with the kernel's run-time check (plait.spi.is_instance)."""

from __future__ import annotations

import collections
import collections.abc as cabc
import dataclasses
import typing
from collections.abc import Callable
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
from plait.spi import is_instance
from plait_converters import is_assignable

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
