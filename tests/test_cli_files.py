"""``plait run FILE``: a workflow file in any installed format runs from the shell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from plait.spi import set_plugin_manager
from plait_cli import make_cli
from plait_testing import broken_entry_point, make_plugin_manager

STEPS = f"""\
workflow:
  - id: shout
    type: executor
    kind: shell
    config:
      argv: ["{sys.executable}", "-c", "import sys; print(sys.stdin.read().upper())"]
      input: message
"""


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``plait run`` is durable by default, into ``.plait/runs.db`` of the working folder:
    run each test from its own folder, never from the repository's."""
    monkeypatch.chdir(tmp_path)


def plait(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(make_cli(), list(args), input=input)


def test_a_yaml_file_runs_with_a_message_and_from_stdin(tmp_path: Path) -> None:
    path = tmp_path / "workflow.yaml"
    path.write_text(STEPS)
    done = plait("run", str(path), "translate and publish this draft", "--allow", "subprocess")
    assert done.exit_code == 0, done.output
    assert "TRANSLATE AND PUBLISH THIS DRAFT" in done.stdout
    piped = plait("run", str(path), "-", "--allow=subprocess", input="from stdin\n")
    assert piped.exit_code == 0, piped.output
    assert "FROM STDIN" in piped.stdout


def test_step_context_goes_to_stderr(tmp_path: Path) -> None:
    path = tmp_path / "workflow.yaml"
    path.write_text(STEPS)
    done = plait("run", str(path), "hi", "--step-context", "--allow", "subprocess")
    assert done.exit_code == 0, done.output
    # as seed 002 prints it: a header, then the context as formatted JSON
    _, header, body = done.stderr.partition("--- Step Context ---\n")
    assert header and body.startswith("{\n  ")
    context = json.loads(body)
    assert context["order"] == ["shout"] and context["output"].strip() == "HI"


def test_a_broken_file_is_reported_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "broken.flow"
    path.write_text("researcher -> [writer\n")
    done = plait("run", str(path), "x")
    assert done.exit_code != 0
    assert "broken.flow:1:" in done.output


def test_a_broken_plugin_is_one_line_with_the_fix_and_debug_shows_more(
    tmp_path: Path,
) -> None:
    path = tmp_path / "workflow.yaml"
    path.write_text(STEPS)
    broken = make_plugin_manager(broken_entry_point("broken", distribution="plait-broken"))
    previous = set_plugin_manager(broken)
    try:
        done = plait("run", str(path), "x")
        assert done.exit_code == 1
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, lines
        assert "plait-broken" in lines[0] and "PLAIT_DISABLE_PLUGINS=broken" in lines[0]
        debug = plait("--debug", "run", str(path), "x")
        assert debug.exit_code == 1 and debug.exception is not None  # the traceback
    finally:
        set_plugin_manager(previous)
