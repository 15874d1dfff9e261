"""Finding installed plugins: real ``*.dist-info`` directories on ``sys.path``, read through
importlib.metadata, nothing kept between processes; and the kernel's version is a constant
that matches the installed distribution."""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path

import plait
import pytest
from plait import PluginLoadErrors, _plugins as loading, _version
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


def test_loading_plugins_writes_no_cache_and_reads_none(
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
