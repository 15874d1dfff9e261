"""The version of this distribution, read from its installed metadata when first asked for
(``plait_cli.__version__``, ``plait --version``)."""

from __future__ import annotations

__all__ = ["cli_version"]


def cli_version() -> str:
    """The installed version of ``plait-cli`` (``"0.0.0"`` in a source checkout that is not
    installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("plait-cli")
    except PackageNotFoundError:  # pragma: no cover - a source checkout
        return "0.0.0"
