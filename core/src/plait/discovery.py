"""Finding the installed entry points of group ``plait``, with a cache across processes.

Asking :mod:`importlib.metadata` costs a fresh process more than everything else plugin
loading does (the backport's import alone, then a parse of every distribution's
``entry_points.txt``). What it reads changes only when something is installed or removed,
so this module lists the ``*.dist-info`` and ``*.egg-info`` directories on ``sys.path``
itself — the same directories, in the same order, with the same rule for a distribution
found twice (the first one wins) — and keeps, per distribution directory, what it found:
the ``plait`` entry points, and the name, version and requirements of a distribution that
has any. A record is used only while the directory and the files it was read from
(``entry_points.txt``, and ``METADATA`` for a distribution with plugins) still have the
modification time, inode and size they had; an install, an upgrade, an uninstall or an
editable re-install all change them. The cache never names a distribution that is not on
``sys.path`` now: it only saves reading the files.

The cache is one JSON file per Python environment (``sys.prefix``, so processes of two
virtual environments never write over each other's records),
``$XDG_CACHE_HOME/plait/entry-points-<hash>.json`` (``~/.cache`` when the variable is
unset; ``%LOCALAPPDATA%`` on Windows), written atomically. A missing,
unreadable or corrupt file is read again from the distributions; a cache directory that
cannot be written is left alone. ``PLAIT_NO_CACHE=1`` turns it off, and anything it
cannot mirror exactly (a zip file or an ``.egg`` on ``sys.path``, a finder on
``sys.meta_path`` that reports distributions of its own) makes it ask
:mod:`importlib.metadata` as before.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Iterable
from typing import Any, TypeGuard

from .distributions import describe_distribution, metadata_module

__all__ = [
    "CACHE_FORMAT",
    "NO_CACHE_ENV",
    "InstalledEntryPoint",
    "cache_path",
    "installed_entry_points",
]

NO_CACHE_ENV = "PLAIT_NO_CACHE"
#: Changes when the file's layout does; a file of another format is ignored.
CACHE_FORMAT = 2
#: A directory changed this recently may change again within the clock's resolution
#: without its modification time moving (git's "racy" timestamps): not cached yet.
_RACY_SECONDS = 2.0
_SUFFIXES = (".dist-info", ".egg-info")
#: The files of a distribution directory whose changes a record follows.
_WATCHED = frozenset({"entry_points.txt", "METADATA", "PKG-INFO"})

#: ``(entry point, distribution, version, requirements)``
Found = tuple["InstalledEntryPoint", str, str, list[str]]


class InstalledEntryPoint:
    """An entry point of an installed distribution: ``name = value`` of ``group``.

    :meth:`load` imports it as :meth:`importlib.metadata.EntryPoint.load` does.
    """

    __slots__ = ("group", "name", "value")

    def __init__(self, name: str, value: str, group: str) -> None:
        self.name = name
        self.value = value
        self.group = group

    def load(self) -> Any:
        """The module, or the object ``module:attr.attr`` names (importing the module)."""
        parsed = _parse_value(self.value)
        if parsed is None:
            raise ValueError(f"entry point {self.name!r} has an invalid value {self.value!r}")
        obj: Any = importlib.import_module(parsed[0])
        for attr in parsed[1]:
            obj = getattr(obj, attr)
        return obj

    def __repr__(self) -> str:
        return f"<InstalledEntryPoint {self.name} = {self.value} ({self.group})>"


def cache_path() -> str | None:
    """Where the cache lives, or ``None`` when it is turned off (``PLAIT_NO_CACHE``)."""
    if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not base and sys.platform == "win32":  # pragma: no cover - platform
        base = os.environ.get("LOCALAPPDATA") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative path is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "plait", f"entry-points-{_fnv1a(sys.prefix)}.json")


def _fnv1a(text: str) -> str:
    """A stable 32-bit digest of ``text`` (FNV-1a): names a file, guards nothing."""
    digest = 0x811C9DC5
    for byte in text.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{digest:08x}"


def installed_entry_points(group: str) -> list[Found]:
    """Every entry point of ``group`` on ``sys.path``, with its distribution's name, version
    and requirements, in ``sys.path`` order; a distribution found again further along
    ``sys.path`` is skipped, as :func:`importlib.metadata.entry_points` skips it."""
    path = cache_path()
    if path is None or not _mirrorable():
        return _from_metadata(group)
    cache = _Cache(path, group)
    found = cache.scan(sys.path)
    if found is None:  # something on sys.path only importlib.metadata can read
        return _from_metadata(group)
    cache.save()
    return found


def _mirrorable() -> bool:
    """Does ``importlib.metadata`` find distributions only through ``sys.path`` directories?"""
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is None:
            continue
        module = getattr(finder, "__module__", "") or ""
        if getattr(finder, "__name__", "") == "PathFinder" and module in (
            "importlib._bootstrap_external",
            "_frozen_importlib_external",
        ):
            continue
        if module.startswith("importlib_metadata"):  # the backport's own path finder
            continue
        return False
    return True


def _from_metadata(group: str) -> list[Found]:
    found: list[Found] = []
    described: dict[int, tuple[str, str, list[str]]] = {}  # by id(dist); eps keep them alive
    for ep in metadata_module().entry_points(group=group):
        dist = getattr(ep, "dist", None)
        about: tuple[str, str, list[str]] = ("(unknown)", "?", [])
        if dist is not None:
            if id(dist) not in described:
                described[id(dist)] = describe_distribution(dist)
            about = described[id(dist)]
        found.append((InstalledEntryPoint(ep.name, ep.value, group), *about))
    return found


def _parse_value(value: str) -> tuple[str, list[str]] | None:
    """``module[:attr.attr] [extras]`` (the packaging specification's entry-point value) as
    ``(module, [attr, attr])``, or ``None`` when it is not one; string operations, not a
    regular expression, whose compiling would cost a cold start more than the parse."""
    text = value.split("[", 1)[0] if value.rstrip().endswith("]") else value
    module, colon, attrs = (part.strip() for part in text.partition(":"))
    names = attrs.split(".") if colon else []
    if not all(p.isidentifier() for p in [*module.split("."), *names]):
        return None
    return module, names


def _normalize(stem_name: str) -> str:
    """The name importlib.metadata tells distributions apart by (runs of ``-_.`` as ``_``)."""
    key = stem_name.lower().replace("-", "_").replace(".", "_")
    while "__" in key:
        key = key.replace("__", "_")
    return key


class _Cache:
    """The records of one cache file, checked against the directories on ``sys.path``."""

    def __init__(self, path: str, group: str) -> None:
        self.path = path
        self.group = group
        self.records = self._read()
        self.changed = False

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, ValueError):  # missing, unreadable or not JSON: read it all again
            return {}
        if (
            not isinstance(data, dict)
            or data.get("format") != CACHE_FORMAT
            or data.get("group") != self.group
            or not isinstance(data.get("dists"), dict)
        ):
            return {}
        dists: dict[str, Any] = data["dists"]
        return dists

    def scan(self, entries: Iterable[Any]) -> list[Found] | None:
        """What every distribution on ``entries`` provides, or ``None`` when one entry is not
        a plain directory (a zip file, an ``.egg``)."""
        seen: set[str] = set()
        found: list[Found] = []
        for entry in entries:
            if not isinstance(entry, str) or entry.lower().endswith(".egg"):
                return None
            root = os.path.abspath(entry or ".")
            try:
                names = [n for n in os.listdir(root) if n.lower().endswith(_SUFFIXES)]
            except (FileNotFoundError, PermissionError):
                continue  # importlib.metadata finds nothing there either
            except OSError:  # a zip file, or something stranger
                return None
            for name in names:
                if not name.endswith(_SUFFIXES):  # ".DIST-INFO": named from its metadata
                    return None
                key = _normalize(name.rpartition(".")[0].partition("-")[0])
                if key in seen:  # the first distribution of a name on sys.path wins
                    continue
                seen.add(key)
                record = self._record(os.path.join(root, name))
                if record is None:
                    continue
                dist, version, requires = record["name"], record["version"], record["requires"]
                for ep_name, value in record["eps"]:
                    ep = InstalledEntryPoint(ep_name, value, self.group)
                    found.append((ep, dist, version, list(requires)))
        return found

    def _record(self, dist_path: str) -> dict[str, Any] | None:
        """The cached record of a distribution directory, read again when it changed;
        ``None`` when the directory is gone."""
        try:
            st = os.stat(dist_path)
        except OSError:
            return None
        stamp = [st.st_mtime_ns, st.st_ino]
        cached = self.records.get(dist_path)
        if _valid(cached) and cached["stamp"] == stamp:
            # a file that was missing and is created changes the directory's stamp; one
            # rewritten in place changes its own
            files = cached["files"].items()
            if all(known is None or known == _file_stamp(dist_path, f) for f, known in files):
                return cached
        self.changed = True
        record = self._describe(dist_path)
        if record is None:
            self.records.pop(dist_path, None)
            return None
        record["stamp"] = stamp
        newest = max([stamp[0]] + [k[0] for k in record["files"].values() if k]) / 1e9
        if time.time() - newest > _RACY_SECONDS:
            self.records[dist_path] = record
        else:  # may change again unseen within the clock's resolution: read it next time
            self.records.pop(dist_path, None)
        return record

    def _describe(self, dist_path: str) -> dict[str, Any] | None:
        import pathlib

        dist = metadata_module().PathDistribution(pathlib.Path(dist_path))
        try:
            eps = [(ep.name, ep.value) for ep in dist.entry_points.select(group=self.group)]
        except (OSError, ValueError, UnicodeDecodeError):
            return None  # importlib.metadata would fail on it too; a fresh read next time
        # the version and requirements matter only for a distribution with plugins
        watched = ("entry_points.txt", "METADATA", "PKG-INFO") if eps else ("entry_points.txt",)
        record: dict[str, Any] = {
            "eps": [list(ep) for ep in eps],
            "files": {name: _file_stamp(dist_path, name) for name in watched},
            "name": "",
            "version": "",
            "requires": [],
        }
        if eps:
            record["name"], record["version"], record["requires"] = describe_distribution(dist)
        return record

    def save(self) -> None:
        """Write the records back, when they changed; never fails the caller."""
        if not self.changed:
            return
        kept = {p: r for p, r in self.records.items() if os.path.exists(p)}
        data = {"format": CACHE_FORMAT, "group": self.group, "prefix": sys.prefix, "dists": kept}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as file:
                json.dump(data, file, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:  # a read-only or full cache directory: no cache, same answer
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return
        _prune(os.path.dirname(self.path), keep=self.path)


def _prune(folder: str, keep: str) -> None:
    """Remove the cache files of environments that are gone (a deleted virtual environment
    leaves its file behind), damaged ones, and temporary files a killed writer left. Run
    only after a write, which is rare: when something was installed or removed."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if path == keep or not name.startswith("entry-points"):
            continue
        try:
            if name.endswith(".tmp"):
                if time.time() - os.stat(path).st_mtime > 3600:
                    os.unlink(path)
                continue
            with open(path, encoding="utf-8") as file:
                prefix = json.load(file).get("prefix")
            if not (isinstance(prefix, str) and os.path.isdir(prefix)):
                os.unlink(path)
        except (ValueError, AttributeError):  # not a cache file of ours any more
            try:
                os.unlink(path)
            except OSError:
                pass
        except OSError:
            continue


def _file_stamp(dist_path: str, name: str) -> list[int] | None:
    try:
        st = os.stat(os.path.join(dist_path, name))
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ino, st.st_size]


def _valid(record: Any) -> TypeGuard[dict[str, Any]]:
    """Is a record read from the cache file well-formed (a corrupt one is read again)?"""
    if not isinstance(record, dict):
        return False
    try:
        return (
            isinstance(record["stamp"], list)
            and isinstance(record["files"], dict)
            and set(record["files"]) <= _WATCHED
            and all(k is None or isinstance(k, list) for k in record["files"].values())
            and isinstance(record["name"], str)
            and isinstance(record["version"], str)
            and all(isinstance(r, str) for r in record["requires"])
            and all(
                isinstance(n, str) and isinstance(v, str) and _parse_value(v) is not None
                for n, v in record["eps"]
            )
        )
    except (KeyError, TypeError, ValueError):
        return False
