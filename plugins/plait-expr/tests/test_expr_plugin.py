"""The plugin registers "plait" without importing its parser, and never imports lark; the
kernel's helpers find it."""

from __future__ import annotations

import subprocess
import sys

import plait_expr
from plait.spi import (
    CompiledExpression,
    CompiledTemplate,
    ExpressionLanguage,
    compile_expression,
    compile_template,
)
from plait_testing import fake_entry_point, make_plugin_manager


def test_the_kernel_helpers_use_the_registered_language() -> None:
    manager = make_plugin_manager(fake_entry_point("expr", plait_expr, distribution="plait-expr"))
    language = manager.registry("expression_language").get("plait")  # every front-end's default
    assert isinstance(language, ExpressionLanguage)
    expression = compile_expression("attempts < 3", manager=manager, line=2, column=4)
    template = compile_template("{{ attempts }} tries", manager=manager)
    assert isinstance(expression, CompiledExpression)
    assert isinstance(template, CompiledTemplate)
    assert expression.evaluate({"attempts": 1}) is True
    assert template.render({"attempts": 1}) == "1 tries"


def test_neither_registering_nor_compiling_imports_lark() -> None:
    # Issue 34, item 10: the first compile built the grammar with lark (66 ms); the parser
    # now runs tables made ahead of time, and lark is needed only to make them
    code = (
        "import sys, plait_expr\n"
        "from plait_testing import fake_entry_point, make_plugin_manager\n"
        "m = make_plugin_manager(fake_entry_point('expr', plait_expr))\n"
        "lang = m.registry('expression_language').get('plait')\n"
        "print('lark' in sys.modules, 'plait_expr._tables' in sys.modules)\n"
        "lang.compile('a == 1')\n"
        "lang.compile_template('{{ a }}!')\n"
        "print('lark' in sys.modules, 'plait_expr._tables' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "True"]


def test_the_functions_are_imported_by_the_first_expression_that_calls_one() -> None:
    code = (
        "import sys, plait_expr\n"
        "language = plait_expr.PlaitLanguage()\n"
        "language.compile('attempts < 3 && name == \"a\\\\tb\"')\n"
        "print('plait_expr._functions' in sys.modules)\n"
        "assert language.compile('size(items) > 1').evaluate({'items': [1, 2]}) is True\n"
        "print('plait_expr._functions' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_grammar_ships_in_the_package() -> None:
    from importlib import resources

    grammar = resources.files("plait_expr").joinpath("grammar.lark").read_text("utf-8")
    assert "?start: expr" in grammar
