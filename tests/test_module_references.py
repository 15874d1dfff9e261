"""Every ``plait…`` name that the docs, the READMEs and the sources' docstrings and comments
mention exists: a module, or an attribute reached from one (``plait.spi.Durability``,
``plait_durable.checkpoint``). A module that moved or went away leaves no stale pointer.
A name in quotes is a string (a span attribute, a key), not a Python name.

A name under a top-level package that is not installed here (``plait_longest``, the
tutorial's plugin) is an example, and is not checked.

Resolving a name imports its module, which may import a plugin's client library (Ray reads
its configuration once, when it is first imported): the names are resolved in a child
process, so the test process imports nothing it would not otherwise.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: ``plait`` or ``plait_<name>``, then one or more ``.name`` parts.
NAME = re.compile(r"(?<![\w./'\"-])(plait(?:_[a-z0-9_]+)?(?:\.(?:[A-Za-z]\w*|_\w+))+)")
#: File names, not Python names.
SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".json", ".flow", ".txt", ".db", ".sqlite")


def _texts() -> list[Path]:
    files = sorted((ROOT / "docs").rglob("*.md"))
    files += sorted(ROOT.glob("*.md"))
    for base in ("core", "plugins", "contrib"):
        files += sorted((ROOT / base).glob("**/README.md"))
        files += sorted(p for p in (ROOT / base).glob("**/src/**/*.py"))
    return [path for path in files if ".venv" not in path.parts]


@cache
def _resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute chain from one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            continue
        value: object = importlib.import_module(module_name)
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


@cache
def _span_names() -> frozenset[str]:
    """The span, event and attribute names plait-otel writes (``"plait.run_id"``): names in
    a trace, not in Python."""
    sources = (ROOT / "plugins" / "plait-otel" / "src").rglob("*.py")
    text = "".join(path.read_text(encoding="utf-8") for path in sources)
    return frozenset(re.findall(r"[\"'](plait\.\w+)[\"']", text))


def _installed(top: str) -> bool:
    return importlib.util.find_spec(top) is not None


def _mentions() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in _texts():
        text = path.read_text(encoding="utf-8")
        for match in NAME.finditer(text):
            name = match.group(1)
            if name.endswith(SUFFIXES) or name in _span_names():
                continue
            found.add((str(path.relative_to(ROOT)), name))
    return sorted(found)


def test_the_names_are_found() -> None:
    # the check below would pass in silence if the pattern found nothing
    names = {name for _, name in _mentions()}
    assert {"plait.spi", "plait_durable.checkpoint", "plait.spi.Durability"} <= names


def unresolved(names: list[str]) -> list[str]:
    """The names of ``names`` that do not resolve, decided in a child process."""
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_module_references import _resolves\n"
        "names = json.load(sys.stdin)\n"
        "print(json.dumps([name for name in names if not _resolves(name)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_every_plait_name_mentioned_exists() -> None:
    mentions = [(where, name) for where, name in _mentions() if _installed(name.split(".")[0])]
    missing = set(unresolved(sorted({name for _, name in mentions})))
    stale = [f"{where}: {name}" for where, name in mentions if name in missing]
    assert stale == [], "\n".join(stale)


def test_a_gone_module_is_caught() -> None:
    gone = ["plait.placement", "plait.refs", "plait.hookspecs"]
    assert unresolved([*gone, "plait.spi.Durability"]) == gone
