"""The version of ``plait-cli`` (``plait_cli.__version__``), as a constant: ``plait``
reads no distribution metadata for it, as ``import plait`` reads none for the kernel's.

A test checks that it equals the version the installer recorded (``pyproject.toml``).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
