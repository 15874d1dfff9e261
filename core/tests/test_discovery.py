"""Finding installed plugins: real ``*.dist-info`` directories on ``sys.path``, read through
importlib.metadata; what it found kept between processes only beside the kernel's bytecode
and only while ``sys.path`` is unchanged; and the kernel's version is a constant that
matches the installed distribution."""

from __future__ import annotations

import json
import os
import sys
import types
from importlib import metadata
from pathlib import Path
from typing import Any

import plait
import pytest
from plait import PluginLoadError, PluginLoadErrors, _plugins as loading, _version
from plait.spi import PluginManager


def test_the_version_constant_is_the_installed_distribution_s() -> None:
    assert _version.__version__ == metadata.version("plait-core")
    assert plait.__version__ == loading.core_version() == _version.__version__


def test_the_version_constant_is_the_one_in_pyproject() -> None:
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert f'version = "{_version.__version__}"' in pyproject.read_text(encoding="utf-8")


def test_the_installed_plugins_are_what_importlib_metadata_says() -> None:
    expected = sorted(
        (ep.dist.name, ep.name, ep.value)
        for ep in metadata.entry_points(group="plait")
        if ep.dist is not None
    )
    found = [(dist, ep.name, ep.value) for ep, dist, _, _ in loading.iter_entry_points(None)]
    assert found == sorted(found, key=lambda item: (item[0].lower(), item[1]))
    assert sorted(found) == expected
    assert {"routing", "stores", "cli"} <= {name for _, name, _ in found}


PLUGIN_MODULE = """
import plait

@plait.hookimpl
def plait_register_merge_strategies(register):
    register("{strategy}", Strategy())

class Strategy:
    def merge(self, values, sources):
        return values

    def output_type(self, input_type):
        return input_type
"""


def install(
    site: Path, name: str, *, requires: str = "plait-core>=0.1,<1", strategy: str = "shortest"
) -> None:
    """A distribution ``name`` with one plugin module, as an installer lays it out in ``site``."""
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(PLUGIN_MODULE.format(strategy=strategy), encoding="utf-8")
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.3\nName: {name}\nVersion: 1.0\nRequires-Dist: {requires}\n\n",
        encoding="utf-8",
    )
    (info / "entry_points.txt").write_text(
        f"[plait]\n{module.removeprefix('plait_')} = {module}\n", encoding="utf-8"
    )


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two directories at the front of ``sys.path``, like two site-packages."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    for module in ("plait_twice", "plait_future"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return first, second


def test_a_distribution_installed_twice_on_sys_path_is_loaded_once_from_the_first(
    sites: tuple[Path, Path],
) -> None:
    first, second = sites
    install(first, "plait-twice", strategy="from_first")
    install(second, "plait-twice", strategy="from_second")
    manager = PluginManager(disabled=())
    infos = [i for i in manager.describe() if i.distribution == "plait-twice"]
    assert [(i.name, i.status, i.version) for i in infos] == [("twice", "loaded", "1.0")]
    assert infos[0].registered == {"merge_strategy": ["from_first"]}


def test_a_real_distribution_s_kernel_requirement_is_checked_before_import(
    sites: tuple[Path, Path],
) -> None:
    install(sites[0], "plait-future", requires="plait-core>=99")
    manager = PluginManager(disabled=())
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.version) == ("plait-future", "1.0")
    assert error.phase == "compatibility"
    assert error.entry_point == "future = plait_future"
    assert "plait_future" not in sys.modules


def test_loading_plugins_writes_nothing_to_the_user_s_cache_or_home(
    sites: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    install(sites[0], "plait-twice")
    PluginManager(disabled=()).load_entrypoints()
    assert not cache_home.exists() and not (tmp_path / "home").exists()
    # what is installed now is what loads: a distribution removed is gone at once
    for path in sorted(sites[0].rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else os.unlink(path)
    names = {info.name for info in PluginManager(disabled=()).describe()}
    assert "twice" not in names and "routing" in names


def test_a_forged_cache_file_where_the_old_cache_lived_is_never_read(
    sites: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24, F9: a cache that names a module made every command import it."""
    cache_home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.delitem(sys.modules, "plait_forged", raising=False)
    (sites[0] / "plait_forged.py").write_text("IMPORTED = True\n", encoding="utf-8")
    forged = {
        "format": 2,
        "group": "plait",
        "prefix": sys.prefix,
        "dists": {
            str(sites[0] / "plait_forged-1.0.dist-info"): {
                "eps": [["forged", "plait_forged"]],
                "name": "plait-forged",
                "version": "1.0",
                "requires": [],
            }
        },
    }
    (cache_home / "plait").mkdir(parents=True)
    for name in ("entry-points.json", "entry-points-00000000.json"):
        (cache_home / "plait" / name).write_text(json.dumps(forged), encoding="utf-8")
    names = {info.name for info in PluginManager(disabled=()).describe()}
    assert "forged" not in names and "routing" in names
    assert "plait_forged" not in sys.modules


# -- what discovery found, kept beside the kernel's bytecode ---------------------------------


def settle(*directories: Path) -> None:
    """Date ``directories`` a minute back, as an install that finished long ago."""
    past = int(__import__("time").time()) - 60
    for directory in directories:
        os.utime(directory, (past, past))


def changed_lately(directory: Path) -> bool:
    return __import__("time").time_ns() - directory.stat().st_mtime_ns < loading._SETTLE_NS


@pytest.fixture
def remembered(sites: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache file in ``tmp_path`` that may be written (the suite sets
    ``PYTHONDONTWRITEBYTECODE``), with every ``sys.path`` directory settled."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.chdir(tmp_path)
    install(sites[0], "plait-twice")
    # only the directories changed in the last two seconds: re-dating the others (the
    # interpreter's own, shared by every environment on the machine) would change every
    # process's sys.path state, and every process's file would be worked out again
    recent = [Path(p) for p in sys.path if p and Path(p).is_dir() and changed_lately(Path(p))]
    settle(*recent, tmp_path, *sites)
    return tmp_path / "plait-entry-points.json"


def installed_now() -> list[tuple[str, str, str, str, list[str]]]:
    return [
        (ep.name, ep.value, dist, version, requires)
        for ep, dist, version, requires in loading.iter_entry_points(None)
    ]


def described(found: list[loading.Found]) -> list[tuple[str, str, str, str, list[str]]]:
    return [
        (ep.name, ep.value, dist, version, [r for r in requires if loading._may_name_core(r)])
        for ep, dist, version, requires in found
    ]


def test_what_discovery_found_is_read_back_without_importlib_metadata(
    remembered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = loading.InstalledPlugins("0.1.0", str(remembered))
    truth = described(first.found())
    assert ("twice", "plait_twice", "plait-twice", "1.0", ["plait-core>=0.1,<1"]) in truth
    first.save()
    assert remembered.exists()

    def never(entry_points: object) -> None:
        raise AssertionError("importlib.metadata was asked again")

    monkeypatch.setattr(loading, "iter_entry_points", never)
    second = loading.InstalledPlugins("0.1.0", str(remembered))
    assert described(second.found()) == truth
    # the remembered entry point loads what the real one names
    (twice,) = [ep for ep, dist, _, _ in second.found() if dist == "plait-twice"]
    assert twice.load().Strategy().merge([1], ["a"]) == [1]


def test_an_install_or_a_removal_is_seen_at_once(
    remembered: Path, sites: tuple[Path, Path]
) -> None:
    first = loading.InstalledPlugins("0.1.0", str(remembered))
    first.found()
    first.save()
    install(sites[1], "plait-future", requires="plait-core>=99")  # changes the directory
    after = loading.InstalledPlugins("0.1.0", str(remembered))
    assert "plait-future" in {dist for _, _, dist, _, _ in described(after.found())}
    # the new state is not remembered while the directory may still change
    after.save()
    assert json.loads(remembered.read_text())["states"][0]["state"] == first.state
    for path in sorted(sites[0].rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else os.unlink(path)
    gone = loading.InstalledPlugins("0.1.0", str(remembered))
    assert "plait-twice" not in {dist for _, _, dist, _, _ in described(gone.found())}


@pytest.mark.parametrize(
    "content",
    [
        b"\x00not json",
        b'{"format": 1, "states": {}}',
        b'{"format": 99, "states": []}',
        b"[" * 100_000,
        b" " * (2 << 20),
    ],
    ids=["garbage", "wrong-shape", "another-format", "deep", "oversized"],
)
def test_a_damaged_cache_is_ignored_and_replaced(remembered: Path, content: bytes) -> None:
    remembered.write_bytes(content)
    again = loading.InstalledPlugins("0.1.0", str(remembered))
    assert described(again.found()) == described(
        [(ep, d, v, r) for ep, d, v, r in loading.iter_entry_points(None)]
    )
    again.save()
    assert json.loads(remembered.read_text())["format"] == 1


def test_a_cached_record_of_the_wrong_types_is_not_used(
    remembered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = loading.InstalledPlugins("0.1.0", str(remembered))
    first.found()
    first.save()
    document = json.loads(remembered.read_text())
    document["states"][0]["found"][0][4] = [1, 2]  # requirements that are not strings
    remembered.write_text(json.dumps(document))
    asked: list[object] = []
    real = loading.iter_entry_points
    monkeypatch.setattr(loading, "iter_entry_points", lambda eps: asked.append(eps) or real(eps))
    loading.InstalledPlugins("0.1.0", str(remembered)).found()
    assert asked == [None]


@pytest.fixture
def kept(remembered: Path, sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """``remembered`` as the file every ``PluginManager()`` reads and writes, with the
    module of ``plait-twice`` settled (a file changed in the last two seconds is not)."""
    monkeypatch.setattr(loading, "_cache_path", lambda: str(remembered))
    (sites[0] / "__pycache__").mkdir()  # (Python writing the module's bytecode changes none)
    settle(sites[0] / "plait_twice.py", sites[0] / "__pycache__", sites[0])
    return sites[0] / "plait_twice.py"


def registered_by_twice(manager: PluginManager) -> tuple[str, dict[str, list[str]]]:
    (info,) = [i for i in manager.describe() if i.distribution == "plait-twice"]
    return info.status, info.registered


def test_a_plugin_imported_once_is_registered_from_its_manifest_and_imported_on_first_use(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = PluginManager(disabled=())
    assert first.registry("merge_strategy").get("shortest").merge([1], ["a"]) == [1]
    del sys.modules["plait_twice"]

    def parse(text: str) -> None:
        raise AssertionError(f"{text!r} was parsed")

    # its plait-core requirement held when its manifest was written, for this kernel
    monkeypatch.setattr(loading, "_requirement", parse)
    second = PluginManager(disabled=())
    assert registered_by_twice(second) == ("loaded", {"merge_strategy": ["shortest"]})
    assert "shortest" in second.registry("merge_strategy").names()
    assert "plait_twice" not in sys.modules
    strategy = second.registry("merge_strategy").get("shortest")
    assert strategy.merge([1], ["a"]) == [1] and "plait_twice" in sys.modules
    assert second.get_plugin("twice") is sys.modules["plait_twice"]


def test_an_edited_plugin_is_imported_again_not_served_from_its_manifest(kept: Path) -> None:
    PluginManager(disabled=()).load_entrypoints()
    del sys.modules["plait_twice"]
    # as long as the old module (the same size), only its modification time differs
    kept.write_text(PLUGIN_MODULE.format(strategy="longests"), encoding="utf-8")
    past = int(__import__("time").time()) - 120
    os.utime(kept, (past, past))
    assert registered_by_twice(PluginManager(disabled=())) == (
        "loaded",
        {"merge_strategy": ["longests"]},
    )
    del sys.modules["plait_twice"]
    kept.write_text("raise ImportError('half written')\n", encoding="utf-8")
    with pytest.raises(PluginLoadErrors) as info:
        PluginManager(disabled=()).load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.phase) == ("plait-twice", "import")
    assert "half written" in str(error)


WRAPPER = """

@plait.hookimpl(wrapper=True)
def plait_install_hint(distribution):
    found = yield
    return f"{found} (wrapped)" if found else "wrapped"
"""


def test_a_hook_wrapper_registered_from_a_manifest_wraps_as_the_module_s_own(
    kept: Path,
) -> None:
    kept.write_text(PLUGIN_MODULE.format(strategy="shortest") + WRAPPER, encoding="utf-8")
    settle(kept)
    first = PluginManager(disabled=())
    first.load_entrypoints()
    eager = first.how_to_install("plait-nowhere")
    assert eager.endswith("wrapped")
    del sys.modules["plait_twice"]
    manager = PluginManager(disabled=())
    manager.load_entrypoints()
    assert "plait_twice" not in sys.modules
    assert manager.how_to_install("plait-nowhere") == eager
    assert "plait_twice" in sys.modules


def test_a_manifest_is_kept_once_however_many_states_use_it(
    kept: Path, remembered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    PluginManager(disabled=()).load_entrypoints()
    other = tmp_path / "other"  # another sys.path: a second state, the same plugins
    other.mkdir()
    settle(other, tmp_path)
    monkeypatch.syspath_prepend(str(other))
    del sys.modules["plait_twice"]
    PluginManager(disabled=()).load_entrypoints()
    document = json.loads(remembered.read_text())
    first, second = document["states"]
    assert first["plugins"] == second["plugins"] and "twice" in first["plugins"]
    assert len(document["manifests"]) == len(set(first["plugins"].values()))


def test_a_name_its_module_no_longer_registers_fails_when_it_is_looked_up(
    kept: Path, remembered: Path
) -> None:
    PluginManager(disabled=()).load_entrypoints()
    del sys.modules["plait_twice"]
    document = json.loads(remembered.read_text())
    manifest = document["manifests"][document["states"][0]["plugins"]["twice"]]
    manifest["registered"]["plait_register_merge_strategies"][0][0] = "forgotten"
    remembered.write_text(json.dumps(document))
    manager = PluginManager(disabled=())
    assert registered_by_twice(manager) == ("loaded", {"merge_strategy": ["forgotten"]})
    with pytest.raises(PluginLoadError) as info:
        manager.registry("merge_strategy").get("forgotten")
    assert (info.value.distribution, info.value.phase) == ("plait-twice", "validate")
    assert "no longer registers merge_strategy 'forgotten'" in str(info.value)
    assert registered_by_twice(manager)[0] == "failed"


def test_a_second_process_loads_the_plugins_without_importlib_metadata_or_packaging(
    tmp_path: Path,
) -> None:
    """End to end, as two ``plait`` commands: the first writes the file beside the kernel's
    bytecode, the second finds every plugin without importing what discovery needs. (Tried
    three times: another test's process may change a ``sys.path`` directory meanwhile, and
    a state changed in the last two seconds is not remembered.)"""
    import subprocess
    import time

    settle(tmp_path)
    script = (
        "import sys, plait; pm = plait.get_plugin_manager(); "
        "print(len(pm.describe()), 'importlib.metadata' in sys.modules, "
        "'packaging' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for attempt in range(3):
        time.sleep(2.1 * attempt)
        runs = [
            subprocess.run(
                [sys.executable, "-c", script],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            for _ in range(2)
        ]
        first, second = [run.stdout.split() for run in runs]
        assert second[0] == first[0] and int(second[0]) > 20
        if second[1:] == ["False", "False"]:
            break
    assert first[1:] == ["True", "True"] or attempt > 0  # the first one asked
    assert second[1:] == ["False", "False"], runs


def test_a_manifest_whose_argument_names_are_not_names_is_not_used(
    kept: Path, remembered: Path, tmp_path: Path
) -> None:
    """A stub's code is made from its manifest's argument names: text that is not a plain
    name (code, here) makes the manifest unused, and the module is imported as before."""
    PluginManager(disabled=()).load_entrypoints()
    del sys.modules["plait_twice"]
    document = json.loads(remembered.read_text())
    manifest = document["manifests"][document["states"][0]["plugins"]["twice"]]
    assert manifest["hooks"], manifest
    marker = tmp_path / "ran"
    manifest["hooks"][0][2] = [f"register=open({str(marker)!r}, 'w')"]
    remembered.write_text(json.dumps(document))
    manager = PluginManager(disabled=())
    manager.load_entrypoints()
    assert "plait_twice" in sys.modules  # imported, not served from the manifest
    assert registered_by_twice(manager) == ("loaded", {"merge_strategy": ["shortest"]})
    assert not marker.exists()


OPTIONS = """

import attrs

@attrs.define
class Knobs:
    knob: int = 0

@plait.hookimpl
def plait_register_run_options(register):
    register("knobs", Knobs)
"""


def test_a_run_option_group_from_a_manifest_is_imported_when_one_of_its_options_is_set(
    kept: Path,
) -> None:
    """Which group declares an option is in its plugin's manifest: a run that sets none
    of its options never imports it, one that does gets its class, and an unknown option
    still lists every option there is."""
    from plait._options import RunOptions

    kept.write_text(PLUGIN_MODULE.format(strategy="shortest") + OPTIONS, encoding="utf-8")
    settle(kept)
    eager = PluginManager(disabled=()).run_options()
    assert eager["knob"].distribution == "plait-twice"
    del sys.modules["plait_twice"]
    manager = PluginManager(disabled=())
    table = manager.run_options()
    assert "knob" in table and "checkpoint" in table and "plait_twice" not in sys.modules
    RunOptions.from_kwargs({}, {"checkpoint": "memory://knobs"}, manager)
    assert "plait_twice" not in sys.modules  # another plugin's option
    options = RunOptions.from_kwargs({}, {"knob": 3}, manager)
    assert options.value("knob") == 3 and options.of(table["knob"].group).knob == 3
    assert table["knob"].group is sys.modules["plait_twice"].Knobs
    del sys.modules["plait_twice"]
    with pytest.raises(
        plait.RunOptionError, match=r"knobb \(did you mean knob\?\).*plait-twice: knob"
    ):
        RunOptions.from_kwargs({}, {"knobb": 1}, PluginManager(disabled=()))


OBSERVER = """

from plait.spi import RunObserver, observes_when

class Seen(RunObserver):
    pass

@observes_when(options=("knob",), sections=("knobs",), modules=("plait_twice_tracing",))
@plait.hookimpl
def plait_observe_run(run_id, resumed, options):
    return Seen()
"""


def test_an_observer_that_says_which_runs_it_observes_is_not_imported_for_others(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``plait_observe_run`` implementation declared with ``observes_when``, registered
    from its manifest: a run that sets none of its options, resumes nothing it kept and
    runs where none of its modules is imported neither imports its plugin nor is
    observed by it; a run that does any of these imports it and is observed."""
    from plait._options import RunOptions

    kept.write_text(PLUGIN_MODULE.format(strategy="shortest") + OPTIONS + OBSERVER, "utf-8")
    settle(kept)
    PluginManager(disabled=()).load_entrypoints()
    del sys.modules["plait_twice"]

    def observers(manager: PluginManager, **arguments: Any) -> list[str]:
        found = manager.observe_run("r1", None, 0, **arguments)
        group = getattr(found, "observers", (found,))
        return [type(observer).__name__ for observer in group if observer is not None]

    manager = PluginManager(disabled=())
    plain = RunOptions.from_kwargs({}, {"checkpoint": "memory://knobs"}, manager)
    assert "Seen" not in observers(manager, options=plain)
    assert "Seen" not in observers(manager, resumed={"other": {}}, options=plain)
    assert "plait_twice" not in sys.modules
    knob = RunOptions.from_kwargs({}, {"knob": 1}, manager)
    assert "Seen" in observers(manager, options=knob) and "plait_twice" in sys.modules
    assert "Seen" in observers(manager, options=plain)  # imported: asked for every run
    for arguments in ({"resumed": {"knobs": {}}}, {}):
        del sys.modules["plait_twice"]
        if not arguments:  # one of its modules is imported
            monkeypatch.setitem(sys.modules, "plait_twice_tracing", types.ModuleType("t"))
        again = PluginManager(disabled=())
        again.load_entrypoints()
        assert "Seen" in observers(again, options=plain, **arguments)
