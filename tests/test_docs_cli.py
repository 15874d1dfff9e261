"""The workflow-file pages open with a complete file that runs from the command line, and
the commands they show print what the page says.

For each page in :data:`PAGES`: its titled blocks (the workflow file, the agents' module)
are written to a scratch folder (the files of ``docs/examples/`` the page includes), then
every ``$ plait …`` line of its ``console`` blocks runs there (``python -m plait_cli``);
what follows a command, up to the next ``$``, is its stdout. A shown output of ``…`` alone
means the command's words vary (a real model's): only its exit status is checked.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import DOCS, code_blocks, write_project

PAGES = ["flow.md", "dag.md", "steps.md", "agents.md"]


def commands(page: Path) -> list[tuple[str, list[str]]]:
    """``(command, shown stdout lines)`` of the page's console blocks, in order."""
    found: list[tuple[str, list[str]]] = []
    for block in code_blocks(page):
        if block.language != "console":
            continue
        shown: list[tuple[str, list[str]]] = []
        for line in block.body.splitlines():
            if line.startswith("$ "):
                shown.append((line[2:], []))
            elif shown:
                shown[-1][1].append(line)
        found.extend(shown)
    return found


@pytest.mark.parametrize("name", PAGES)
def test_the_page_opens_with_a_file_that_runs_from_the_cli(name: str, tmp_path: Path) -> None:
    page = DOCS / name
    blocks = code_blocks(page)
    assert blocks[0].title, f"{name} opens with a titled file"
    write_project(page, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    shown = commands(page)
    assert shown and all(command.startswith("plait ") for command, _ in shown)
    for command, output in shown:
        words = shlex.split(command)
        done = subprocess.run(
            [sys.executable, "-m", "plait_cli", *words[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        if output != ["…"]:
            assert done.stdout.splitlines() == output, command
