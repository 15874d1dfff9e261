"""The command docs/index.md gives for installing from a checkout works with pip alone.

Until the distributions are published, ``pip install .`` in a clone cannot find
``plait-builders`` and the rest on the index; the documented command names their folders.
This test runs that very command (read from the page) with pip, in a fresh venv made by the
machine's python, then checks that every distribution the ``plait`` meta-distribution
depends on is installed and that ``plait plugins --json`` lists each plugin among them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from venvtools import ROOT, clean_env

MARKER = "<!-- install-from-checkout -->"


def documented_command() -> str:
    page = (ROOT / "docs" / "index.md").read_text()
    block = page.split(MARKER, 1)[1]
    found = re.search(r"```bash\n(.+?)\n```", block, re.S)
    assert found, f"docs/index.md: no bash block after {MARKER}"
    return found.group(1).strip()


def test_the_documented_checkout_install_works_with_pip_alone(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    command = documented_command()
    assert command.startswith("python3 -m pip install "), command
    done = subprocess.run(
        ["bash", "-c", command.replace("python3", str(venv / "bin" / "python"), 1)],
        cwd=ROOT,
        env=clean_env({"PIP_DISABLE_PIP_VERSION_CHECK": "1"}),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    python = str(venv / "bin" / "python")
    script = (
        "import importlib.metadata as m, json;"
        "print(json.dumps([m.requires('plait'), [d.metadata['Name'] for d in m.distributions()]]))"
    )
    found = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, env=clean_env(), timeout=120
    )
    assert found.returncode == 0, found.stderr
    requires, installed = json.loads(found.stdout)
    wanted = {Requirement(r).name for r in requires if "extra ==" not in r}
    assert "plait-core" in wanted and len(wanted) > 5, wanted
    assert wanted <= set(installed), sorted(wanted - set(installed))

    plugins = subprocess.run(
        [str(venv / "bin" / "plait"), "plugins", "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert plugins.returncode == 0, plugins.stderr
    distributions = {row["distribution"] for row in json.loads(plugins.stdout)}
    # every plugin is listed (plait-builders too: it answers plait_workflow_as_connection);
    # the kernel is not a plugin
    assert wanted - {"plait-core"} <= distributions, sorted(wanted - distributions)
    assert "plait-core" not in distributions
