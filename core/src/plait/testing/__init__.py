"""``plait.testing``: a pytest plugin for people who write Plait plugins.

It is registered through the ``pytest11`` entry point, so installing ``plait-core`` makes
its fixtures available in every test session:

``anyio_backend``
    Parametrised over ``asyncio`` and ``trio``: every ``@pytest.mark.anyio`` test runs on
    both. Override it in a ``conftest.py`` for asyncio-only client libraries.

``plait_plugin_manager``
    A fresh :class:`~plait.plugins.PluginManager` that loads no installed plugin, installed
    as the process-wide manager for the duration of the test.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plait.plugins import PluginManager, set_plugin_manager

__all__ = ["anyio_backend", "plait_plugin_manager"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each anyio test on asyncio and on trio."""
    backend: str = request.param
    return backend


@pytest.fixture
def plait_plugin_manager() -> Iterator[PluginManager]:
    """A plugin manager with no installed plugins, process-wide for this test."""
    manager = PluginManager(entry_points=[], disabled=[])
    previous = set_plugin_manager(manager)
    try:
        yield manager
    finally:
        set_plugin_manager(previous)
