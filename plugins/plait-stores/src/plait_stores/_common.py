"""What the memory, file and SQLite stores share beyond :mod:`plait.stores`: URL options."""

from __future__ import annotations

from urllib.parse import parse_qsl

__all__ = ["split_query"]


def split_query(url: str, *, allowed: frozenset[str]) -> tuple[str, dict[str, str]]:
    """Split ``url`` into the part before ``?`` and its query options.

    :raises ValueError: an option not in ``allowed``, naming the ones that are.
    """
    head, _, query = url.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} in checkpoint store url {url!r}; "
            f"known options: {known}"
        )
    return head, options
