"""The kernel's version, as a constant: reading it from the installed distribution's
metadata costs a fresh process more than everything else plugin loading does.

A test checks that it equals the version ``pip`` installed (``core/pyproject.toml``).
"""

__version__ = "0.1.0"
