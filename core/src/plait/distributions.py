"""What the plugin loader reads of an installed distribution: its name, version and
``Requires-Dist`` requirements, and the :mod:`importlib.metadata` to ask when it must.

.. versionadded:: 0.1
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["describe_distribution", "metadata_module"]


def metadata_module() -> Any:
    """:mod:`importlib.metadata` on 3.12+, the backport (same entry-point API) before;
    imported on first use: ``import plait`` alone never scans distributions."""
    if sys.version_info >= (3, 12):
        from importlib import metadata
    else:  # pragma: no cover - depends on the interpreter
        import importlib_metadata as metadata
    return metadata


#: The METADATA headers the loader needs, lower-cased (header names are case-insensitive).
_WANTED = ("name", "version", "requires-dist")


def describe_distribution(dist: Any) -> tuple[str, str, list[str]]:
    """A distribution's name, version and ``Requires-Dist`` requirements.

    Read with one pass over the header lines of its ``METADATA`` file: the email parser
    that ``dist.metadata`` uses costs a fresh process more than loading every plugin, and
    it is paid again for each of ``metadata``, ``version`` and ``requires``. Anything the
    scan cannot read with certainty (no ``METADATA`` file, a folded header, a missing
    field) is left to the distribution's own API.
    """
    scanned = _scan_metadata(dist)
    if scanned is not None:
        return scanned
    requires = dist.requires
    return dist.metadata["Name"], dist.version, list(requires or [])


def _scan_metadata(dist: Any) -> tuple[str, str, list[str]] | None:
    read_text = getattr(dist, "read_text", None)
    if not callable(read_text):
        return None
    try:
        text = read_text("METADATA")
    except (OSError, UnicodeDecodeError):
        return None
    if not isinstance(text, str):
        return None
    fields: dict[str, list[str]] = {name: [] for name in _WANTED}
    current: list[str] | None = None
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            break  # the headers end at the first empty line; the description follows
        if line[0] in " \t":
            if current is not None:
                return None  # a folded Name, Version or Requires-Dist: let the parser decide
            continue
        name, colon, value = line.partition(":")
        if not colon:
            return None
        current = fields.get(name.strip().lower())
        if current is not None:
            current.append(value.lstrip(" \t"))
    names, versions, requires = fields["name"], fields["version"], fields["requires-dist"]
    if len(names) != 1 or len(versions) != 1 or not requires:
        # no Requires-Dist: the distribution's API also looks at egg-info's requires.txt
        return None
    return names[0], versions[0], requires
