"""The entry-point cache: it answers what importlib.metadata answers, follows installs and
uninstalls, and never fails a run (issue 9, cold start)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from plait import discovery, distributions, loading
from plait.plugins import PluginManager

OLD = time.time() - 3600  # older than the racy window: a record of it is cached


def make_dist(
    root: Path,
    name: str = "plait-fake",
    version: str = "1.0",
    entry_points: str = "fake = plait_fake_mod",
    *,
    mtime: float = OLD,
) -> Path:
    """A ``*.dist-info`` directory under ``root``, as an installer writes it."""
    dist = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.3\nName: {name}\nVersion: {version}\n"
        "Requires-Dist: plait-core<1,>=0.1\n\nbody\n",
        encoding="utf-8",
    )
    os.utime(dist / "METADATA", (mtime, mtime))
    if entry_points is not None:
        (dist / "entry_points.txt").write_text(f"[plait]\n{entry_points}\n", encoding="utf-8")
        os.utime(dist / "entry_points.txt", (mtime, mtime))
    os.utime(dist, (mtime, mtime))
    return dist


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv(discovery.NO_CACHE_ENV, raising=False)
    return home


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on ``sys.path`` (first), like a site-packages of its own."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def found(name: str = "fake") -> list[tuple[str, str, str, str, list[str]]]:
    return [
        (ep.name, ep.value, dist, version, requires)
        for ep, dist, version, requires in discovery.installed_entry_points("plait")
        if ep.name == name
    ]


def no_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, reading any distribution's files fails the test: the cache answers."""

    def refuse() -> Any:
        raise AssertionError("importlib.metadata was asked; the cache should have answered")

    monkeypatch.setattr(discovery, "metadata_module", refuse)


def test_a_distribution_is_read_once_then_answered_from_the_cache(
    cache_home: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_dist(site)
    expected = [("fake", "plait_fake_mod", "plait-fake", "1.0", ["plait-core<1,>=0.1"])]
    assert found() == expected
    cache = json.loads(Path(str(discovery.cache_path())).read_text(encoding="utf-8"))
    assert cache["format"] == discovery.CACHE_FORMAT
    no_metadata(monkeypatch)
    assert found() == expected


def test_install_upgrade_and_uninstall_are_seen(
    cache_home: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert found() == []
    first = make_dist(site)
    assert [f[3] for f in found()] == ["1.0"]  # installed
    first.rename(site / "gone")  # an upgrade: the old directory goes, a new one comes
    (site / "gone" / "METADATA").unlink()
    make_dist(site, version="2.0", entry_points="fake = plait_fake_mod:Plugin")
    assert [(f[1], f[3]) for f in found()] == [("plait_fake_mod:Plugin", "2.0")]
    for child in (site / "gone").iterdir():
        child.unlink()
    (site / "gone").rmdir()
    for dist in site.glob("*.dist-info"):  # uninstalled, with its record still cached
        for child in dist.iterdir():
            child.unlink()
        dist.rmdir()
    no_metadata(monkeypatch)
    assert found() == []


def test_entry_points_txt_edited_in_place_is_read_again(cache_home: Path, site: Path) -> None:
    dist = make_dist(site)
    assert [f[1] for f in found()] == ["plait_fake_mod"]
    text = dist / "entry_points.txt"
    text.write_text("[plait]\nfake = plait_fake_mod:other\n", encoding="utf-8")
    os.utime(text, (OLD + 5, OLD + 5))
    os.utime(dist, (OLD, OLD))  # an edit in place leaves the directory's time alone
    assert [f[1] for f in found()] == ["plait_fake_mod:other"]


def test_a_version_edited_in_place_is_read_again(cache_home: Path, site: Path) -> None:
    dist = make_dist(site)
    assert [f[3] for f in found()] == ["1.0"]
    metadata = dist / "METADATA"
    metadata.write_text(metadata.read_text("utf-8").replace("1.0", "1.0.1"), "utf-8")
    os.utime(metadata, (OLD + 5, OLD + 5))
    os.utime(dist, (OLD, OLD))
    assert [f[3] for f in found()] == ["1.0.1"]


def test_a_just_changed_distribution_is_not_cached_yet(cache_home: Path, site: Path) -> None:
    make_dist(site, mtime=time.time())  # could change again within the clock's resolution
    assert len(found()) == 1
    cache = json.loads(Path(str(discovery.cache_path())).read_text(encoding="utf-8"))
    assert not [p for p in cache["dists"] if p.startswith(str(site))]


def test_the_first_distribution_of_a_name_on_sys_path_wins(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    make_dist(first, version="1.0")
    make_dist(second, version="2.0", entry_points="fake = elsewhere\nextra = elsewhere")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    assert [(f[0], f[3]) for f in found()] == [("fake", "1.0")]
    assert found("extra") == []


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\xff not json",
        b"[1, 2]",
        b'{"format": 1, "group": "plait", "dists": []}',
        b'{"format": 999, "group": "plait", "dists": {}}',
    ],
)
def test_a_corrupt_cache_file_is_read_again(cache_home: Path, site: Path, content: bytes) -> None:
    make_dist(site)
    path = Path(str(discovery.cache_path()))
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert [f[2] for f in found()] == ["plait-fake"]
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == discovery.CACHE_FORMAT


def test_a_forged_record_is_read_again(cache_home: Path, site: Path) -> None:
    dist = make_dist(site)
    found()
    path = Path(str(discovery.cache_path()))
    data = json.loads(path.read_text(encoding="utf-8"))
    record = data["dists"][str(dist)]
    record["eps"] = [["fake", "os:system; rm -rf"]]  # not an entry-point value
    path.write_text(json.dumps(data), encoding="utf-8")
    assert [f[1] for f in found()] == ["plait_fake_mod"]
    data["dists"][str(dist)] = {**record, "eps": [["fake", "other_mod"]], "stamp": [1, 2]}
    path.write_text(json.dumps(data), encoding="utf-8")  # a stamp that is not the directory's
    assert [f[1] for f in found()] == ["plait_fake_mod"]


def test_a_cache_directory_that_cannot_be_written_is_left_alone(
    tmp_path: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("", encoding="utf-8")  # makedirs under a file fails, even for root
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.delenv(discovery.NO_CACHE_ENV, raising=False)
    make_dist(site)
    assert [f[2] for f in found()] == ["plait-fake"]
    assert [f[2] for f in found()] == ["plait-fake"]


def test_a_write_removes_the_files_of_environments_that_are_gone(
    cache_home: Path, site: Path, tmp_path: Path
) -> None:
    folder = cache_home / "plait"
    folder.mkdir(parents=True)
    alive, gone = tmp_path / "alive-venv", tmp_path / "gone-venv"
    alive.mkdir()
    for name, prefix in (("alive", alive), ("gone", gone)):
        data = {"format": discovery.CACHE_FORMAT, "prefix": str(prefix), "dists": {}}
        (folder / f"entry-points-{name}.json").write_text(json.dumps(data), "utf-8")
    (folder / "entry-points-damaged.json").write_text("{", "utf-8")
    stale = folder / "entry-points-x.json.123.tmp"
    stale.write_text("", "utf-8")
    os.utime(stale, (OLD, OLD))
    (folder / "unrelated.txt").write_text("", "utf-8")
    make_dist(site)  # a new distribution: this run writes
    found()
    left = sorted(p.name for p in folder.iterdir())
    ours = Path(str(discovery.cache_path())).name
    assert left == sorted([ours, "entry-points-alive.json", "unrelated.txt"])


def test_plait_no_cache_turns_it_off(
    cache_home: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(discovery.NO_CACHE_ENV, "1")
    make_dist(site)
    assert discovery.cache_path() is None
    assert [f[2] for f in found()] == ["plait-fake"]
    assert not (cache_home / "plait").exists()


def _metadata_answer() -> list[tuple[str, str, str, str, list[str]]]:
    answer = []
    for ep in distributions.metadata_module().entry_points(group="plait"):
        name, version, requires = distributions.describe_distribution(ep.dist)
        answer.append((ep.name, ep.value, name, version, requires))
    return sorted(answer)


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_the_installed_plugins_are_what_importlib_metadata_says(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    monkeypatch.setenv(discovery.NO_CACHE_ENV, "" if cached else "1")
    for _ in range(2):  # reading the files, then from the cache
        ours = sorted(
            (ep.name, ep.value, dist, version, requires)
            for ep, dist, version, requires in discovery.installed_entry_points("plait")
        )
        assert ours == _metadata_answer()
        assert {"builders", "routing"} <= {name for name, *_ in ours}


def test_a_finder_of_its_own_on_sys_meta_path_makes_it_ask_importlib_metadata(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        @staticmethod
        def find_distributions(context: Any = None) -> list[Any]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert not discovery._mirrorable()
    assert sorted(f[0] for f in found("builders")) == ["builders"]
    assert not (cache_home / "plait").exists()


def test_a_zip_file_on_sys_path_makes_it_ask_importlib_metadata(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "plugins.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip archive
    monkeypatch.syspath_prepend(str(archive))
    assert [f[0] for f in found("builders")] == ["builders"]
    assert not (cache_home / "plait").exists()


def test_an_entry_point_loads_a_module_or_an_attribute(site: Path) -> None:
    (site / "plait_fake_mod.py").write_text("class Plugin:\n    class Inner: ...\n", "utf-8")
    module = discovery.InstalledEntryPoint("fake", "plait_fake_mod", "plait").load()
    assert module.__name__ == "plait_fake_mod"
    inner = discovery.InstalledEntryPoint("fake", "plait_fake_mod:Plugin.Inner [x]", "plait")
    assert inner.load() is module.Plugin.Inner
    with pytest.raises(ValueError, match="invalid value"):
        discovery.InstalledEntryPoint("fake", "not a value!", "plait").load()


def test_the_plugin_manager_attributes_a_cached_plugin_to_its_distribution(
    cache_home: Path, site: Path
) -> None:
    (site / "plait_fake_mod.py").write_text("", "utf-8")
    make_dist(site, name="plait-fake", version="3.1")
    for _ in range(2):
        manager = PluginManager()
        manager.load_entrypoints(strict=False)
        (info,) = [i for i in manager.describe() if i.name == "fake"]
        assert (info.distribution, info.version, info.status) == ("plait-fake", "3.1", "loaded")
        assert info.entry_point == "fake = plait_fake_mod"
    sys.modules.pop("plait_fake_mod", None)


def test_iter_entry_points_still_describes_given_entry_points() -> None:
    class Dist:
        def read_text(self, filename: str) -> str:
            return "Name: plait-given\nVersion: 0.5\nRequires-Dist: plait-core>=0.1\n"

    class EntryPoint:
        name, value, dist = "given", "given_mod", Dist()

        def load(self) -> Any:
            return None

    ((ep, dist, version, requires),) = loading.iter_entry_points([EntryPoint()])
    assert (ep.name, dist, version, requires) == (
        "given",
        "plait-given",
        "0.5",
        ["plait-core>=0.1"],
    )
