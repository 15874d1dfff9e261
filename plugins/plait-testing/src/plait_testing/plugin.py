"""The pytest plugin of ``plait-testing`` (entry point ``pytest11``, name ``plait``).

Only fixtures prefixed ``plait_``, none of them autouse, no hook that changes collection or
reporting: a project that never asks for these fixtures runs exactly as without
``plait-testing`` installed. Disable it with ``-p no:plait``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

# pytest loads this module in every session of an environment that has plait-testing:
# the kernel is imported only when a test asks for a fixture, so nobody else pays for it
if TYPE_CHECKING:
    from plait.spi import PluginManager

    from .recorder import HookRecorder

__all__ = ["RegisterPlugin", "plait_hook_recorder", "plait_plugin_manager", "plait_register_plugin"]

#: The type of the ``plait_register_plugin`` fixture's value.
RegisterPlugin = Callable[..., str]


@pytest.fixture
def plait_plugin_manager() -> Iterator[PluginManager]:
    """A plugin manager with no installed plugins, process-wide for this test."""
    from plait.spi import PluginManager, set_plugin_manager

    manager = PluginManager(entry_points=[], disabled=[])
    previous = set_plugin_manager(manager)
    try:
        yield manager
    finally:
        set_plugin_manager(previous)


@pytest.fixture
def plait_register_plugin(request: pytest.FixtureRequest) -> Iterator[RegisterPlugin]:
    """``plait_register_plugin(obj, name=None, *, distribution=None)``: register for this test.

    The plugin goes on the process-wide manager current at the call; every plugin
    registered this way is unregistered at teardown, last first.
    """
    from plait import get_plugin_manager

    if "plait_plugin_manager" in request.fixturenames:
        # set the fresh manager up first, so registrations land on it
        request.getfixturevalue("plait_plugin_manager")
    registered: list[tuple[PluginManager, str]] = []

    def register(obj: Any, name: str | None = None, *, distribution: str | None = None) -> str:
        manager = get_plugin_manager()
        plugin_name = manager.register(obj, name, distribution=distribution)
        registered.append((manager, plugin_name))
        return plugin_name

    yield register
    for manager, plugin_name in reversed(registered):
        manager.unregister(plugin_name)


@pytest.fixture
def plait_hook_recorder(plait_register_plugin: RegisterPlugin) -> HookRecorder:
    """A :class:`HookRecorder` registered for this test: it observes every run."""
    from .recorder import HookRecorder

    recorder = HookRecorder()
    plait_register_plugin(recorder, "plait-hook-recorder")
    return recorder
