"""Each script in docs/examples/ runs as `python docs/examples/<name>.py` and prints its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))

#: What each example must print (each line in order, not necessarily adjacent).
EXPECTED: dict[str, list[str]] = {
    "hello.py": ["DLROW OLLEH"],
    "pipeline.py": [
        "== 'the   build was late and broken'",
        "run started (review)",
        "superstep 1: intake",
        "superstep 2: tone, length, keywords",
        "superstep 3: report",
        "superstep 4: soften",
        "superstep 5: refine",
        "superstep 7: refine",
        "superstep 8: publish",
        "run finished: idle after 8 supersteps",
        "== 'plugins make plait small'",
        "superstep 4: refine",
        "run finished: idle after 7 supersteps",
        "== outputs",
        "The build was fine and fine. [tone: gloomy; length: 6 words; "
        "keywords: broken, build, late; rounds: 3]",
        "Plugins make plait small. [tone: bright; length: 4 words; "
        "keywords: plugins, plait, small; rounds: 3]",
    ],
}


def run_example(path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    return subprocess.run(
        [sys.executable, str(path.relative_to(ROOT))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_example_has_expectations() -> None:
    assert sorted(p.name for p in EXAMPLES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_prints_what_it_should(path: Path) -> None:
    result = run_example(path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    position = 0
    for expected in EXPECTED[path.name]:
        assert expected in lines[position:], f"{expected!r} missing after line {position}"
        position = lines.index(expected, position) + 1


def test_the_pipeline_streams_events_before_its_outputs() -> None:
    lines = run_example(ROOT / "docs" / "examples" / "pipeline.py").stdout.splitlines()
    first_output = next(i for i, line in enumerate(lines) if line.startswith("  output from"))
    assert lines.index("superstep 3: report") < first_output < lines.index("== outputs")
    assert any(line.startswith("  event from keywords: ") for line in lines)
