"""A store writer cannot choose what ``plait resume`` runs (issue 24, F1 and F2).

``plait run`` records the workflow file in each checkpoint's metadata (``cli.target``).
Whoever can write the store can change that record to a file of the same shape whose
steps are ``shell`` steps (here, inside the store's own folder where it has one). On
SQLite, the file store and Redis:

- ``plait resume RUN_ID`` loads nothing: it shows the recorded file and the command that
  names it, and exits 2;
- naming the forged file is refused: its fingerprint differs from the one the run's
  checkpoints record (the topology signature alone would pass it);
- the command the failed run printed still resumes it.

In every case the forged steps' marker file is never written. And a target's form is
decided once: renaming the file between two readings never turns a document into a
Python import (F2; before the fix, 60 resumes with a process renaming the file imported
it within a few attempts).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import attrs
import pytest
from click.testing import CliRunner, Result
from plait_cli import Target, TargetError, load_target, make_cli, parse_target
from plait_durable import open_store

CODE = """\
async def shout(text: str) -> str:
    return text.upper() + "!"
"""

FLOW = """\
workflow:
  - id: first
    type: executor
    kind: python
    config: {{ref: "{module}:shout"}}
  - id: second
    type: executor
    kind: python
    config: {{ref: "{module}:shout"}}
"""

EVIL = """\
workflow:
  - id: first
    type: executor
    kind: shell
    config:
      argv: ["{python}", "-c", "import pathlib; pathlib.Path({marker!r}).write_text('ran')"]
  - id: second
    type: executor
    kind: shell
    config:
      argv: ["{python}", "-c", "import pathlib; pathlib.Path({marker!r}).write_text('ran')"]
"""


def plait(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def printed(stderr: str) -> list[str]:
    """The one ``plait resume …`` command in ``stderr``, as a shell splits it, without
    ``plait``."""
    lines = [
        line.removeprefix("resume with: ").strip()
        for line in stderr.splitlines()
        if line.startswith(("resume with: plait ", "  plait resume "))
    ]
    assert len(lines) == 1, stderr
    words = shlex.split(lines[0])
    assert words[0] == "plait"
    return words[1:]


@pytest.fixture(params=["sqlite", "file", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """``(store URL, a folder the store's writer can write)``: the file store's own."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}", tmp_path
    if request.param == "file":
        folder = tmp_path / "store"
        folder.mkdir()
        return f"file://{folder}", folder
    url: str = request.getfixturevalue("plait_redis_url")
    return url, tmp_path


def forge(url: str, run_id: str, target: str) -> None:
    """A store writer's new latest checkpoint: the last one, its ``cli.target`` changed."""

    async def save() -> None:
        checkpoints = open_store(url)
        try:
            latest = await checkpoints.latest(run_id)
            assert latest is not None
            record = {"target": target, "allow_imports": False}
            await checkpoints.save(
                attrs.evolve(
                    latest,
                    checkpoint_id=uuid.uuid4().hex,
                    parent_id=latest.checkpoint_id,
                    created_at=latest.created_at + 1,
                    metadata={**latest.metadata, "cli": record},
                )
            )
        finally:
            await checkpoints.aclose()

    anyio.run(save)


def test_a_forged_target_never_runs(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, writable = store
    module = f"forged_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(CODE)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(module=module))
    marker = tmp_path / "MARKER"
    evil = writable / "flow.yaml" if writable != tmp_path else tmp_path / "evil.yaml"
    evil.write_text(EVIL.format(python=sys.executable, marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))

    grant = ["--allow", "subprocess"]  # the flow's shell step (so the forged one's too)
    failed = plait(
        "run",
        str(flow),
        "hi",
        "--allow-imports",
        *grant,
        "--checkpoint",
        url,
        "--max-supersteps",
        "1",
    )
    assert failed.exit_code == 1, failed.stderr
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", failed.stderr, re.M)
    resume = printed(failed.stderr)
    assert resume == ["resume", str(flow), run_id, "--checkpoint", url, "--allow-imports", *grant]
    forge(url, run_id, str(evil))

    unnamed = plait("resume", run_id, "--checkpoint", url, *grant)
    assert unnamed.exit_code == 2
    assert f"run {run_id} was started from {evil}" in unnamed.stderr
    assert printed(unnamed.stderr) == ["resume", str(evil), run_id, "--checkpoint", url, *grant]
    assert not marker.exists()

    named = plait(*printed(unnamed.stderr))
    assert named.exit_code == 1
    assert "WorkflowChangedError" in named.stderr
    assert 'node \'second\' config.kind: "python" → "shell"' in named.stderr
    assert not marker.exists()

    done = plait(*resume, "-q")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.endswith("\n\nHI!\n")  # the second step's output, upper-cased again
    assert not marker.exists()


DOCUMENT = """\
workflow:
  - id: only
    type: executor
    kind: python
    config: {ref: "json:dumps"}
"""

EVIL_MODULE = """\
import pathlib
pathlib.Path({marker!r}).write_text("imported")
wf = None
"""


def test_a_target_is_read_once_so_a_rename_never_makes_it_an_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"evil_{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{name}.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    document = tmp_path / f"{name}.py:wf"
    document.write_text(DOCUMENT)
    target = parse_target(str(document))
    assert target == Target("document", str(document))
    assert not target.imports
    document.unlink()  # between deciding and loading, the document goes away
    with pytest.raises(TargetError):
        load_target(target)
    assert not marker.exists() and name not in sys.modules


RENAMER = """\
import os
import sys

a, b = sys.argv[1], sys.argv[2]
while True:
    for source, destination in ((a, b), (b, a)):
        try:
            os.rename(source, destination)
        except FileNotFoundError:
            pass
"""


def test_sixty_resumes_while_the_recorded_document_is_renamed_never_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"evil_{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{name}.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    document = tmp_path / f"{name}.py:wf"
    hidden = tmp_path / "hidden.yaml"
    hidden.write_text(DOCUMENT)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    module = f"honest_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(CODE)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(module=module))
    monkeypatch.syspath_prepend(str(tmp_path))
    first = plait("run", str(flow), "x", "--allow-imports", "--checkpoint", url, "-q")
    assert first.exit_code == 0, first.stderr
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", first.stderr, re.M)
    forge(url, run_id, str(document))

    # a local process renames the document back and forth, as fast as it can (a thread
    # of this process, holding the GIL in turns, would hardly ever land in the window)
    renamer = subprocess.Popen(
        [sys.executable, "-c", RENAMER, str(hidden), str(document)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(60):
            unnamed = plait("resume", run_id, "--checkpoint", url, "-q")
            assert unnamed.exit_code == 2, unnamed.stderr
            assert not marker.exists()
    finally:
        renamer.kill()
        renamer.wait(timeout=30)
    assert not marker.exists() and name not in sys.modules
