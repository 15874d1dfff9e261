"""``plait validate FILE...``: every problem in every file, with its position; exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from plait_cli import make_cli

HERE = Path(__file__).parent

SHELL_STEP = """\
workflow:
  - id: shout
    type: executor
    kind: {kind}
    config:
      argv: ["cat"]
"""

PURE_STEP = """\
workflow:
  - id: check
    type: condition
    condition: "{{ true }}"
    true:
      - goto: check
"""

HTTP_STEP = """\
workflow:
  - id: fetch
    type: executor
    kind: http
    config: {url: "https://api.example.com/v1/items", method: GET}
  - id: shout
    type: executor
    kind: shell
    config: {argv: [cat]}
"""

PYTHON_STEP = """\
workflow:
  - id: up
    type: executor
    kind: python
    config:
      ref: "cli_workflows:upper"
"""


def plait(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def test_a_valid_file_of_pure_steps_prints_ok_and_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path, "workflow.yaml", PURE_STEP)
    result = plait("validate", path)
    assert (result.exit_code, result.stdout) == (0, f"{path}: ok\n")


def test_a_valid_file_prints_the_capabilities_it_needs(tmp_path: Path) -> None:
    path = write(tmp_path, "workflow.yaml", HTTP_STEP)
    result = plait("validate", path)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"{path}: ok",
        "  needs subprocess, network=api.example.com; to run it, grant: "
        "--allow subprocess,network=api.example.com",
        f"    subprocess: node 'shout' (kind shell, in steps.executor) at {path}:6:5 at /nodes/1",
        f"    network=api.example.com: node 'fetch' (kind http, in steps.executor) at {path}:2:5 "
        "at /nodes/0",
    ]


def test_a_yaml_error_has_line_column_and_a_caret(tmp_path: Path) -> None:
    path = write(tmp_path, "workflow.yaml", SHELL_STEP.format(kind="shel"))
    result = plait("validate", path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{path}: 1 problem(s):"
    assert lines[1].startswith(f"  - {path}:4:11: no executor kind 'shel'")
    assert "did you mean 'shell'?" in lines[1]
    assert lines[2:] == ["            kind: shel", "                  ^"]


def test_a_flow_syntax_error_has_its_position(tmp_path: Path) -> None:
    path = write(tmp_path, "pipeline.flow", "shell -> [writer\n")
    result = plait("validate", path)
    assert result.exit_code == 1
    assert f"  - {path}:1:10: unclosed '['" in result.stdout
    assert result.stdout.endswith("        shell -> [writer\n                 ^\n")


def test_every_problem_of_a_json_dag_is_listed_with_its_json_path(tmp_path: Path) -> None:
    document = {
        "nodes": [{"id": "a", "agent_name": "shell", "is_entry": True, "is_exit": "yes"}],
        "connections": [{"source_id": "a", "target_id": "b"}],
    }
    path = write(tmp_path, "dag.json", json.dumps(document))
    result = plait("validate", path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{path}: 3 problem(s):"
    problems = [line for line in lines[1:] if line.startswith("  - ")]
    # each at its line and column in the text as well as its JSON path
    assert [line.split(": ")[0] for line in problems] == [
        f"  - {path}:1:2 at /nodes",
        f"  - {path}:1:65 at /nodes/0/is_exit",
        f"  - {path}:1:120 at /connections/0/target_id",
    ]


def test_an_executor_kind_config_error_is_found_by_building(tmp_path: Path) -> None:
    path = write(tmp_path, "workflow.yaml", SHELL_STEP.format(kind="shell").replace('["cat"]', "3"))
    result = plait("validate", path)
    assert result.exit_code == 1
    # the steps node wraps the kind's own config: /nodes/0/config/config is the shell config
    assert f"{path}:2:5 at /nodes/0/config/config/argv" in result.stdout
    assert "executor 'shout'" in result.stdout and "is not of type 'array'" in result.stdout


def test_imports_need_allow_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))  # where module cli_workflows is
    path = write(tmp_path, "workflow.yaml", PYTHON_STEP)
    refused = plait("validate", path)
    assert refused.exit_code == 1
    assert (
        f"  - {path}:2:5 at /nodes/0: node 'up' (kind python, in steps.executor) needs imports, "
        "which is not granted; grant it with --allow-imports\n"
    ) in refused.stdout
    allowed = plait("validate", "--allow-imports", path)
    assert allowed.exit_code == 0
    assert allowed.stdout.splitlines()[:2] == [
        f"{path}: ok",
        "  needs imports; to run it, grant: --allow-imports",
    ]


def test_several_files_report_each_and_exit_1_when_any_is_wrong(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", PURE_STEP)
    bad = write(tmp_path, "bad.flow", "shell -> [writer\n")
    result = plait("validate", good, bad, good)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{good}: ok" and lines[-1] == f"{good}: ok"
    assert lines[1] == f"{bad}: 1 problem(s):"
    assert plait("validate", good, good).exit_code == 0


def test_a_file_of_no_known_format_is_a_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.txt", "just some words\n")
    result = plait("validate", path)
    assert result.exit_code == 1
    assert "cannot tell the format of this document" in result.stdout


def test_a_missing_file_is_one_line_and_none_is_a_usage_error(tmp_path: Path) -> None:
    missing = plait("validate", str(tmp_path / "nope.flow"))
    assert missing.exit_code == 1
    assert missing.stdout == f"{tmp_path / 'nope.flow'}: no such file\n"
    assert plait("validate").exit_code == 2


def test_a_python_file_is_never_read_as_a_flow(tmp_path: Path) -> None:
    # the repro: app.py holds a "->" (a type hint) and was parsed as a flow
    path = write(tmp_path, "app.py", "def f(x: int) -> int:\n    return x\n")
    result = plait("validate", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{path}: a Python file, never read as a workflow document (to check a workflow "
        f"defined in it, draw it: plait graph {path}:workflow)"
    ]


def test_run_names_the_capabilities_that_exist_and_the_flag_for_all(tmp_path: Path) -> None:
    path = write(tmp_path, "workflow.yaml", PURE_STEP)
    unknown = plait("run", path, "--no-checkpoint", "--allow", "subprocess,netwrk")
    assert unknown.exit_code == 2
    assert "unknown capability 'netwrk'; capabilities are: imports, subprocess" in unknown.stderr
    everything = plait("run", path, "--no-checkpoint", "--allow", "all")
    assert everything.exit_code == 2 and "pass --trust" in everything.stderr


def test_thousands_of_problems_print_the_first_fifty_and_a_count(tmp_path: Path) -> None:
    # Issue 24, finding 7: a 3,000-name line printed every problem with the whole line.
    path = tmp_path / "wide.flow"
    path.write_text("a -> [" + ",".join(f"unknown{n}" for n in range(3000)) + "] -> b\n")
    result = CliRunner().invoke(make_cli(), ["validate", str(path)])
    assert result.exit_code == 1
    assert f"{path}: 3002 problem(s):" in result.output
    assert result.output.count(f"  - {path}:") == 50
    assert result.output.rstrip().endswith("… and 2,952 more")
    assert len(result.output) < 50_000


def test_validate_takes_the_grant_flags_plait_run_takes(tmp_path: Path) -> None:
    # issue 34: "No such option '--allow'. Did you mean '--allow-imports'?" while plait run
    # takes it; the same grants now validate the file a run command names
    path = write(tmp_path, "workflow.yaml", HTTP_STEP)
    granted = plait("validate", path, "--allow", "subprocess", "--allow", "network=api.example.com")
    assert granted.exit_code == 0, granted.output
    assert granted.stdout.startswith(f"{path}: ok\n")
    assert plait("validate", path, "--trust").exit_code == 0
    bad = plait("validate", path, "--allow", "teleport")
    assert bad.exit_code == 2 and "--allow" in bad.stderr


def test_allow_imports_as_a_capability_lets_validate_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    path = write(tmp_path, "workflow.yaml", PYTHON_STEP)
    allowed = plait("validate", path, "--allow", "imports")
    assert allowed.exit_code == 0, allowed.output
    assert allowed.stdout.startswith(f"{path}: ok\n")
