"""The kernel's version, as a constant: ``import plait`` reads no distribution metadata
(:mod:`importlib.metadata` is imported only when plugins are first loaded).

A test checks that it equals the version ``pip`` installed (``core/pyproject.toml``).
"""

__version__ = "0.1.0"
