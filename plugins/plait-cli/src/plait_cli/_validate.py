"""``plait validate FILE...``: check workflow files without running them.

Each file is loaded as ``plait run`` would load it — parsed by the loader its format names,
then built with :func:`plait.load`, so an executor kind's config that does not fit its
schema is found too. Every problem is printed with its position (``file:line:column`` and a
caret under the column, or the JSON path); a valid file prints ``FILE: ok``. The report
goes to stdout, as a linter's does; the exit status is 1 when any file has a problem.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from plait.errors import LoadError, PlaitError, WorkflowValidationError

from ._output import describe_error

__all__ = ["validate_command", "validate_file"]


def _item(problem: object) -> str:
    """``  - problem``, its further lines (the caret) indented under it."""
    return f"  - {problem}".replace("\n", "\n    ")


def validate_file(path: Path, *, allow_imports: bool = False) -> list[str]:
    """The report for one workflow file: ``["FILE: ok"]``, or a header line and one
    block per problem (its position first, then the offending line and a caret)."""
    import plait

    name = str(path)
    folder = str(path.resolve().parent)
    if allow_imports and folder not in sys.path:  # its code, beside it, as plait run does
        sys.path.insert(0, folder)
    try:  # plait.load parses with plait.load.load_spec, then builds the workflow
        plait.load(path, allow_imports=allow_imports)
    except (LoadError, WorkflowValidationError) as exc:
        problems = exc.problems or [exc]
        shown = [_item(p) for p in problems[: LoadError.SHOWN]]
        if len(problems) > LoadError.SHOWN:  # as LoadError's own message does
            shown.append(f"  … and {len(problems) - LoadError.SHOWN:,} more")
        return [f"{name}: {len(problems)} problem(s):", *shown]
    except PlaitError as exc:
        return [f"{name}: 1 problem(s):", _item(describe_error(exc))]
    return [f"{name}: ok"]


@click.command("validate", short_help="Check workflow files; print every problem and where.")
@click.argument(
    "files",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--allow-imports",
    is_flag=True,
    help="Let a workflow file import the Python code it names (untrusted by default).",
)
@click.pass_context
def validate_command(ctx: click.Context, files: tuple[Path, ...], allow_imports: bool) -> None:
    """Load each workflow FILE (workflow.yaml, pipeline.flow, dag.json … any installed
    format) and build it, without running it.

    Prints FILE: ok for a valid file; otherwise every problem with its position
    (file:line:column and a caret, or a JSON path); past 50, how many more there are.

    Exit status: 0 every file is valid, 1 a file has problems, 2 a usage error (a FILE that
    does not exist).
    """
    failed = False
    for path in files:
        lines = validate_file(path, allow_imports=allow_imports)
        failed = failed or len(lines) > 1
        for line in lines:
            click.echo(line)
    ctx.exit(1 if failed else 0)
