"""``plait run --budget`` stops a run at its budget; ``plait resume --budget`` goes on with
a raised one."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from budget_models import Calls
from click.testing import CliRunner
from plait_cli import make_cli

HERE = Path(__file__).parent


def test_run_stops_at_its_budget_and_resume_raises_it(
    calls: Calls, tmp_path: Path, monkeypatch: object
) -> None:
    shutil.copy(HERE / "budget_workflows.py", tmp_path / "flows.py")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    target = f"{tmp_path / 'flows.py'}:chain4"
    runner = CliRunner()
    ran = runner.invoke(
        make_cli(), ["run", target, "go", "--checkpoint", store, "--budget", "calls=2", "-q"]
    )
    assert ran.exit_code == 1, ran.output
    assert "budget 'run' is spent in model_calls" in ran.stderr
    assert "agent 'c'" in ran.stderr and len(calls.seen) == 2
    found = re.search(r"run id: (\w+)", ran.stderr)
    assert found is not None
    resumed = runner.invoke(
        make_cli(),
        ["resume", target, found.group(1), "--checkpoint", store, "--budget", "calls=5", "-q"],
    )
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "ok" and len(calls.seen) == 4


def test_bad_budget_text_is_a_usage_error_naming_the_item(tmp_path: Path) -> None:
    shutil.copy(HERE / "budget_workflows.py", tmp_path / "flows_bad.py")
    ran = CliRunner().invoke(
        make_cli(),
        ["run", f"{tmp_path / 'flows_bad.py'}:chain4", "go", "--no-checkpoint", "--budget", "usd"],
    )
    assert ran.exit_code != 0
    assert "'usd' is not unit=value" in ran.output


def test_spend_shows_what_each_run_spent_against_its_budget(calls: Calls, tmp_path: Path) -> None:
    import json

    shutil.copy(HERE / "budget_workflows.py", tmp_path / "flows_spend.py")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    target = f"{tmp_path / 'flows_spend.py'}:chain4"
    runner = CliRunner()
    ran = runner.invoke(
        make_cli(), ["run", target, "go", "--checkpoint", store, "--budget", "calls=2", "-q"]
    )
    found = re.search(r"run id: (\w+)", ran.stderr)
    assert found is not None
    shown = runner.invoke(make_cli(), ["spend", "--checkpoint", store])
    assert shown.exit_code == 0, shown.output
    assert f"{found.group(1)}  running  " in shown.output or found.group(1) in shown.output
    assert "model_calls 2 / 2" in shown.output
    as_json = runner.invoke(make_cli(), ["spend", found.group(1), "--checkpoint", store, "--json"])
    [row] = json.loads(as_json.output)
    assert row["spend"]["budget"] == {"model_calls": 2}
    assert row["spend"]["spent"]["run"]["model_calls"] == 2
    missing = runner.invoke(make_cli(), ["spend", "nope", "--checkpoint", store])
    assert missing.exit_code == 2 and "run 'nope' has no checkpoint" in missing.output


def test_plait_runs_shows_each_run_s_spend_against_its_budget(calls: Calls, tmp_path: Path) -> None:
    """plait-budgets answers ``plait_run_columns``: a ``spend`` column from the ledger the
    latest checkpoint keeps; ``-`` for a run without a budget."""
    import json

    shutil.copy(HERE / "budget_workflows.py", tmp_path / "flows_column.py")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    target = f"{tmp_path / 'flows_column.py'}:chain4"
    runner = CliRunner()
    budgeted = runner.invoke(
        make_cli(), ["run", target, "go", "--checkpoint", store, "--budget", "calls=2", "-q"]
    )
    found = re.search(r"run id: (\w+)", budgeted.stderr)
    assert found is not None
    free = runner.invoke(make_cli(), ["run", target, "go", "--checkpoint", store, "-q"])
    assert free.exit_code == 0, free.output
    free_id = re.search(r"run id: (\w+)", free.stderr)
    assert free_id is not None
    listed = runner.invoke(make_cli(), ["runs", "--checkpoint", store, "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["run_id"]: row for row in json.loads(listed.output)}
    assert "2/2 calls" in rows[found.group(1)]["columns"]["spend"]
    assert rows[free_id.group(1)]["columns"]["spend"] == "-"
    table = runner.invoke(make_cli(), ["runs", "--checkpoint", store])
    assert "SPEND" in table.output and "2/2 calls" in table.output


def test_the_progress_lines_show_spend_against_the_budget_as_the_run_goes(
    calls: Calls, tmp_path: Path
) -> None:
    """plait-budgets' observer answers the watch's ``status``: the progress lines of
    ``plait run`` (stderr, not a terminal) show the spend with each superstep and in the
    summary; a run without a budget shows none."""
    shutil.copy(HERE / "budget_workflows.py", tmp_path / "flows_live.py")
    target = f"{tmp_path / 'flows_live.py'}:slow_pair"
    runner = CliRunner()
    ran = runner.invoke(make_cli(), ["run", target, "go", "--no-checkpoint", "--budget", "calls=5"])
    assert ran.exit_code == 0, ran.output
    during = [line for line in ran.stderr.splitlines() if ": pause; spend " in line]
    assert during, ran.stderr
    assert during[0].endswith(" tok · 1/5 calls"), during
    [summary] = [line for line in ran.stderr.splitlines() if ": idle, " in line]
    assert ", spend " in summary and " tok · 2/5 calls in " in summary, summary
    free = runner.invoke(make_cli(), ["run", target, "go", "--no-checkpoint"])
    assert free.exit_code == 0, free.output
    assert ": pause" in free.stderr and "spend" not in free.stderr, free.stderr
