"""``plait validate FILE...``: check workflow files without running them.

Each file is loaded as ``plait run`` would load it — parsed by the loader its format names,
then built with :func:`plait.load`, so an executor kind's config that does not fit its
schema is found too. Every problem is printed with its position (``file:line:column`` and a
caret under the column, or the JSON path); a valid file prints ``FILE: ok``, then the
capabilities it needs to run (:mod:`plait_documents`), each with the nodes that need it
and the flags that grant them. The report goes to stdout, as a linter's does; the exit
status is 1 when any file has a problem.

Validating builds the workflow without running it, so it needs no grant but
``--allow-imports`` (or ``--trust``, or ``--allow imports``) for a file that names Python
code: importing runs it. It takes the grant flags ``plait run`` takes, so the same command
line works for both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from plait import LoadError, PlaitError, WorkflowValidationError

from ._grants import grant_options
from ._output import describe_error
from ._target import TargetError, document_options, load_agents

__all__ = ["validate_command", "validate_file"]


def _item(problem: object) -> str:
    """``  - problem``, its further lines (the caret) indented under it."""
    return f"  - {problem}".replace("\n", "\n    ")


def validate_file(
    path: Path,
    *,
    allow_imports: bool = False,
    format: str | None = None,
    agents: str | None = None,
) -> tuple[bool, list[str]]:
    """Whether one workflow file is valid, and its report: ``FILE: ok`` and what it needs
    to run, or a header line and one block per problem (its position first, then the
    offending line and a caret). A missing file, or a ``.py`` file (code, never read as a
    workflow document), is one line saying so.
    """
    import plait
    from plait_documents import CapabilityError, Grants, cli_wording, grant_text, needs

    name = str(path)
    if not path.exists():
        return False, [f"{name}: no such file"]
    if path.is_dir():
        return False, [f"{name}: is a directory, not a workflow file"]
    if path.suffix.lower() == ".py":
        return False, [
            f"{name}: a Python file, never read as a workflow document (to check a workflow "
            f"defined in it, draw it: plait graph {name}:workflow)"
        ]
    folder = str(path.resolve().parent)
    if allow_imports and folder not in sys.path:  # its code, beside it, as plait run does
        sys.path.insert(0, folder)
    try:
        module = load_agents(agents) if agents is not None else None
    except TargetError as exc:
        return False, [f"{name}: 1 problem(s):", _item(exc)]
    try:  # plait.load parses with plait_documents.load_spec, then builds the workflow
        with cli_wording():
            workflow = plait.load(
                path,
                allow=Grants.to_build(allow_imports=allow_imports),
                format=format,
                agents=module,
            )
        # what running it will need granted (the Python agents named on the command line,
        # and those plugins publish, are trusted already)
        from plait_documents import AgentNames, module_agents

        given = AgentNames(
            published=plait.get_plugin_manager().registry("agent"),
            module=module_agents(module) if module is not None else None,
        ).python_objects()
        found = needs(workflow.spec, executors=given, source=name)
    except CapabilityError as exc:
        named = exc.for_cli().problems
        return False, [f"{name}: {len(named)} problem(s):", *(_item(p) for p in named)]
    except (LoadError, WorkflowValidationError) as exc:
        problems = exc.problems or [exc]
        shown = [_item(p) for p in problems[: LoadError.SHOWN]]
        if len(problems) > LoadError.SHOWN:  # as LoadError's own message does
            shown.append(f"  … and {len(problems) - LoadError.SHOWN:,} more")
        return False, [f"{name}: {len(problems)} problem(s):", *shown]
    except PlaitError as exc:
        return False, [f"{name}: 1 problem(s):", _item(describe_error(exc))]
    lines = [f"{name}: ok"]
    if found:
        capabilities = sorted({n.capability for n in found})
        lines.append(
            f"  needs {', '.join(map(str, capabilities))}; to run it, grant: "
            f"{grant_text(capabilities, 'cli')}"
        )
        for capability in capabilities:
            for need in found:
                if need.capability == capability:
                    lines.append(f"    {capability}: {need} at {need.position}")
    return True, lines


@click.command("validate", short_help="Check workflow files; print every problem and where.")
@click.argument(
    "files",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
)
@grant_options(
    "Let a workflow file import the Python code it names (untrusted by default; "
    "validating runs nothing else, so --allow and --trust grant only this)."
)
@document_options
@click.pass_context
def validate_command(
    ctx: click.Context,
    files: tuple[Path, ...],
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    document_format: str | None,
    agents: str | None,
) -> None:
    """Load each workflow FILE (workflow.yaml, pipeline.flow, dag.json … any installed
    format) and build it, without running it.

    Prints FILE: ok for a valid file, then the capabilities it needs to run (programs,
    requests, files, imports), each with its nodes and the --allow flags that grant them;
    otherwise every problem with its position (file:line:column and a caret, or a JSON
    path); past 50, how many more there are.

    --format names the files' format (flow, dag, steps …; default: from each suffix);
    --agents a Python module (or .py file) of agents they may name.

    Exit status: 0 every file is valid, 1 a file has problems (a FILE that does not exist
    included), 2 a usage error.
    """
    allow_imports = allow_imports or trust or "imports" in allow  # as plait run reads them
    failed = False
    for path in files:
        ok, lines = validate_file(
            path, allow_imports=allow_imports, format=document_format, agents=agents
        )
        failed = failed or not ok
        for line in lines:
            click.echo(line)
    ctx.exit(1 if failed else 0)
