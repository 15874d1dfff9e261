"""Install plugins from local paths into a fresh venv and check what ``describe()`` reports.

The kernel, plait-routing and plait-merge are installed from their paths beside three tiny
distributions written for the test: ``plait-goodplug`` registers a merge strategy,
``plait-brokenplug`` raises ``ImportError`` when imported, and ``plait-futureplug``
requires ``plait-core>=99`` (installed with ``--no-deps``, as an installer that ignores
requirements — or a stale environment — would leave it). A script run in that venv prints
``describe()`` as JSON — exactly the data the ``plait plugins --json`` command will print —
and what strict loading (``plait.plugins.get_plugin_manager()``) raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from venvtools import ROOT, install, make_venv, run, write_plugin

GOOD = """\
    import plait


    class Longest:
        def merge(self, values, sources):
            return max(values, key=len)

        def output_type(self, input_type):
            return input_type


    @plait.hookimpl
    def plait_register_merge_strategies(register):
        register("goodplug.longest", Longest())
    """

BROKEN = """\
    raise ImportError("plait_brokenplug needs the library 'not_installed_anywhere'")
    """

FUTURE = """\
    raise RuntimeError("plait_futureplug was imported although it requires plait-core>=99")
    """

SCRIPT = """\
import json

import attrs
import plait
import plait

report = {
    "core": plait.__version__,
    "plugins": [attrs.asdict(p) for p in plait.plugins.describe()],
    "strict": None,
}
try:
    plait.plugins.get_plugin_manager()
except plait.errors.PluginLoadErrors as group:
    report["strict"] = {
        "type": type(group).__name__,
        "message": str(group),
        "errors": [
            {
                "type": type(e).__name__,
                "distribution": e.distribution,
                "entry_point": e.entry_point,
                "phase": e.phase,
                "text": str(e),
            }
            for e in group.exceptions
        ],
    }
print(json.dumps(report))
"""


def _report(python: Path, script: Path, **env: str) -> dict[str, Any]:
    out = run([str(python), "-I", str(script)], script.parent, env=env).stdout
    report: dict[str, Any] = json.loads(out)
    report["by_name"] = {p["name"]: p for p in report["plugins"]}
    return report


def test_installed_plugins_load_fail_or_are_blocked_as_describe_reports(tmp_path: Path) -> None:
    good = write_plugin(tmp_path, "goodplug", GOOD)
    broken = write_plugin(tmp_path, "brokenplug", BROKEN)
    future = write_plugin(tmp_path, "futureplug", FUTURE, dependencies=["plait-core>=99"])
    python = make_venv(tmp_path / "venv")
    first_party = [ROOT / "core", ROOT / "plugins/plait-routing", ROOT / "plugins/plait-merge"]
    install(python, [*first_party, good, broken])
    install(python, [future], no_deps=True)  # an installer would refuse plait-core>=99
    script = tmp_path / "describe_plugins.py"
    script.write_text(SCRIPT, encoding="utf-8")

    report = _report(python, script)
    plugins, core = report["by_name"], report["core"]

    assert set(plugins) == {"brokenplug", "futureplug", "goodplug", "merge", "routing"}
    assert plugins["goodplug"]["status"] == "loaded"
    assert plugins["goodplug"]["error"] is None
    assert plugins["goodplug"]["distribution"] == "plait-goodplug"
    assert plugins["goodplug"]["entry_point"] == "goodplug = plait_goodplug"
    assert plugins["goodplug"]["registered"] == {"merge_strategy": ["goodplug.longest"]}

    broken_info = plugins["brokenplug"]
    assert broken_info["status"] == "failed" and broken_info["registered"] == {}
    for part in ("plait-brokenplug", "brokenplug = plait_brokenplug", "'import'", "ImportError"):
        assert part in broken_info["error"], broken_info["error"]
    assert "not_installed_anywhere" in broken_info["error"]

    future_info = plugins["futureplug"]
    assert future_info["status"] == "failed" and future_info["registered"] == {}
    for part in ("plait-futureplug", "futureplug = plait_futureplug", "'compatibility'"):
        assert part in future_info["error"], future_info["error"]
    assert "plait-core>=99" in future_info["error"]
    assert f"running plait-core is {core}" in future_info["error"]

    for name in ("merge", "routing"):
        assert plugins[name]["status"] == "loaded", plugins[name]
        assert plugins[name]["distribution"] == f"plait-{name}"
    assert "concat" in plugins["merge"]["registered"]["merge_strategy"]
    assert "fan_in" in plugins["routing"]["registered"]["router"]

    strict = report["strict"]
    assert strict is not None, "strict loading must raise for the two failed plugins"
    assert strict["type"] == "PluginLoadErrors"
    # one line per broken plugin, each with the fix
    for fix in ("PLAIT_DISABLE_PLUGINS=brokenplug", "PLAIT_DISABLE_PLUGINS=futureplug"):
        assert fix in strict["message"]
    assert [(e["distribution"], e["phase"]) for e in strict["errors"]] == [
        ("plait-brokenplug", "import"),
        ("plait-futureplug", "compatibility"),
    ]
    assert [e["type"] for e in strict["errors"]] == ["PluginLoadError", "IncompatiblePluginError"]

    blocked = _report(python, script, PLAIT_DISABLE_PLUGINS="goodplug")["by_name"]
    assert blocked["goodplug"]["status"] == "blocked"
    assert blocked["goodplug"]["registered"] == {}
    assert blocked["merge"]["status"] == "loaded"
    assert {blocked[n]["status"] for n in ("brokenplug", "futureplug")} == {"failed"}
