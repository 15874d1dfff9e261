"""``plait graph TARGET``: a workflow's graph as Mermaid, Graphviz DOT or SVG.

Mermaid and DOT come from :meth:`plait.Workflow.export` (the exporters ``plait-export``
registers); SVG is the DOT text laid out by Graphviz's ``dot`` program, which must be on
``PATH``.
"""

from __future__ import annotations

import shutil
import subprocess

import click

from ._target import TargetError, document_options, load_target, parse_target

__all__ = ["INSTALL_GRAPHVIZ", "graph_command", "render_svg"]

#: What to do when Graphviz's ``dot`` is not installed.
INSTALL_GRAPHVIZ = (
    "--format svg needs Graphviz's dot program on PATH; install Graphviz "
    "(apt-get install graphviz, brew install graphviz) or use --format dot"
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
    type=click.Choice(["mermaid", "dot", "svg"]),
    default=None,
    help="Mermaid flowchart (the default), Graphviz DOT, or SVG (rendered by Graphviz's "
    "dot). --format mermaid|dot|svg says the same, as before.",
)
@click.option(
    "--allow-imports",
    is_flag=True,
    help="Let a workflow file import the Python code it names (untrusted by default).",
)
@click.option("--trust", is_flag=True, help="As --allow-imports (drawing runs nothing else).")
@document_options
@click.pass_context
def graph_command(
    ctx: click.Context,
    target: str,
    format_: str | None,
    allow_imports: bool,
    trust: bool,
    document_format: str | None,
    agents: str | None,
) -> None:
    """Print the graph of workflow TARGET to stdout.

    TARGET is a workflow file in any installed format (workflow.yaml, pipeline.flow,
    dag.json), or module:attr or path/to/file.py:attr, as for plait run. --format svg
    needs Graphviz's dot program (apt-get install graphviz, brew install graphviz).
    --format names the workflow file's format (flow, dag, steps …); --agents a Python
    module of agents it may name.
    The workflow is built, never run: a file needs no grant but --allow-imports (or
    --trust) for the Python code it names.
    """
    if document_format in _EXPORTS:  # --format dot: the drawing's format, as before --to
        if format_ is not None and format_ != document_format:
            raise click.UsageError(f"--to {format_} and --format {document_format} disagree")
        format_, document_format = document_format, None
    format_ = format_ or "mermaid"
    if format_ == "svg" and shutil.which("dot") is None:
        raise click.ClickException(INSTALL_GRAPHVIZ)  # before loading anything
    from plait_documents import Grants

    try:  # building runs no node: only an import runs the file's code
        allow_imports = allow_imports or trust
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
