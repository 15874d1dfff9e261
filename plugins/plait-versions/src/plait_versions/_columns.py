"""The ``version`` column of run listings (``plait runs``, ``plait ui``), through the
``plait_run_columns`` hook: each run's workflow version and a short fingerprint, and the
name and short hash of its pinned document when it was started from one, read from the
metadata of its latest checkpoint that the listing read anyway (nothing else is read).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SHORT_DIGEST", "version_cell"]

#: How many characters of the fingerprint's digest (and of a document's hash) the column
#: shows.
SHORT_DIGEST = 8

#: A document name the column shows (stored data: anything else is left out).
_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_HEX = re.compile(r"[0-9a-f]{64}")


def version_cell(info: Any) -> str:
    """``v3 1f2e3d4c orders.yaml@9870bba3``: the version the run's latest checkpoint
    records (``v?`` when the workflow declares none), the first :data:`SHORT_DIGEST`
    characters of its fingerprint and, for a run started from a workflow document, the
    document's name and short SHA-256 (its pinned document); ``-`` when the listing read
    no metadata (a run index, a sealed store). Stored data is untrusted: anything but an
    integer version, a hex digest and a plain file name is left out."""
    metadata = info.metadata
    if not isinstance(metadata, Mapping) or not metadata:
        return "-"
    version = metadata.get("version")
    shown = f"v{version}" if isinstance(version, int) and not isinstance(version, bool) else "v?"
    fingerprint = metadata.get("fingerprint")
    digest = fingerprint.get("digest") if isinstance(fingerprint, Mapping) else None
    if isinstance(digest, str) and digest[:SHORT_DIGEST].isalnum():
        shown += f" {digest[:SHORT_DIGEST]}"
    document = metadata.get("document")
    if isinstance(document, Mapping):
        name, sha256 = document.get("name"), document.get("sha256")
        if isinstance(name, str) and isinstance(sha256, str) and _HEX.fullmatch(sha256):
            shown_name = name if _NAME.fullmatch(name) else "document"
            shown += f" {shown_name}@{sha256[:SHORT_DIGEST]}"
    return shown
