"""``plait graph TARGET``: a workflow's graph as Mermaid, Graphviz DOT or SVG.

Mermaid and DOT come from :meth:`plait.Workflow.export` (the exporters ``plait-export``
registers); SVG is the DOT text laid out by Graphviz's ``dot`` program, which must be on
``PATH``.
"""

from __future__ import annotations

import shutil
import subprocess

import click

from ._grants import grant_options
from ._target import TargetError, document_options, load_target, parse_target

__all__ = ["INSTALL_GRAPHVIZ", "graph_command", "render_svg"]

#: What to do when Graphviz's ``dot`` is not installed.
INSTALL_GRAPHVIZ = (
    "--format svg needs Graphviz's dot program on PATH; install Graphviz "
    "(apt-get install graphviz, brew install graphviz) or use --to dot"
)


_EXPORTS = ("mermaid", "dot", "svg")


def render_svg(dot: str) -> str:
    """``dot`` (Graphviz DOT text) laid out as SVG by Graphviz's ``dot`` program.

    :raises click.ClickException: ``dot`` is not on ``PATH``, or it refused the text.
    """
    program = shutil.which("dot")
    if program is None:
        raise click.ClickException(INSTALL_GRAPHVIZ)
    done = subprocess.run(  # a fixed program; the graph goes on stdin
        [program, "-Tsvg"], input=dot, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise click.ClickException(
            f"Graphviz's dot failed (exit status {done.returncode}): {done.stderr.strip()}"
        )
    return done.stdout


@click.command("graph", short_help="Print a workflow's graph as Mermaid, DOT or SVG.")
@click.argument("target")
@click.option(
    "--to",
    "format_",
    type=click.Choice(_EXPORTS),
    default="mermaid",
    show_default=True,
    help="Mermaid flowchart, Graphviz DOT, or SVG (rendered by Graphviz's dot).",
)
@grant_options(
    "Let a workflow file import the Python code it names (untrusted by default; "
    "drawing runs nothing else, so --allow and --trust grant only this)."
)
@document_options
@click.pass_context
def graph_command(
    ctx: click.Context,
    target: str,
    format_: str,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    document_format: str | None,
    agents: str | None,
) -> None:
    """Print the graph of workflow TARGET to stdout.

    TARGET is a workflow file in any installed format (workflow.yaml, pipeline.flow,
    dag.json), or module:attr or path/to/file.py:attr, as for plait run. --to names the
    drawing (svg needs Graphviz's dot program: apt-get install graphviz, brew install
    graphviz); --format names the workflow file's format (flow, dag, steps …), as for
    every command that loads one; --agents a Python module of agents it may name.
    The workflow is built, never run: a file needs no grant but --allow-imports (or
    --trust) for the Python code it names.
    """
    if document_format in _EXPORTS:  # one meaning per flag: --format is the file's
        raise click.UsageError(
            f"--format names the workflow file's format (flow, dag, steps …); for a "
            f"{document_format} drawing, pass --to {document_format}"
        )
    if format_ == "svg" and shutil.which("dot") is None:
        raise click.ClickException(INSTALL_GRAPHVIZ)  # before loading anything
    from plait_documents import Grants

    try:  # building runs no node: only an import runs the file's code
        allow_imports = allow_imports or trust or "imports" in allow  # as plait run
        grants = Grants.to_build(allow_imports=allow_imports)
        parsed = parse_target(target, format=document_format, agents=agents)
        workflow = load_target(parsed, allow_imports=allow_imports, allow=grants)
    except TargetError as exc:
        if ctx.meta.get("plait.debug"):
            raise
        raise click.ClickException(str(exc)) from exc
    if format_ == "svg":
        click.echo(render_svg(workflow.export("dot")), nl=False)
    else:
        text = workflow.export(format_)
        click.echo(text, nl=not text.endswith("\n"))
