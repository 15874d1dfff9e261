"""``--allow``, ``--trust`` and ``--allow-imports``: what a workflow file may make Plait do.

A workflow file is untrusted input. Its nodes' capabilities (``plait validate`` lists them)
must be granted on the command line before it is loaded: ``--allow-imports`` for the Python
code it names, ``--allow subprocess,network=api.example.com,filesystem=/data`` for the
rest (repeatable), ``--trust`` for everything. See :mod:`plait_documents`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

__all__ = ["grant_options", "grants_from", "resume_flags"]

F = TypeVar("F", bound=Callable[..., Any])


def _parse_allow(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> list[str]:
    """Every ``--allow`` value, split at commas and checked (an unknown capability is a
    usage error naming the ones that exist)."""
    from plait_documents import Capability

    found: list[str] = []
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            if item.strip() in ("all", "*"):
                raise click.BadParameter("to grant every capability, pass --trust", ctx, param)
            try:
                found.append(str(Capability.parse(item)))
            except ValueError as exc:
                raise click.BadParameter(str(exc), ctx, param) from None
    return found


def grant_options(imports_help: str) -> Callable[[F], F]:
    """The ``--allow-imports``, ``--allow`` and ``--trust`` options of a command."""

    def decorate(command: F) -> F:
        command = click.option(
            "--trust",
            is_flag=True,
            help="Grant the workflow file every capability (imports, programs, requests, "
            "files): only for a file you trust as you trust your own code.",
        )(command)
        command = click.option(
            "--allow",
            "allow",
            metavar="CAPABILITIES",
            multiple=True,
            callback=_parse_allow,
            help="Grant the workflow file capabilities: subprocess, network[=HOST], "
            "filesystem[=PATH], documents[=PATH], kind=NAME (comma-separated or repeated; "
            "plait validate lists what a file needs).",
        )(command)
        return click.option("--allow-imports", is_flag=True, help=imports_help)(command)

    return decorate


def grants_from(allow: Sequence[str], trust: bool, allow_imports: bool) -> Any:
    """The :class:`plait_documents.Grants` the options name."""
    from plait_documents import Grants

    return Grants.of(True if trust else list(allow), allow_imports=allow_imports)


def resume_flags(allow: Sequence[str], trust: bool, allow_imports: bool) -> list[str]:
    """The options that grant the same again (for a printed ``plait resume`` command)."""
    if trust:
        return ["--trust"]
    imports = ["--allow-imports"] if allow_imports and "imports" not in allow else []
    return imports + (["--allow", ",".join(allow)] if allow else [])
