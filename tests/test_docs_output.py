"""Command output shown in docs/cli.md is what the command prints today.

The page's plain-progress sample is checked against a real ``plait run`` of the page's own
``essay.py``, through a pipe as in the sample: the output, the run id line, the shape of
each progress line and the summary (run ids and times vary; nothing else may drift).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"

RUN_ID = re.compile(r"^run id: [0-9a-f]{32}$")
PROGRESS = re.compile(r"^\[\d+(?:\.\d+)? m?s\] superstep (\d+): [\w/, ()#.-]+$")
SUMMARY = re.compile(r"^run [0-9a-f]{32}: (.+) in \d+(?:\.\d+)? m?s$")


def _sample() -> tuple[str, list[str]]:
    page = PAGE.read_text()
    block = page.split("<!-- progress-sample -->", 1)[1]
    found = re.search(r"```console\n(.*?)```", block, re.S)
    assert found, "docs/cli.md: no console block after <!-- progress-sample -->"
    lines = found.group(1).splitlines()
    assert lines[0] == "$ plait run essay.py:workflow tides 2>progress.log", lines[0]
    output = lines[1]
    assert lines[2] == "$ cat progress.log"
    return output, lines[3:]


def _shape(stderr: list[str]) -> tuple[bool, bool, str | None]:
    """Whether the first line is the run id, every middle line a progress line, and what
    the summary says (run id and time left out)."""
    summary = SUMMARY.match(stderr[-1])
    return (
        bool(RUN_ID.match(stderr[0])),
        all(PROGRESS.match(line) for line in stderr[1:-1]),
        summary.group(1) if summary else None,
    )


def test_the_plain_progress_sample_is_what_plait_run_prints(tmp_path: Path) -> None:
    page = PAGE.read_text()
    essay = re.search(r'```python title="essay.py"\n(.*?)```', page, re.S)
    assert essay, "docs/cli.md shows no essay.py"
    (tmp_path / "essay.py").write_text(essay.group(1))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    done = subprocess.run(
        [sys.executable, "-m", "plait_cli", "run", "essay.py:workflow", "tides"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    output, documented = _sample()
    assert done.stdout.splitlines() == [output]
    actual = _shape(done.stderr.splitlines())
    assert actual == _shape(documented) == (True, True, actual[2]), (done.stderr, documented)
