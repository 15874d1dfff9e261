"""The converter search alone, as a plugin: the cheapest chain of registered converters.

``plait-converters`` registers it with its standard converters (its entry point's module
re-exports this hook). Register this module by itself to install the search without the
standard converters — a test of your own converters, say:
``plait.register(plait_converters.search, "converter-search")``.

Registering it imports nothing of the search: :class:`~plait_converters.ChainSearch` (in
``_graph``) is imported when an edge first needs a conversion.

.. versionadded:: 0.1
"""

from __future__ import annotations

import plait
from plait.spi import Register, lazy

__all__ = ["plait_register_converter_search"]


@plait.hookimpl
def plait_register_converter_search(register: Register) -> None:
    """Register the cheapest-chain search as ``"chains"``."""
    register(
        "chains", lazy("plait_converters._graph:ChainSearch", provides=("find_chain", "nearest"))
    )
