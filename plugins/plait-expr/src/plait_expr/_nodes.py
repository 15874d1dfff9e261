"""Compiled nodes: a closure plus what compiling around it needs to know."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _runtime as rt
from ._parser import Token

Fn = Callable[[Any], Any]
_NO_CONST = object()


class CompileError(Exception):
    """A problem found while compiling, at ``(line, column)`` of the expression text."""

    def __init__(self, message: str, pos: tuple[int, int]) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class Node:
    """One compiled (sub)expression."""

    __slots__ = ("const", "depth", "fn", "is_bool", "names", "path", "pos")

    depth: int
    names: frozenset[str]

    def __init__(
        self,
        fn: Fn,
        pos: tuple[int, int],
        children: tuple[Node, ...] = (),
        *,
        const: Any = _NO_CONST,
        path: tuple[Any, ...] | None = None,
        is_bool: bool = False,
        names: frozenset[str] = frozenset(),
        at: tuple[int, int] | None = None,
    ) -> None:
        self.fn = fn
        self.pos = pos
        self.const = const
        self.path = path
        self.is_bool = is_bool
        self.depth = 1 + max((c.depth for c in children), default=0)
        if self.depth > rt.MAX_DEPTH:
            raise CompileError(f"nested more than {rt.MAX_DEPTH} levels deep", at or pos)
        self.names = names.union(*(c.names for c in children)) if children else names

    @property
    def is_const(self) -> bool:
        return self.const is not _NO_CONST


def token_pos(token: Token) -> tuple[int, int]:
    return (token.line or 1, token.column or 1)


def constant(value: Any, pos: tuple[int, int], children: tuple[Node, ...] = ()) -> Node:
    """A literal (or a folded constant, which keeps its ``children``' depth)."""
    return Node(lambda data: value, pos, children, const=value, is_bool=isinstance(value, bool))
