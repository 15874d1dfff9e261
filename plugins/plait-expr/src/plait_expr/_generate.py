"""Build ``_tables.py``, the expression parser's tables, from ``grammar.lark`` with lark.

The parser that runs (:mod:`plait_expr._parser`) reads tables computed ahead of time, so the
first compile of a process builds nothing and imports no parser generator. lark computes
them here: its LALR(1) table, each parser state's contextual lexer (the terminals it tries,
in lark's order, and the keywords its ``NAME`` becomes), and how each rule's children reach
the compiler (lark's placeholders for ``[optional]`` parts and its inlined ``_rules``).
State and rule numbers are canonical (states in breadth-first order from the start, rules
sorted), so the output is the same on every run. A test regenerates it and compares, so
the tables never go stale. After changing the grammar (or lark)::

    python -m plait_expr._generate

This module imports lark (a test dependency); nothing imports it at run time.
"""

from __future__ import annotations

import hashlib
import pprint
import sys
from importlib import resources
from pathlib import Path
from typing import Any

HEADER = '''"""The expression parser's tables: GENERATED from grammar.lark by plait_expr._generate
(``python -m plait_expr._generate``); do not edit. A test regenerates and compares them."""

# ruff: noqa: E501
# fmt: off
'''


def grammar_text() -> str:
    """The grammar the tables are built from."""
    return resources.files("plait_expr").joinpath("grammar.lark").read_text("utf-8")


def generate() -> str:
    """The text of ``_tables.py`` for the current grammar."""
    import lark
    from lark.parse_tree_builder import maybe_create_child_filter
    from lark.parsers.lalr_analysis import Shift

    from ._compiler import Compiler

    grammar = grammar_text()
    built = lark.Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=True)
    table = built.parser.parser.parser.parse_table
    contextual = built.parser.lexer
    start = table.start_states["start"]
    end = table.end_states["start"]

    # rules, sorted: (origin, expansion, alias, placeholders) names each one
    def rule_key(rule: Any) -> tuple[Any, ...]:
        return (
            str(rule.origin.name),
            tuple(str(s.name) for s in rule.expansion),
            str(rule.alias or ""),
            tuple(rule.options.empty_indices or ()),
        )

    rules = sorted(built.rules, key=rule_key)
    rule_index = {id(rule): i for i, rule in enumerate(rules)}

    # states, in breadth-first order from the start state over sorted symbols
    order = [start]
    seen = {start}
    for state in order:
        for symbol in sorted(table.states[state]):
            action, arg = table.states[state][symbol]
            if action is Shift and arg not in seen:
                seen.add(arg)
                order.append(arg)
    missing = set(table.states) - seen
    assert not missing, f"states not reachable from the start: {missing}"
    number = {state: i for i, state in enumerate(order)}

    actions = []
    for state in order:
        row = {}
        for symbol in sorted(table.states[state]):
            action, arg = table.states[state][symbol]
            # a shift (or goto) is the state, a reduce is -1 - the rule
            row[str(symbol)] = number[arg] if action is Shift else -1 - rule_index[id(arg)]
        actions.append(row)

    callbacks = set(dir(Compiler))
    shaped = []
    for rule in rules:
        name = str(rule.alias or rule.options.template_source or rule.origin.name)
        origin = str(rule.origin.name)
        inline = origin.startswith("_")
        expand1 = bool(rule.options.expand1 and not rule.alias)
        empty = rule.options.empty_indices
        placeholders: Any = list(empty) if empty else None  # lark's own argument
        flt = maybe_create_child_filter(rule.expansion, False, False, placeholders)
        if flt is None:
            include = tuple((i, False, 0) for i in range(len(rule.expansion)))
            append_none = 0
        else:
            include = tuple(tuple(x) if len(x) == 3 else (*x, 0) for x in flt.args[0])
            append_none = flt.args[1] if len(flt.args) > 1 else 0
        if inline:
            assert name not in callbacks, name
            callback = ""
        else:
            assert name in callbacks or expand1, f"no compiler method for rule {name!r}"
            callback = name if name in callbacks else ""
        shaped.append((origin, len(rule.expansion), callback, expand1, include, append_none))

    # the contextual lexers: lark's, per state, deduplicated
    ignore = tuple(sorted(built.lexer_conf.ignore))
    patterns = {str(t.name): t.pattern.to_regexp() for t in built.terminals}
    lexers: list[tuple[Any, ...]] = []
    lexer_index: dict[tuple[Any, ...], int] = {}

    def describe(basic: Any) -> int:
        scanner = basic.scanner
        keywords = {}
        for term, unless in sorted(basic.callback.items()):
            words = sorted((str(t.pattern.value), str(t.name)) for t in unless.scanner.terminals)
            keywords[str(term)] = dict(words)
        allowed = tuple(sorted(str(t) for t in scanner.allowed_types - basic.ignore_types))
        frozen = tuple((term, tuple(words.items())) for term, words in keywords.items())
        key = (tuple(str(t.name) for t in scanner.terminals), frozen, allowed)
        if key not in lexer_index:
            lexer_index[key] = len(lexers)
            lexers.append((key[0], keywords, allowed))
        return lexer_index[key]

    root = describe(contextual.root_lexer)
    state_lexer = [describe(contextual.lexers[state]) for state in order]
    newline = sorted(str(name) for name in contextual.root_lexer.newline_types)

    body = {
        "GRAMMAR_SHA256": hashlib.sha256(grammar.encode("utf-8")).hexdigest(),
        "LARK_VERSION": lark.__version__,
        "PATTERNS": patterns,
        "IGNORE": ignore,
        "NEWLINE": tuple(newline),
        "LEXERS": tuple(lexers),
        "ROOT_LEXER": root,
        "STATE_LEXER": tuple(state_lexer),
        "START": number[start],
        "END": number[end],
        "ACTIONS": tuple(actions),
        "RULES": tuple(shaped),
    }
    types = {
        "GRAMMAR_SHA256": "str",
        "LARK_VERSION": "str",
        "PATTERNS": "dict[str, str]",
        "IGNORE": "tuple[str, ...]",
        "NEWLINE": "tuple[str, ...]",
        "LEXERS": "tuple[tuple[tuple[str, ...], dict[str, dict[str, str]], tuple[str, ...]], ...]",
        "ROOT_LEXER": "int",
        "STATE_LEXER": "tuple[int, ...]",
        "START": "int",
        "END": "int",
        "ACTIONS": "tuple[dict[str, int], ...]",
        "RULES": "tuple[tuple[str, int, str, bool, tuple[tuple[int, bool, int], ...], int], ...]",
    }
    notes = {
        "PATTERNS": "every terminal's regular expression",
        "IGNORE": "the terminals skipped between tokens",
        "NEWLINE": "the terminals that may hold a newline (to count lines)",
        "LEXERS": "(terminals tried in order, {terminal: {text: keyword}}, what an error allows)",
        "ROOT_LEXER": "the lexer of every terminal (an unexpected token, or character?)",
        "STATE_LEXER": "the lexer of each parser state",
        "ACTIONS": "per state and symbol: shift (or goto) state n >= 0, or reduce rule -1 - n",
        "RULES": (
            "(origin, symbols, compiler method or '', pass one child through, "
            "[(child, inline it, Nones before)], Nones after)"
        ),
    }
    out = [HEADER]
    for key, value in body.items():
        if key in notes:
            out.append(f"#: {notes[key]}")
        text = pprint.pformat(value, width=100, sort_dicts=False, compact=True)
        out.append(f"{key}: {types[key]} = {text}\n")
    return "\n".join(out)


def main() -> None:
    """Write ``_tables.py`` beside this module (or check it, with ``--check``)."""
    target = Path(__file__).with_name("_tables.py")
    text = generate()
    if "--check" in sys.argv[1:]:
        current = target.read_text("utf-8") if target.exists() else ""
        if current != text:
            sys.exit(f"{target} is stale: run python -m plait_expr._generate")
        return
    target.write_text(text, "utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
