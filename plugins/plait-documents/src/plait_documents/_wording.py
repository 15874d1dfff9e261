"""The caller's words: errors about a document name what its caller can pass, as the caller
writes it — a Python argument (``allow_imports=True``, ``executors=``) or, inside
:func:`cli_wording` (what ``plait run``, ``validate`` and ``graph`` load under), the command
line's flag (``--allow-imports``, ``--agents``).

A plugin words its own messages with :func:`spell`. The kernel's errors carry what mends
them as data (``ConfigError.fix``: the option, the name, the Python words) and
:func:`in_cli_words` words them for the command line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from plait import ConfigError, LoadError, PlaitError

__all__ = ["cli_wording", "in_cli_words", "is_cli", "spell"]

_CLI: ContextVar[bool] = ContextVar("plait_cli_wording", default=False)


@contextlib.contextmanager
def cli_wording() -> Iterator[None]:
    """Inside the block, :func:`spell` names command-line flags, and :func:`plait.load`
    words the kernel's fixes as flags too (:func:`in_cli_words`).
    """
    token = _CLI.set(True)
    try:
        yield
    finally:
        _CLI.reset(token)


def spell(python: str, cli: str) -> str:
    """``python`` (an argument, ``allow_imports=True``) for a Python caller, or ``cli`` (a
    flag, ``--allow-imports``) inside :func:`cli_wording`: errors name the caller's own
    words.
    """
    return cli if _CLI.get() else python


def is_cli() -> bool:
    """Whether errors now speak to a command-line user (:func:`cli_wording`)."""
    return _CLI.get()


def _flags(option: str, name: str) -> str | None:
    """The command line's words for passing ``option`` (``name`` under it)."""
    if option == "allow_imports":
        return (
            "pass --allow-imports if you trust it, or name one module of agents with "
            "--agents MODULE_OR_FILE.py"
        )
    if option == "executors":
        return f"define {name!r} in a module given with --agents MODULE_OR_FILE.py"
    return None


def in_cli_words(error: LoadError) -> LoadError:
    """``error`` with each problem's fix (``ConfigError.fix``) said as the command line's
    flags; ``error`` itself when no problem carries one."""
    problems: list[PlaitError] = []
    for problem in error.problems:
        fix = problem.fix if isinstance(problem, ConfigError) else None
        flags = None if fix is None else _flags(fix[0], fix[1])
        if not isinstance(problem, ConfigError) or fix is None or flags is None:
            problems.append(problem)
            continue
        where = problem.position
        given = any(v is not None for v in (where.source, where.line, where.column, where.path))
        reason = problem.reason.replace(fix[2], flags)
        problems.append(ConfigError(reason, where if given else None, fix=(*fix[:2], flags)))
    if all(new is old for new, old in zip(problems, error.problems)):
        return error
    return LoadError(problems, source=error.source)
