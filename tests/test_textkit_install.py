"""pip-install a plugin and compose its fragment: plait-textkit in a fresh virtual environment.

The kernel, the first-party plugins it needs and ``contrib/plait-textkit`` are installed
from their paths (built as wheels, not editable) into a new venv; a script run there, from
a directory outside the workspace, composes the textkit fragments with a local executor by
name only — discovery goes through the installed entry points.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from venvtools import ROOT, install, make_venv, run

PACKAGES = [
    "core",
    "plugins/plait-routing",
    "plugins/plait-merge",
    "plugins/plait-builders",
    "contrib/plait-textkit",
]

SCRIPT = textwrap.dedent(
    """
    import json

    from plait import Never, WorkflowContext, executor
    from plait import describe
    from plait_builders import WorkflowBuilder, list_fragments


    @executor(id="shout")
    async def shout(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text.upper())


    builder = WorkflowBuilder("installed")
    normalize = builder.add_workflow("textkit.normalize")
    summarize = builder.add_workflow("textkit.summarize")
    builder.connect(normalize, summarize).connect(summarize, shout, allow_lossy=True)
    workflow = builder.set_start(normalize.start).build()
    result = workflow.run_sync("  Hello   Composition.  It works!  ")
    print(json.dumps({
        "outputs": result.outputs,
        "nodes": list(workflow.spec.node_ids),
        "fragments": [info.to_dict() for info in list_fragments()],
        "plugins": {p.name: [p.distribution, p.status] for p in describe()},
    }))
    """
)


def test_pip_install_textkit_and_compose_its_fragments(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = make_venv(venv)
    install(python, [ROOT / p for p in PACKAGES])
    script = tmp_path / "compose.py"
    script.write_text(SCRIPT, encoding="utf-8")

    report = json.loads(run([str(python), "-I", str(script)], tmp_path).stdout)

    assert report["outputs"] == ["HELLO COMPOSITION."]
    assert report["nodes"][:4] == [
        "textkit.normalize/trim",
        "textkit.normalize/casefold",
        "textkit.summarize/sentences",
        "textkit.summarize/digest",
    ]
    assert "convert:plait_textkit.Summary->str:textkit.summary_to_text" in report["nodes"]
    listed = {f["name"]: f for f in report["fragments"]}
    assert set(listed) == {"textkit.normalize", "textkit.summarize"}
    assert listed["textkit.summarize"]["distribution"] == "plait-textkit"
    assert listed["textkit.summarize"]["version"] == "1.0.0"
    assert report["plugins"]["textkit"] == ["plait-textkit", "loaded"]
    # installed as wheels, not from the workspace sources
    where = run(
        [str(python), "-I", "-c", "import plait_textkit; print(plait_textkit.__file__)"], tmp_path
    ).stdout
    assert str(venv) in where and str(ROOT) not in where
