"""Each seed's own example is a file that stands alone: its agents declared in the file,
run, validated and drawn from the command line with no Python target — and the same
workflow with Python agents named by ``--agents``.

- seed 000: ``researcher -> [analyzer, summarizer] -> writer`` with four agents;
- seed 001: the four-node DAG, ids as in the seed, ``skip_condition`` and ``context_passed``;
- seed 002: the QA loop on a ``structured_output`` field, after a nested ``parallel``.

LLM agents run on the fake models of ``fake_llm.py`` (llm's plugin mechanism, in process).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import llm
import pytest
from click.testing import CliRunner, Result
from plait_cli import make_cli

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm import FakeModels

FILES = Path(__file__).with_name("seed_files")
#: the docs' runnable examples these tests share instead of keeping copies
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
SHARED = [EXAMPLES / "flow" / "article.flow", EXAMPLES / "steps" / "qa_agents.py"]


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The seed files copied into a scratch folder (plait run writes .plait/ there), the
    fake models registered with llm, llm's user directory a temporary one."""
    for path in [*FILES.iterdir(), *SHARED]:
        if path.is_file():
            shutil.copy(path, tmp_path / path.name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_LLM_MODEL", raising=False)
    for name in ("article_agents", "meal_agents", "qa_agents"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    plugin = FakeModels()
    llm.plugins.pm.register(plugin, name="plait-fake-models")
    try:
        yield tmp_path
    finally:
        llm.plugins.pm.unregister(plugin)


def plait(*args: str) -> Result:
    return CliRunner().invoke(make_cli(), list(args))


def run(*args: str) -> Result:
    done = plait("run", *args, "--no-checkpoint", "-q")
    assert done.exit_code == 0, done.output
    return done


# -- seed 000 --------------------------------------------------------------------------------


def test_seed_000_runs_as_a_file_with_its_four_agents_declared_in_it() -> None:
    done = run("article.flow.yaml", "AI", "--allow", "network")
    # the writer got both branches' answers, merged with concat_newline, analyzer first
    assert done.stdout == (
        "fake(Write an article from these notes: fake(Analyze: fake(Research: AI)) |  | "
        "fake(Summarize: fake(Research: AI)))\n"
    )


def test_seed_000_runs_its_parallel_block_in_one_superstep() -> None:
    done = plait(
        "run", "article.flow.yaml", "AI", "--allow", "network", "--no-checkpoint", "--json"
    )
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.stderr.splitlines()]
    steps = [e["executor_ids"] for e in events if e["event"] == "SuperstepStarted"]
    assert steps == [["researcher"], ["analyzer", "summarizer"], ["writer"], ["flow:output"]]


def test_seed_000_runs_with_python_agents_through_dash_dash_agents() -> None:
    done = run("article.flow", "AI", "--agents", "article_agents.py")
    assert done.stdout == ("article:\nanalysis of notes on AI\n\nsummary of notes on AI\n")


# -- seed 001 --------------------------------------------------------------------------------

FLAGS = json.dumps({"flags": {"skip_meal": False, "skip_glucose": True}})


def test_seed_001_runs_as_a_file_with_its_agents_declared_in_it() -> None:
    done = run("meal.json", FLAGS, "--json-input", "--allow", "network")
    (output,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert output["user_name"].startswith("user_name for Greet the user:")
    assert output["meal"].startswith("meal for {")  # the meal agent ran
    assert "glucose" not in output  # skip_condition flags.skip_glucose held
    assert output["feedback"].startswith("feedback for {")


def test_seed_001_runs_with_python_agents_named_as_the_seed_names_them() -> None:
    done = run("meal_plain.json", FLAGS, "--json-input", "--agents", "meal_agents.py")
    (output,) = [json.loads(line) for line in done.stdout.splitlines()]
    # context_passed: the meal agent saw only user_name and user_state
    assert output["meal_saw"] == ["user_name", "user_state"]
    assert output["feedback"] == "Ada: soup for Ada"
    assert "glucose" not in output


# -- seed 002 --------------------------------------------------------------------------------


def test_seed_002_runs_the_qa_loop_as_a_file_with_its_agents_declared_in_it() -> None:
    done = run("qa.yaml", "Translate and publish this draft", "--allow", "network")
    (output,) = done.stdout.splitlines()
    # rejected once, translated again, approved, published: the publisher's instruction
    # read the last translation, whose own instruction read the nested parallel's output
    assert output.startswith("fake(Publish: fake(Translate the draft: fake(Write a draft about:")


def test_seed_002_loops_once_and_runs_nested_parallel_branches_in_one_superstep() -> None:
    done = plait("run", "qa.yaml", "x", "--allow", "network", "--no-checkpoint", "--json")
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.stderr.splitlines()]
    steps = [e["executor_ids"] for e in events if e["event"] == "SuperstepStarted"]
    assert [i for i in steps[1] if "/" not in i] == ["gen", "research", "summary"]
    ran = [i for step in steps for i in step]
    assert ran.count("qa") == 2 and ran.count("publish") == 1


def test_seed_002_runs_with_python_agents_through_dash_dash_agents() -> None:
    done = run("qa_plain.yaml", "draft", "--agents", "qa_agents.py")
    assert done.stdout == "published after 2 translation(s)\n"


# -- validate and graph ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "flags"),
    [
        ("article.flow.yaml", []),
        ("meal.json", []),
        ("qa.yaml", []),
        ("article.flow", ["--agents", "article_agents.py"]),
        ("meal_plain.json", ["--agents", "meal_agents.py"]),
        ("qa_plain.yaml", ["--agents", "qa_agents.py"]),
    ],
)
def test_each_seed_file_validates_and_draws(file: str, flags: list[str]) -> None:
    checked = plait("validate", file, *flags)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.startswith(f"{file}: ok")
    drawn = plait("graph", file, *flags)
    assert drawn.exit_code == 0, drawn.output
    assert drawn.stdout.startswith("flowchart")
