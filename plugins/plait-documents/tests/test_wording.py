"""What ``plait.load`` says about the problems of building a document's spec: each at the
place its front-end recorded for the node (``config["at"]``), and in the caller's words —
the kernel's errors carry their fix as data (``ConfigError.fix``) and speak Python; under
``plait_documents.cli_wording`` (what the command line loads under) ``plait.load`` says
the same fix as the command line's flags."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait.spi import BuildContext
from plait_documents import cli_wording, in_cli_words, is_cli, spell


class Bare:
    """A one-line loader: the text names the agent of one node of a kind none registers,
    recorded where the name starts (``at``)."""

    suffixes = (".bare",)

    def load(self, text: str, ctx: BuildContext) -> plait.WorkflowSpec:
        name = text.strip()
        at = [1, 1 + len(text) - len(text.lstrip())]
        node = plait.NodeSpec(name, kind="test.none", uses=name, config={"at": at})
        return plait.WorkflowSpec(name="one", start=name, nodes=(node,), edge_groups=())


class LoaderPlugin:
    @plait.hookimpl
    def plait_register_loaders(self, register: Any) -> None:
        register("test.bare", Bare())


PYTHON = "pass the executor it uses as executors={'shout': ...}"
CLI = "define 'shout' in a module given with --agents MODULE_OR_FILE.py"


def test_a_kernel_fix_is_data_and_python_words(plait_register_plugin: Any) -> None:
    plait_register_plugin(LoaderPlugin(), "test-bare")
    with pytest.raises(plait.LoadError) as info:
        plait.load("shout", format="test.bare")
    (problem,) = info.value.problems
    assert isinstance(problem, plait.ConfigError)
    assert problem.fix == ("executors", "shout", PYTHON)
    assert "installed kinds: " in str(problem) and str(problem).endswith(f"; or {PYTHON}")
    assert problem.path == "/nodes/0/kind"


def test_a_build_problem_is_at_the_place_the_front_end_recorded(
    plait_register_plugin: Any,
) -> None:
    plait_register_plugin(LoaderPlugin(), "test-bare")
    with pytest.raises(plait.LoadError) as info:
        plait.load("   shout", format="test.bare")
    (problem,) = info.value.problems
    assert isinstance(problem, plait.ConfigError)
    assert (problem.line, problem.column, problem.path) == (1, 4, "/nodes/0/kind")
    assert str(problem).startswith("<string>:1:4 at /nodes/0/kind: node 'shout' has ")
    # the kernel alone does not read a front-end's ``at``: the spec built directly
    spec = plait.WorkflowSpec(
        name="one",
        start="shout",
        nodes=(plait.NodeSpec("shout", kind="test.none", config={"at": [1, 4]}),),
        edge_groups=(),
    )
    with pytest.raises(plait.LoadError) as direct:
        plait.Workflow.from_spec(spec)
    assert direct.value.problems[0].line is None  # type: ignore[attr-defined]


def test_under_cli_wording_the_fix_names_the_flags(plait_register_plugin: Any) -> None:
    plait_register_plugin(LoaderPlugin(), "test-bare")
    with cli_wording(), pytest.raises(plait.LoadError) as info:
        plait.load("shout", format="test.bare")
    (problem,) = info.value.problems
    assert isinstance(problem, plait.ConfigError)
    assert str(problem).endswith(f"; or {CLI}") and "executors=" not in str(problem)
    assert (problem.line, problem.column, problem.path) == (1, 1, "/nodes/0/kind")  # kept
    assert problem.fix == ("executors", "shout", CLI)


def test_imports_refused_are_said_as_the_flag() -> None:
    with pytest.raises(plait.ConfigError) as info:
        BuildContext(allow_imports=False).callable({"ref": "json:dumps"}, what="a condition")
    refused = info.value
    assert refused.fix is not None and refused.fix[:2] == ("allow_imports", "")
    assert "pass allow_imports=True" in str(refused)
    (worded,) = in_cli_words(plait.LoadError([refused])).problems
    assert "pass --allow-imports if you trust it" in str(worded)
    assert "allow_imports=" not in str(worded)


def test_an_error_with_no_fix_is_left_as_it_is() -> None:
    error = plait.LoadError([plait.ConfigError("bad", plait.SourcePosition(path="/x"))])
    assert in_cli_words(error) is error


def test_spell_and_is_cli_follow_the_block() -> None:
    assert not is_cli() and spell("format=", "--format") == "format="
    with cli_wording():
        assert is_cli() and spell("format=", "--format") == "--format"
    assert not is_cli()
