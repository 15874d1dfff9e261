"""The parser's tables are lark's, current, and run as lark runs them.

Issue 34, item 10: the first compile took 66 ms, building the grammar at run time. The
tables are now computed ahead of time (``python -m plait_expr._generate``) and run by a small
LALR driver. These tests hold it to lark: the committed tables are what the generator makes
of the grammar now (so they never go stale), the generator's output does not depend on the
hash seed, and over a corpus and random input the driver makes exactly lark's reductions,
tokens and errors.
"""

from __future__ import annotations

import hashlib
import os
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import lark  # what the tables are made with
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from plait_expr import _generate, _tables
from plait_expr._parser import Parser, UnexpectedCharacters, UnexpectedToken
from test_hostile import HOSTILE, TOKENS

TABLES = Path(_tables.__file__)


def test_the_committed_tables_are_what_the_grammar_makes_now() -> None:
    assert TABLES.read_text("utf-8") == _generate.generate(), (
        "plait_expr/_tables.py is stale: run python -m plait_expr._generate"
    )
    grammar = _generate.grammar_text().encode("utf-8")
    assert hashlib.sha256(grammar).hexdigest() == _tables.GRAMMAR_SHA256


def test_the_generator_gives_the_same_text_under_another_hash_seed() -> None:
    code = "import sys; from plait_expr._generate import generate; sys.stdout.write(generate())"
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert done.stdout == TABLES.read_text("utf-8")


def test_the_generator_checks_the_tables_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "plait_expr._generate", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# -- the driver against lark ----------------------------------------------------------------

NAMES = sorted({rule[2] for rule in _tables.RULES if rule[2]})


def _token(token: Any) -> Any:
    return ("token", str(token.type), str(token.value), token.line, token.column)


def _record(name: str) -> Any:
    def method(self: Any, children: list[Any]) -> Any:
        shown = tuple(_token(c) if hasattr(c, "type") else c for c in children)
        self.log.append((name, shown))
        return len(self.log) - 1  # the reduction's number: the log stays flat

    return method


class Recorder:
    """Each reduction as ``(rule, children)`` in ``log``, tokens as ``(type, text, line,
    column)`` and reductions by their number."""

    log: list[Any]


for _name in NAMES:
    setattr(Recorder, _name, _record(_name))

LarkRecorder = type("LarkRecorder", (lark.Transformer,), {n: _record(n) for n in NAMES})
LARK_RECORDER = LarkRecorder()
REFERENCE = lark.Lark(
    _generate.grammar_text(),
    parser="lalr",
    transformer=LARK_RECORDER,
    maybe_placeholders=True,
)
DRIVER_RECORDER = Recorder()
DRIVER = Parser(DRIVER_RECORDER)


def outcome(parse: Any, recorder: Any, text: str) -> Any:
    """What parsing ``text`` gives: the reductions, or the error's kind, place and
    expected terminals."""
    recorder.log = []
    try:
        result = parse(text)
    except (UnexpectedCharacters, lark.exceptions.UnexpectedCharacters) as exc:
        return ("characters", exc.pos_in_stream, exc.line, exc.column)
    except (UnexpectedToken, lark.exceptions.UnexpectedToken) as exc:
        token = exc.token
        place = (token.line, token.column, token.start_pos) if token.type != "$END" else ()
        return ("token", str(token.type), str(token.value), place, sorted(exc.expected))
    return ("value", _token(result) if hasattr(result, "type") else result, recorder.log)


def same(text: str) -> None:
    assert outcome(DRIVER.parse, DRIVER_RECORDER, text) == outcome(
        REFERENCE.parse, LARK_RECORDER, text
    ), text


CORPUS = [
    *HOSTILE,
    "steps.qa.output.is_approved == true && attempts < 3",
    "a ? b : c ? d : e",
    "f()",
    "f(1, 2, [3, {'k': x}])",
    "x.size() + s.lower().upper()",
    "[]",
    "{}",
    "[1, 2,]",
    "{'a': 1, 'b': [true, false, null]}",
    "a in b in c",
    "x.in",
    "x.true",
    "inside || nullable && falsey",
    "-(-1) * 2 / 3 % 4 - 5",
    "\"multi\\nline\" + 'x'",
    "a\n&&\n  b",
    "1.5e3 + 2e-3 + 10",
    "!!a",
    "a.b[0][c.d]['e']",
    "has(a.b) && exists(c) && default(d, 1)",
    "(",
    ")",
    "a b",
    "a == = 1",
    "1 ** 2",
    "'unclosed",
    "a.",
    "a[",
    "{1: }",
    "f(,)",
    "$x",
    "a \u0430",
    "\uff11",
    "a\n  $ b",
]


@pytest.mark.parametrize("text", CORPUS)
def test_the_driver_parses_as_lark_does(text: str) -> None:
    same(text)


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=25), st.sampled_from([" ", "", "\n"]))
def test_random_token_sequences_parse_as_lark_does(tokens: list[str], glue: str) -> None:
    same(glue.join(tokens))


@FUZZ
@given(st.text(alphabet=string.printable + "\u0430\u00e9", max_size=60))
def test_random_text_parses_as_lark_does(text: str) -> None:
    same(text)
