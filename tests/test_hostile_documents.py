"""Hostile workflow documents are positioned errors in every format, never a crash
(issue 24, finding 5).

100 KB of nested ``[`` made ruamel's C composer overflow the C stack (a segfault, exit
139) in ``plait run`` and ``plait validate`` before the YAML loader's depth check ran. Each
document here goes through both commands in a child process, so a crash fails the test
instead of taking the test process down with it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DEPTH = 100_000  # 100 KB of "["

DOCUMENTS = {
    "deep.yaml": "workflow: " + "[" * DEPTH + "\n",
    "deep-block.yaml": "workflow:\n" + "- " * (DEPTH // 2) + "x\n",
    "deep.json": '{"nodes": ' + "[" * DEPTH + "}",
    "deep.flow": "a -> " + "[" * DEPTH + "\n",
}


def _plait(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from plait_cli import make_cli; make_cli()(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: each takes well under a second
        check=False,
    )


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_100_kb_of_nesting_is_a_positioned_error_not_a_crash(
    tmp_path: Path, name: str, command: str
) -> None:
    path = tmp_path / name
    path.write_text(DOCUMENTS[name])
    options = ["--no-checkpoint", "hello"] if command == "run" else []
    done = _plait(command, str(path), *options)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    output = done.stdout + done.stderr
    assert f"{path}:1:" in output or f"{path}:2:" in output, output[:2000]
    # the offending line is shown as a window around the column, not 100 KB of it
    assert len(output) < 4000, len(output)
