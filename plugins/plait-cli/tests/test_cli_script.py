"""The installed ``plait`` console script, run as a user runs it: one process per command.

A human-in-the-loop run is started by one process, which exits 2, and answered by another,
which resumes it from the sqlite checkpoint the first wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

WORKFLOWS = Path(__file__).with_name("cli_workflows.py")
SCRIPT = Path(sys.executable).with_name("plait")


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the installed ``plait`` script in a clean environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_console_script_lists_plugins_and_runs_and_resumes_a_workflow(tmp_path: Path) -> None:
    assert SCRIPT.is_file(), f"no console script at {SCRIPT}: is plait-cli installed?"

    listed = plait("plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["cli"]["distribution"] == "plait-cli"
    assert plugins["cli"]["status"] == "loaded"

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    gate = f"{WORKFLOWS}:gate"
    waiting = plait("run", gate, "the essay", "--checkpoint", url, cwd=tmp_path)
    assert waiting.returncode == 3, waiting.stderr
    assert waiting.stdout == ""
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", waiting.stderr, re.M)
    (request_id,) = re.findall(r"^  request ([0-9a-f]+) from executor", waiting.stderr, re.M)

    done = plait(
        "resume",
        gate,
        run_id,
        "--checkpoint",
        url,
        "--respond",
        f"{request_id}=true",
        "-q",
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "published: the essay\n", "")

    echoed = plait("run", f"{WORKFLOWS}:echo", "piped", cwd=tmp_path)
    assert (echoed.returncode, echoed.stdout) == (0, "DEPIP\n")


def test_python_dash_m_plait_cli_is_the_same_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "plait_cli", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.startswith("plait-cli ")


REPOSITORY = Path(__file__).resolve().parents[3]
README_PLAIT = ["bash", ".ci/uv", "run", "--locked", "plait"]


def test_through_the_readmes_uv_run_the_printed_resume_command_works_when_typed(
    tmp_path: Path,
) -> None:
    """``bash .ci/uv run --locked plait …`` (the README's form) puts ``plait`` on the path
    only inside uv: the printed command is in the same form, and a shell runs it."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    waiting = subprocess.run(
        [*README_PLAIT, "run", f"{WORKFLOWS}:gate", "essay", "--checkpoint", url],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert waiting.returncode == 3, waiting.stderr
    (command,) = re.findall(r"^resume with: (.*)$", waiting.stderr, re.M)
    assert command.startswith("bash .ci/uv run --locked plait resume "), command
    answered = re.sub(r"=JSON$", "=true", command)
    done = subprocess.run(
        answered, shell=True, cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=300
    )
    assert (done.returncode, done.stdout) == (0, "published: essay\n"), done.stderr


def test_a_console_script_not_on_the_path_prints_its_full_path(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_", "UV_"))}
    env["PATH"] = "/usr/bin:/bin"  # this plait is not on it
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    waiting = subprocess.run(
        [str(SCRIPT), "run", f"{WORKFLOWS}:gate", "essay", "--checkpoint", url],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert waiting.returncode == 3, waiting.stderr
    (command,) = re.findall(r"^resume with: (.*)$", waiting.stderr, re.M)
    assert command.startswith(f"{SCRIPT} resume "), command
    done = subprocess.run(
        re.sub(r"=JSON$", "=false", command),
        shell=True,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "withheld\n"), done.stderr


def test_the_collector_is_off_for_the_start_up_only(tmp_path: Path) -> None:
    # main() turns the cyclic garbage collector off while the command starts up; the run
    # itself has it on, and main() leaves it as it found it
    collecting = tmp_path / "collecting.py"
    collecting.write_text(
        "import gc\n"
        "from plait import Never, WorkflowContext, executor\n"
        "from plait_builders import WorkflowBuilder\n"
        "\n"
        "@executor(id='collector')\n"
        "async def collector(text: str, ctx: WorkflowContext[Never, str]) -> None:\n"
        "    await ctx.yield_output(f'collecting: {gc.isenabled()}')\n"
        "\n"
        "workflow = WorkflowBuilder('collecting').add_executor(collector).set_start(collector)\n"
        "workflow = workflow.build()\n"
    )
    ran = plait("run", f"{collecting}:workflow", "x", "--no-checkpoint", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "collecting: True\n"), ran.stderr
    code = (
        "import gc\n"
        "from plait_cli import main\n"
        "try:\n"
        "    main(['plugins'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('after:', gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "after: True"
