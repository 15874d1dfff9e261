"""How a TARGET is resolved (``plait_cli.load_target``), and what its errors say."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from plait import Workflow
from plait_cli import TargetError, load_target

WORKFLOWS = Path(__file__).with_name("cli_workflows.py")

MODULE = """\
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text.upper() + "!")


flow = WorkflowBuilder("shout").add_executor(shout).set_start(shout).build()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder as the current directory; what tests import from it is forgotten."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if str(getattr(sys.modules[name], "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]


def write(path: Path, text: str) -> Path:
    """Write ``text`` (dedented) to ``path``, creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error(target: str) -> str:
    """The message of the TargetError ``target`` raises."""
    with pytest.raises(TargetError) as info:
        load_target(target)
    return str(info.value)


# -- what resolves ------------------------------------------------------------------------------


def test_a_file_path_and_a_workflow_attribute() -> None:
    workflow = load_target(f"{WORKFLOWS}:echo")
    assert isinstance(workflow, Workflow) and workflow.name == "echo"


def test_a_relative_path_and_a_function_returning_a_workflow(project: Path) -> None:
    write(project / "flows" / "shouting.py", MODULE + "\n\ndef make():\n    return flow\n")
    assert load_target("flows/shouting.py:make").name == "shout"
    assert sys.modules["shouting"].__file__ == str(project / "flows" / "shouting.py")


def test_a_module_in_the_current_directory(project: Path) -> None:
    write(project / "shouting_here.py", MODULE)
    assert load_target("shouting_here:flow").run_sync("hey").outputs == ["HEY!"]


def test_a_file_inside_a_package_is_imported_under_its_dotted_name(project: Path) -> None:
    write(project / "cli_pkg" / "__init__.py", "")
    write(project / "cli_pkg" / "sub" / "__init__.py", "")
    write(project / "cli_pkg" / "sub" / "flows.py", "from .helpers import flow\n")
    write(project / "cli_pkg" / "sub" / "helpers.py", MODULE)
    workflow = load_target(f"{project / 'cli_pkg' / 'sub' / 'flows.py'}:flow")
    assert workflow.name == "shout" and "cli_pkg.sub.flows" in sys.modules
    assert str(project) in sys.path


def test_a_dotted_attribute(project: Path) -> None:
    write(project / "registry_mod.py", MODULE + "\n\nclass Flows:\n    main = flow\n")
    assert load_target("registry_mod:Flows.main").name == "shout"


# -- what does not, and what the error says -------------------------------------------------------


def test_a_target_without_an_attribute() -> None:
    # a .py file is never read as a workflow document (though it may hold a "->")
    message = error(str(WORKFLOWS))
    assert "is a Python file, never read as a workflow document" in message
    assert f"{WORKFLOWS}:workflow" in message


def test_a_missing_attribute_lists_the_workflows_and_functions_there() -> None:
    message = error(f"{WORKFLOWS}:missing")
    assert f"module 'cli_workflows' ({WORKFLOWS}) has no attribute 'missing'" in message
    assert "workflows: echo, failing, gate, looping, records" in message
    assert (
        "functions taking no arguments: chain1000, make_echo, ported, raises, returns_a_builder"
    ) in message


def test_a_missing_nested_attribute_says_what_its_parent_is() -> None:
    message = error(f"{WORKFLOWS}:echo.nested")
    assert "echo of module 'cli_workflows'" in message and "has no attribute 'nested'" in message
    assert "it is a plait._workflow.Workflow (<Workflow echo" in message


def test_a_module_without_workflows_says_so() -> None:
    assert "it defines no plait.Workflow" in error("json:missing")


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        ("not_a_workflow", "is an int (42), not a plait.Workflow or a function returning one"),
        ("builder", "has a build() method: name the built workflow"),
        ("needs_arguments", "is a callable taking arguments (name: 'str')"),
        ("returns_a_builder", "returned a plait_builders._builder.WorkflowBuilder"),
        ("raises", "calling it failed: RuntimeError: no model configured"),
    ],
)
def test_an_attribute_that_is_not_a_workflow(attr: str, expected: str) -> None:
    assert expected in error(f"{WORKFLOWS}:{attr}")


def test_an_async_function_is_refused(project: Path) -> None:
    write(project / "async_mod.py", MODULE + "\n\nasync def make():\n    return flow\n")
    assert "is an async function" in error("async_mod:make")


def test_a_module_that_does_not_exist(project: Path) -> None:
    message = error("no_such_module_anywhere:flow")
    assert "no module named 'no_such_module_anywhere'" in message
    assert f"in the current directory {project}" in message


def test_a_file_that_does_not_exist(project: Path) -> None:
    assert "the file missing.py" in error("missing.py:flow")
    assert "does not exist" in error("missing.py:flow")
    (project / "folder.py").mkdir()
    assert "is a directory" in error("folder.py:flow")


def test_a_file_that_is_not_python(project: Path) -> None:
    write(project / "flows" / "notes.txt", "")
    assert "is not a .py file" in error("flows/notes.txt:flow")


def test_a_module_whose_import_fails_names_the_missing_dependency(project: Path) -> None:
    write(project / "needs_dep.py", "import nltk_is_not_installed_here\n")
    message = error("needs_dep:flow")
    assert "importing module 'needs_dep' failed" in message
    assert "No module named 'nltk_is_not_installed_here'" in message
    assert f"raised at {project / 'needs_dep.py'}:1" in message


def test_a_module_with_a_syntax_error_names_the_line(project: Path) -> None:
    write(project / "broken_syntax.py", "x = 1\ndef (:\n")
    message = error("broken_syntax.py:flow")
    assert "SyntaxError" in message and f"raised at {project / 'broken_syntax.py'}:2" in message


def test_a_file_shadowed_by_a_module_of_the_same_name_is_refused(project: Path) -> None:
    write(project / "json.py", MODULE)
    message = error("json.py:flow")
    assert "would be imported as module 'json'" in message and "rename the file" in message


def test_a_targets_form_is_decided_once_by_parse_target(project: Path) -> None:
    from plait_cli import Target, parse_target

    (project / "flow.yaml").write_text("workflow: []\n")
    (project / "flows").mkdir()
    document = parse_target("flow.yaml")
    assert document == Target("document", "flow.yaml") and not document.imports
    assert str(document.absolute()) == str(project / "flow.yaml")
    file = parse_target("flows/app.py:make")
    assert file == Target("file", "flows/app.py", "make") and file.imports
    assert str(file.absolute()) == f"{project / 'flows' / 'app.py'}:make"
    module = parse_target("pkg.flows:registry.essay")
    assert module == Target("module", "pkg.flows", "registry.essay") and module.imports
    assert module.absolute() is module and str(module) == "pkg.flows:registry.essay"
    # a missing .yaml is a missing file, said in one line
    with pytest.raises(TargetError, match=r"^TARGET 'gone.yaml': no such file \(gone.yaml does"):
        parse_target("gone.yaml")
