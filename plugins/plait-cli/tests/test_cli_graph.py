"""``plait graph TARGET --to mermaid|dot|svg``."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from plait_cli import make_cli

WORKFLOWS = Path(__file__).with_name("cli_workflows.py")
FLOW = "[researcher, critic] -> writer\n"


def plait(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def steps(tmp_path: Path) -> str:
    path = tmp_path / "workflow.yaml"
    path.write_text(
        "workflow:\n"
        "  - {id: first, type: executor, kind: shell, config: {argv: [cat]}}\n"
        "  - {id: second, type: executor, kind: shell, config: {argv: [cat]}}\n"
    )
    return str(path)


def test_mermaid_is_the_default(steps: str) -> None:
    result = plait("graph", steps)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("flowchart LR\n")
    assert '["first"]' in result.stdout and '["second"]' in result.stdout
    assert result.stdout == plait("graph", steps, "--to", "mermaid").stdout


def test_dot_names_every_executor_and_edge(steps: str) -> None:
    result = plait("graph", steps, "--to", "dot")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('digraph "workflow" {')
    assert '"first" -> "second"' in result.stdout


def test_a_workflows_ports_are_drawn() -> None:
    result = plait("graph", f"{WORKFLOWS}:ported")
    assert result.exit_code == 0, result.output
    assert 'p0(["in: entry"]):::port' in result.stdout
    assert 'p3(["out: aggregator_out"]):::port' in result.stdout
    assert 'p2(["in: fan_in_in (aggregate)"]):::port' in result.stdout
    dot = plait("graph", f"{WORKFLOWS}:ported", "--to", "dot").stdout
    assert '"aggregate" -> "port:aggregator_out" [style=dotted' in dot


def test_a_python_target_works_too() -> None:
    result = plait("graph", f"{WORKFLOWS}:failing", "--to", "dot")
    assert result.exit_code == 0, result.output
    assert '"upper" -> "explode"' in result.stdout


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_svg_is_rendered_by_graphviz(steps: str) -> None:
    result = plait("graph", steps, "--to", "svg")
    assert result.exit_code == 0, result.output
    svg = ET.fromstring(result.stdout)
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert {"first", "second"} <= texts


def test_svg_without_graphviz_says_how_to_install_it(
    steps: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no dot program
    result = plait("graph", steps, "--to", "svg")
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "apt-get install graphviz" in line and "brew install graphviz" in line


def test_a_broken_file_reports_its_problems(tmp_path: Path) -> None:
    path = tmp_path / "broken.flow"
    path.write_text("researcher -> [writer\n")
    result = plait("graph", str(path))
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{path}:1:15: unclosed '['" in result.stderr and "^" in result.stderr


def test_an_unknown_format_is_a_usage_error(steps: str) -> None:
    result = plait("graph", steps, "--to", "png")
    assert result.exit_code == 2 and "'png' is not one of" in result.stderr


def test_format_has_one_meaning_the_files_format(steps: str) -> None:
    # --format is the workflow file's format, as for run and validate; a drawing's name
    # there is a usage error pointing at --to, never a second meaning
    result = plait("graph", steps, "--format", "png")
    assert result.exit_code == 1 and "unknown workflow format 'png'" in result.stderr
    assert plait("graph", steps, "--format", "steps").stdout.startswith("flowchart")
    for drawing in ("mermaid", "dot", "svg"):
        refused = plait("graph", steps, "--format", drawing)
        assert refused.exit_code == 2 and refused.stdout == ""
        assert "--format names the workflow file's format" in refused.stderr
        assert f"pass --to {drawing}" in refused.stderr


def test_graph_takes_the_grant_flags_plait_run_takes(steps: str) -> None:
    # the same command line that runs a file draws it: --allow is accepted (and checked)
    granted = plait("graph", steps, "--allow", "subprocess", "--to", "dot")
    assert granted.exit_code == 0, granted.output
    assert granted.stdout.startswith("digraph")
    assert plait("graph", steps, "--trust").exit_code == 0
    bad = plait("graph", steps, "--allow", "teleport")
    assert bad.exit_code == 2 and "--allow" in bad.stderr
