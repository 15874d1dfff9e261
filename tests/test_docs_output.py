"""Command output shown in docs/cli.md is what the command prints today.

The page's plain-progress sample is checked against a real ``plait run`` of the page's own
``essay.py``, through a pipe as in the sample: the output, the run id line, the shape of
each progress line and the summary (run ids and times vary; nothing else may drift).

The page's prompt sample (answering a request on a terminal) is checked against a real
``plait run`` on a pseudo-terminal, typing the sample's answers when it asks: every line,
with run ids, request ids and times as the only things allowed to differ.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
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


IDS = re.compile(r"\b[0-9a-f]{32}\b")
TIMES = re.compile(r" in \d+(?:\.\d+)? m?s$")
COLOURS = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = "answer (bool): "


def _normal(line: str) -> str:
    """A line with run ids, request ids and times made alike."""
    return TIMES.sub(" in <time>", IDS.sub("<id>", line))


def _prompt_sample() -> tuple[list[str], list[str]]:
    """The prompt sample's command line (as argv) and the lines shown after it."""
    block = PAGE.read_text().split("<!-- prompt-sample -->", 1)[1]
    found = re.search(r"```console\n(.*?)```", block, re.S)
    assert found, "docs/cli.md: no console block after <!-- prompt-sample -->"
    lines = found.group(1).splitlines()
    assert lines[0] == '$ plait run essay.py:review "the essay"', lines[0]
    return ["run", "essay.py:review", "the essay"], lines[1:]


def _on_a_terminal(args: list[str], cwd: Path, answers: list[str]) -> tuple[int, list[str]]:
    """Run ``plait ARGS`` with a pseudo-terminal as its stdin, stdout and stderr, typing
    each of ``answers`` when it asks; its exit status and the lines it showed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    # a terminal that draws no live display: what it draws is erased when the run ends
    # (it is transient), and the cursor moves would garble the lines compared here
    env["TERM"] = "dumb"
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "plait_cli", *args],
        cwd=cwd,
        env=env,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    shown, pending = b"", list(answers)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the other side is closed: the process has ended
                break
            if not chunk:
                break
            shown += chunk
            if pending and shown.endswith(PROMPT.encode()):
                os.write(primary, pending.pop(0).encode() + b"\n")
        status = process.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if process.poll() is None:
            process.kill()
        os.close(primary)
    assert not pending, f"it asked for {len(answers) - len(pending)} answer(s): {shown!r}"
    text = COLOURS.sub("", shown.decode().replace("\r\n", "\n"))
    return status, text.splitlines()


def test_the_prompt_sample_is_what_plait_run_asks_on_a_terminal(tmp_path: Path) -> None:
    page = PAGE.read_text()
    essay = re.search(r'```python title="essay.py"\n(.*?)```', page, re.S)
    assert essay, "docs/cli.md shows no essay.py"
    (tmp_path / "essay.py").write_text(essay.group(1))
    args, documented = _prompt_sample()
    answers = [line[len(PROMPT) :] for line in documented if line.startswith(PROMPT)]
    assert answers == ['"sure"', "y"]
    status, shown = _on_a_terminal(args, tmp_path, answers)
    assert status == 0, shown
    assert [_normal(line) for line in shown] == [_normal(line) for line in documented]
