"""The version of ``plait-cli``, read from its metadata (``plait_cli.__version__``, imported
on first use: importlib.metadata is not cheap to import)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("plait-cli")
except PackageNotFoundError:  # pragma: no cover - a source checkout
    __version__ = "0.0.0"
