"""``plait`` in a real pseudo-terminal (pexpect): the live display, Ctrl-C then resume,
and answers prompted for."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

HERE = Path(__file__).parent
SLOW = f"{HERE / 'terminal_workflows.py'}:slow"
GATE = f"{HERE / 'cli_workflows.py'}:gate"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI", "TERM")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", PYTHONUNBUFFERED="1")
    return env


def spawn(cwd: Path, *args: str, step_seconds: float = 0.4) -> pexpect.spawn:
    env = _env()
    env["PLAIT_TEST_STEP_SECONDS"] = str(step_seconds)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "plait_cli", *args],
        cwd=str(cwd),
        env=env,
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=60,
    )
    return child


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Wait for the end; the exit status and everything printed since the last expect."""
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, f"killed by signal {child.signalstatus}"
    return child.exitstatus, child.before


def plait(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "plait_cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )


def test_the_live_display_shows_the_superstep_and_running_executors(tmp_path: Path) -> None:
    child = spawn(tmp_path, "run", SLOW, "1", "--json-input")
    child.expect("run id: ([0-9a-f]{32})")
    run_id = child.match.group(1)
    child.expect("superstep")
    child.expect("elapsed")
    child.expect("▸ s2")  # an executor running, with its elapsed time
    status, rest = finish(child)
    assert status == 0
    assert re.search(rf"run {run_id}: idle, 5 superstep\(s\), 1 output\(s\)", rest)
    assert rest.rstrip().endswith("6")  # the output, printed once the display is gone


def test_ctrl_c_stops_at_the_boundary_and_the_printed_command_completes_the_run(
    tmp_path: Path,
) -> None:
    child = spawn(tmp_path, "run", SLOW, "10", "--json-input", "--allow-imports")
    child.expect("run id: ([0-9a-f]{32})")
    run_id = child.match.group(1)
    child.expect("▸ s1")
    child.sendintr()
    child.expect("stopping after this superstep")
    status, rest = finish(child)
    assert status == 130
    stopped = re.search(rf"run {run_id} stopped after superstep (\d+), checkpointed", rest)
    assert stopped is not None, rest
    assert int(stopped.group(1)) in (2, 3)
    printed = re.search(r"resume with: (.*?)\r?\n", rest)
    assert printed is not None, rest
    command = printed.group(1)
    assert command.endswith(f" resume {SLOW} {run_id} --allow-imports"), command

    listed = plait(tmp_path, "runs", "--json")
    assert '"status": "running"' in listed.stdout

    # typed into a shell as printed: this process's own plait (or python -m plait_cli)
    resumed = subprocess.run(
        command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env()
    )
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(rf"run {run_id}: idle, 5 superstep\(s\)", resumed.stderr)
    assert resumed.stdout == "15\n"


def test_ctrl_c_twice_aborts_and_the_last_checkpoint_still_resumes(tmp_path: Path) -> None:
    # steps long enough that the second Ctrl-C lands inside the superstep, however busy
    # the machine is
    child = spawn(tmp_path, "run", SLOW, "0", "--json-input", step_seconds=5)
    child.expect("run id: ([0-9a-f]{32})")
    run_id = child.match.group(1)
    child.expect("▸ s0")
    child.sendintr()
    child.expect("stopping after this superstep")
    child.sendintr()
    child.expect("aborting now")
    status, rest = finish(child)
    assert status == 130
    assert f"run {run_id} aborted; its last checkpoint resumes it" in rest
    done = plait(tmp_path, "resume", SLOW, run_id, "-q")
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr


def test_a_pending_request_is_prompted_for_type_checked_and_answered(tmp_path: Path) -> None:
    child = spawn(tmp_path, "run", GATE, "the essay")
    child.expect("executor 'approval' asks")
    child.expect('"question": "publish\\?"')
    child.expect(r"answer \(bool\): ")
    child.sendline('"sure"')
    child.expect("the answer must be bool, got str; try again")
    child.expect(r"answer \(bool\): ")
    child.sendline("yes")
    status, rest = finish(child)
    assert status == 0, rest
    assert "published: the essay" in rest


def test_resume_on_a_terminal_asks_for_what_the_run_waits_for(tmp_path: Path) -> None:
    waiting = plait(tmp_path, "run", GATE, "draft", "-q")
    assert waiting.returncode == 3  # not a terminal: printed, not asked
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", waiting.stderr, re.M)
    child = spawn(tmp_path, "resume", GATE, run_id)
    child.expect(r"answer \(bool\): ")
    child.sendline("n")
    status, rest = finish(child)
    assert status == 0, rest
    assert "withheld" in rest


@pytest.mark.parametrize("flag", ["--no-input", "--json"])
def test_no_input_and_json_never_prompt(tmp_path: Path, flag: str) -> None:
    child = spawn(tmp_path, "run", GATE, "draft", flag)
    status, rest = finish(child)
    assert status == 3
    assert "answer (bool)" not in rest and "is waiting for 1 request(s)" in rest
