"""The expression parser: an LALR(1) driver over the tables lark computed ahead of time.

``_tables.py`` holds what lark makes of ``grammar.lark`` (see :mod:`plait_expr._generate`):
the parse table, each state's contextual lexer and how each rule's children are passed on.
This module runs them the way lark's LALR parser and contextual lexer do — the same tokens,
the same reductions, the same errors (a test holds the two together over a corpus and random
input) — with nothing to build at run time: the first compile of a process pays only for
importing the tables. Each reduction calls the compiler's method for its rule at once, so
no parse tree is built and nothing recurses on the input.
"""

from __future__ import annotations

import re
from typing import Any

from . import _tables as tables

__all__ = ["Parser", "Token", "UnexpectedCharacters", "UnexpectedToken"]


class Token:
    """A terminal of the text: its ``type`` (``NAME``, ``INT``, ``OR`` …), its text, and
    where it starts (``start_pos`` is the offset; ``line`` and ``column`` are 1-based)."""

    __slots__ = ("column", "line", "start_pos", "type", "value")

    def __init__(self, type_: str, value: str, start_pos: int, line: int, column: int) -> None:
        self.type = type_
        self.value = value
        self.start_pos = start_pos
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"


class UnexpectedCharacters(Exception):
    """No terminal the parser could take next starts at ``pos_in_stream``."""

    def __init__(self, pos: int, line: int, column: int, allowed: frozenset[str]) -> None:
        super().__init__(f"unexpected character at line {line}, column {column}")
        self.pos_in_stream = pos
        self.line = line
        self.column = column
        self.allowed = allowed


class UnexpectedToken(Exception):
    """``token`` cannot come here; ``expected`` names the terminals that could."""

    def __init__(self, token: Token, expected: frozenset[str]) -> None:
        super().__init__(f"unexpected {token.type} at line {token.line}, column {token.column}")
        self.token = token
        self.expected = expected


class _Lexer:
    """One state's lexer: its terminals tried in order (the first that matches wins, as
    in lark), the keywords a ``NAME`` becomes, and what an error names as allowed."""

    __slots__ = ("allowed", "keywords", "regex")

    def __init__(self, terminals: tuple[str, ...], keywords: Any, allowed: tuple[str, ...]):
        self.regex = re.compile(
            "|".join(f"(?P<{name}>{tables.PATTERNS[name]})" for name in terminals)
        )
        self.keywords: dict[str, dict[str, str]] = keywords
        self.allowed = frozenset(allowed)


class Parser:
    """Parses a text and reduces it with ``compiler``'s methods (one per rule alias).
    Stateless between calls, so one parser serves every compile and every thread."""

    def __init__(self, compiler: Any) -> None:
        self._lexers: list[_Lexer | None] = [None] * len(tables.LEXERS)
        self._ignore = frozenset(tables.IGNORE)
        self._newline = frozenset(tables.NEWLINE)
        # per rule: (origin, symbols, method or None, pass one child through, children, tail)
        self._rules = [
            (origin, size, getattr(compiler, name) if name else None, expand1, include, tail)
            for origin, size, name, expand1, include, tail in tables.RULES
        ]

    def _lexer(self, index: int) -> _Lexer:
        lexer = self._lexers[index]
        if lexer is None:  # built when first needed: most states' never are
            lexer = self._lexers[index] = _Lexer(*tables.LEXERS[index])
        return lexer

    def parse(self, text: str) -> Any:
        """The compiler's value for ``text``.

        :raises UnexpectedCharacters: where no terminal matches.
        :raises UnexpectedToken: at a terminal the grammar does not allow there (``$END``
            for the end of the text).
        """
        actions, state_lexer = tables.ACTIONS, tables.STATE_LEXER
        states: list[int] = [tables.START]
        values: list[Any] = []
        pos, line, line_start, end = 0, 1, 0, len(text)
        last: Token | None = None
        while True:
            # the next token, lexed in the context of the current state
            token: Token | None = None
            while pos < end:
                lexer = self._lexer(state_lexer[states[-1]])
                match = lexer.regex.match(text, pos)
                if match is None:
                    raise self._no_match(text, pos, line, pos - line_start + 1, lexer)
                kind = match.lastgroup or ""
                value = match.group()
                column = pos - line_start + 1
                start, token_line = pos, line
                if kind in self._newline and "\n" in value:
                    line += value.count("\n")
                    line_start = pos + value.rindex("\n") + 1
                pos = match.end()
                if kind not in self._ignore:
                    words = lexer.keywords.get(kind)
                    if words is not None:
                        kind = words.get(value, kind)
                    token = Token(kind, value, start, token_line, column)
                    break
            if token is None:  # the end: "$END" where the last token was, as lark does
                where = last or Token("$END", "", 0, 1, 1)
                token = Token("$END", "", where.start_pos, where.line, where.column)
            last = token
            # feed it: reduce as the table says, then shift it (or accept at the end)
            while True:
                row = actions[states[-1]]
                action = row.get(token.type)
                if action is None:
                    expected = frozenset(s for s in row if s.isupper())
                    raise UnexpectedToken(token, expected)
                if action >= 0:
                    states.append(action)
                    values.append(token)
                    break
                origin, size, method, expand1, include, tail = self._rules[-1 - action]
                if size:
                    popped = values[-size:]
                    del states[-size:]
                    del values[-size:]
                else:
                    popped = []
                children: list[Any] = []
                for index, inline, nones in include:
                    if nones:
                        children += [None] * nones
                    if inline:
                        children += popped[index]
                    else:
                        children.append(popped[index])
                if tail:
                    children += [None] * tail
                if expand1 and len(children) == 1:
                    result = children[0]
                elif method is not None:
                    result = method(children)
                else:  # an inlined _rule: its children go into the rule that holds it
                    result = children
                goto = actions[states[-1]][origin]
                states.append(goto)
                values.append(result)
                if token.type == "$END" and goto == tables.END:
                    return values[-1]

    def _no_match(
        self, text: str, pos: int, line: int, column: int, lexer: _Lexer
    ) -> UnexpectedCharacters | UnexpectedToken:
        """What lark's contextual lexer says where its state's terminals do not match: an
        unexpected token if some terminal of the grammar matches there, else an
        unexpected character."""
        root = self._lexer(tables.ROOT_LEXER)
        match = root.regex.match(text, pos)  # pos is past any blanks: the state skipped them
        if match is None:
            return UnexpectedCharacters(pos, line, column, lexer.allowed)
        kind = match.lastgroup or ""
        words = root.keywords.get(kind)
        if words is not None:
            kind = words.get(match.group(), kind)
        return UnexpectedToken(Token(kind, match.group(), pos, line, column), lexer.allowed)
