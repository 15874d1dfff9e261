"""The ``version`` column of run listings (``plait runs``, ``plait ui``), through the
``plait_run_columns`` hook: each run's workflow version and a short fingerprint, read from
the metadata of its latest checkpoint that the listing read anyway (nothing else is read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SHORT_DIGEST", "version_cell"]

#: How many characters of the fingerprint's digest the column shows.
SHORT_DIGEST = 8


def version_cell(info: Any) -> str:
    """``v3 1f2e3d4c``: the version the run's latest checkpoint records (``v?`` when the
    workflow declares none) and the first :data:`SHORT_DIGEST` characters of its
    fingerprint; ``-`` when the listing read no metadata (a run index, a sealed store).
    Stored data is untrusted: anything but an integer version and a hex digest is left
    out."""
    metadata = info.metadata
    if not isinstance(metadata, Mapping) or not metadata:
        return "-"
    version = metadata.get("version")
    shown = f"v{version}" if isinstance(version, int) and not isinstance(version, bool) else "v?"
    fingerprint = metadata.get("fingerprint")
    digest = fingerprint.get("digest") if isinstance(fingerprint, Mapping) else None
    if isinstance(digest, str) and digest[:SHORT_DIGEST].isalnum():
        shown += f" {digest[:SHORT_DIGEST]}"
    return shown
