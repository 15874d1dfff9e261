"""Generate a new Plait plugin distribution from plait-plugin-template.

Usage::

    python contrib/plait-plugin-template/new_plugin.py NAME [DEST]

writes ``DEST/plait-NAME`` (``DEST`` defaults to the current directory): the template's
``pyproject.toml``, ``src/`` and ``tests/`` with the distribution renamed to
``plait-NAME``, the import package to ``plait_NAME``, the entry point and the registry
names (``template.longest``) to ``NAME`` (``NAME.longest``), plus a fresh ``README.md``.

The template depends on ``plait-core`` from its uv workspace. When ``DEST/plait-NAME`` is
a member of a uv workspace (``plugins/`` or ``contrib/`` of the Plait repository) that
source stays; anywhere else it is dropped, so the plugin installs from PyPI's plait-core.

Standard library only: it runs with any python3, before anything is installed.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent
TEMPLATE_DISTRIBUTION = "plait-plugin-template"
TEMPLATE_PACKAGE = "plait_plugin_template"
TEMPLATE_NAME = "template"

#: Top-level files of the template that are not part of a generated plugin.
OWN_FILES = {"new_plugin.py", "README.md"}
#: Directories never copied, wherever they are.
JUNK = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "build", "dist"}
TEXT_SUFFIXES = {".py", ".pyi", ".toml", ".md", ".txt", ".cfg", ".ini", ".typed"}
NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
# a standalone "template" (entry point, registry names), not part of a longer identifier
TEMPLATE_WORD = re.compile(rf"(?<![\w-]){TEMPLATE_NAME}(?![\w-])")
UV_SOURCES = re.compile(r"^\[tool\.uv\.sources\]\n(?:(?!\[).*\n?)*", re.M)

README = """\
# {distribution}

A Plait plugin. Installing it makes these available to every Plait workflow, through its
entry point `{name}` of group `plait` (the name `plait plugins` lists and
`PLAIT_DISABLE_PLUGINS` accepts):

| name | kind | what it does |
|---|---|---|
| `{name}.longest` | merge strategy | the longest value a fan-in receives (ties: earliest source) |
| `{name}.note_to_text` | converter | `{package}.Note` -> `str`, lossless |

They are examples from plait-plugin-template: replace them with your own, keeping the
`{name}.` prefix on registry names so they never clash with another plugin's.

## Develop

```bash
pip install -e . 'plait-testing[trio]'   # pytest, the fixtures, the contract suites, trio
pytest tests
```

The tests use the fixtures and contract suites of `plait-testing` (`MergeStrategyContract`);
`tests/conftest.py` runs every async test on asyncio and trio. See the Plait docs, "Testing
plugins".
"""


@dataclass(frozen=True)
class PluginNames:
    """Every spelling of a new plugin's name."""

    name: str  # entry point, registry-name prefix: "my-thing"
    distribution: str  # "plait-my-thing"
    package: str  # "plait_my_thing"
    identifier: str  # "my_thing", for file names

    @classmethod
    def of(cls, raw: str) -> PluginNames:
        """The names for ``raw`` (``my-thing`` or ``plait-my-thing``)."""
        name = raw.strip().lower()
        if name.startswith("plait-"):
            name = name[len("plait-") :]
        if not NAME.fullmatch(name):
            raise ValueError(
                f"plugin name {raw!r} is not valid: use lowercase letters, digits and single "
                "'-' or '_' between them, starting with a letter (e.g. 'my-thing')"
            )
        identifier = name.replace("-", "_")
        return cls(name, f"plait-{name}", f"plait_{identifier}", identifier)


def rename_text(text: str, names: PluginNames) -> str:
    """The template's text with every name of the template replaced by the new plugin's."""
    text = text.replace(TEMPLATE_DISTRIBUTION, names.distribution)
    text = text.replace(TEMPLATE_PACKAGE, names.package)
    return TEMPLATE_WORD.sub(names.name, text)


def rename_path(relative: Path, names: PluginNames) -> Path:
    """``src/plait_plugin_template/…`` and ``tests/test_template_plugin.py``, renamed."""
    parts = [
        part.replace(TEMPLATE_PACKAGE, names.package).replace(TEMPLATE_NAME, names.identifier)
        for part in relative.parts
    ]
    return Path(*parts)


def workspace_root(target: Path) -> Path | None:
    """The root of the uv workspace ``target`` would be a member of, if any."""
    for parent in target.parents:
        pyproject = parent / "pyproject.toml"
        if not pyproject.is_file():
            continue
        text = pyproject.read_text(encoding="utf-8")
        if "[tool.uv.workspace]" not in text:
            continue
        members = re.search(r"^members\s*=\s*\[(.*?)\]", text, re.M | re.S)
        globs = re.findall(r"[\"']([^\"']+)[\"']", members.group(1)) if members else []
        relative = target.relative_to(parent).as_posix()
        depth = relative.count("/")
        if any(fnmatch.fnmatchcase(relative, g) and g.count("/") == depth for g in globs):
            return parent
        return None
    return None


def _files(template: Path) -> list[Path]:
    found = []
    for path in sorted(template.rglob("*")):
        relative = path.relative_to(template)
        if any(part in JUNK or part.endswith(".egg-info") for part in relative.parts):
            continue
        if len(relative.parts) == 1 and relative.name in OWN_FILES:
            continue
        if path.is_file():
            found.append(relative)
    return found


def generate(raw_name: str, dest: Path, *, template: Path = TEMPLATE) -> Path:
    """Write plugin ``plait-<name>`` under ``dest``; return its directory.

    :raises ValueError: for an invalid name.
    :raises FileExistsError: if the directory exists already.
    """
    names = PluginNames.of(raw_name)
    target = (dest / names.distribution).resolve()
    if target.exists():
        raise FileExistsError(f"{target} exists already; choose another NAME or DEST")
    in_workspace = workspace_root(target) is not None
    for relative in _files(template):
        source, out = template / relative, target / rename_path(relative, names)
        out.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix not in TEXT_SUFFIXES:
            shutil.copyfile(source, out)
            continue
        text = rename_text(source.read_text(encoding="utf-8"), names)
        if relative.name == "pyproject.toml" and not in_workspace:
            text = UV_SOURCES.sub("", text).rstrip("\n") + "\n"
        out.write_text(text, encoding="utf-8")
    readme = README.format(distribution=names.distribution, name=names.name, package=names.package)
    (target / "README.md").write_text(readme, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    """The command line: ``new_plugin.py NAME [DEST]``."""
    parser = argparse.ArgumentParser(
        prog="new_plugin.py",
        description="Generate a Plait plugin distribution plait-NAME from this template.",
    )
    parser.add_argument("name", metavar="NAME", help="the plugin's name, e.g. my-thing")
    parser.add_argument(
        "dest", metavar="DEST", nargs="?", default=".", help="where to put plait-NAME (.)"
    )
    args = parser.parse_args(argv)
    try:
        target = generate(args.name, Path(args.dest))
    except (ValueError, FileExistsError) as exc:
        parser.exit(2, f"new_plugin.py: error: {exc}\n")
    root = workspace_root(target)
    print(f"wrote {target}")
    if root is not None:
        print(f"it is a member of the uv workspace at {root}: run `uv lock` there")
    print(f"next: cd {target} && pip install -e . 'plait-testing[trio]' && pytest tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
