"""kill -9 a budgeted run while a model call is in flight, resume it in a new process with
a raised budget: the ledger goes on from the checkpoint (no reset), the calls checkpointed
before the kill are neither run nor counted again, and the interrupted superstep's call is
counted once, when it runs again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

CRASHY = Path(__file__).with_name("budget_crashy.py")


def _python(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CRASHY), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent,
    )


def test_kill_9_mid_call_then_resume_keeps_the_ledger_exact(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "calls.log"
    victim = _python("run", store, "budgeted", str(log))
    deadline = time.monotonic() + 60
    while not (log.exists() and "budget-test c go" in log.read_text().replace("ok", "go")):
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the run never reached agent c"
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    assert victim.returncode == -signal.SIGKILL

    resumed = _python("resume", store, "budgeted", str(log))
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    report = json.loads(out)
    assert report["outputs"] == ["ok"]
    started = log.read_text().splitlines()
    # a and b ran once (checkpointed), c twice (killed in flight, then again), d once
    assert [line.split()[1] for line in started] == ["a", "b", "c", "c", "d"]
    usage = report["usage"]
    # the ledger counts a and b from the checkpoint, c and d from the resumed run: one
    # call each, none reset, none twice
    assert {e: u["model_calls"] for e, u in usage["by_executor"].items()} == {
        "a": 1, "b": 1, "c": 1, "d": 1,
    }  # fmt: skip
    assert usage["total"]["model_calls"] == 4
    # each call: prompt "x ok"/"a go" is 2 words in, 5 out: $0.002 + $0.010
    assert usage["budgets"]["run"]["spent"]["usd"] == 4 * 0.012
    assert usage["budgets"]["run"]["limits"] == {"usd": 1}
