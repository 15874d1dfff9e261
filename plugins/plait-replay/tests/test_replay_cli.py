"""``plait run --record`` and ``plait replay``: a shell step's output is kept and given
back without running the program; a changed executor exits 1 with the report, in text
and in JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from plait_cli import make_cli

FLOWS = str(Path(__file__).with_name("replay_cli_flows.py"))


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def _record(store: str) -> str:
    result = CliRunner().invoke(
        make_cli(), ["run", f"{FLOWS}:shell", "hello", "--record", "--checkpoint", store, "-q"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "5 characters"
    found = re.search(r"run id: (\w+)", result.stderr)
    assert found is not None, result.stderr
    return found.group(1)


def test_replay_answers_the_program_from_the_record(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _record(store)

    async def no_programs(*args: object, **kwargs: object) -> None:
        raise AssertionError("a replay ran the program")

    monkeypatch.setattr("anyio.open_process", no_programs)
    result = CliRunner().invoke(
        make_cli(), ["replay", f"{FLOWS}:shell", run_id, "--checkpoint", store]
    )
    assert result.exit_code == 0, result.output
    assert f"replay of run {run_id}: equal to the record (2 supersteps" in result.stdout


def test_a_changed_executor_exits_1_with_the_report(store: str) -> None:
    run_id = _record(store)
    result = CliRunner().invoke(
        make_cli(), ["replay", f"{FLOWS}:changed", run_id, "--checkpoint", store]
    )
    assert result.exit_code == 1, result.output
    assert "diverged at superstep 2, executor 'report'" in result.stdout
    assert "the workflow's outputs differ" in result.stdout
    as_json = CliRunner().invoke(
        make_cli(),
        ["replay", f"{FLOWS}:changed", run_id, "--checkpoint", store, "--format", "json"],
    )
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert report["equal"] is False
    divergence = report["divergence"]
    assert (divergence["superstep"], divergence["executor"]) == (2, "report")
    assert divergence["what"] == "outputs"
    assert divergence["recorded"] == ["5 characters"]
    assert divergence["replayed"] == ["5 characters in all"]
    assert divergence["diff"] == [
        {"op": "replace", "path": "/value/0", "value": "5 characters in all"}
    ]


def test_replay_names_what_is_missing(store: str) -> None:
    result = CliRunner().invoke(
        make_cli(), ["replay", f"{FLOWS}:shell", "nope", "--checkpoint", store]
    )
    assert result.exit_code == 1
    assert "holds no run 'nope'" in result.output
    no_record = CliRunner().invoke(
        make_cli(), ["run", f"{FLOWS}:shell", "--no-checkpoint", "--record"]
    )
    assert no_record.exit_code == 2
    assert "--record needs a checkpoint" in no_record.output
