"""``plait.testing``: a pytest plugin for people who write Plait plugins.

It is registered through the ``pytest11`` entry point, so installing ``plait-core`` makes
its fixtures available in every test session:

``anyio_backend``
    Parametrised over ``asyncio`` and ``trio``: every ``@pytest.mark.anyio`` test runs on
    both. Override it in a ``conftest.py`` for asyncio-only client libraries.

``plait_plugin_manager``
    A fresh :class:`~plait.plugins.PluginManager` that loads no installed plugin, installed
    as the process-wide manager for the duration of the test.

``register_plugin``
    ``register_plugin(obj, name=None, *, distribution=None) -> name`` registers an
    in-process plugin on the current process-wide manager (the fresh one when the test also
    asks for ``plait_plugin_manager``) and unregisters it at teardown.

``plait_hook_recorder``
    A registered :class:`HookRecorder` that records every observer-hook call.

Beside the fixtures, the package holds fake entry points (:func:`fake_entry_point`,
:func:`broken_entry_point`, :func:`make_plugin_manager`), a :class:`StaticRouterEnv` for
testing routers alone, and contract suites (:class:`RouterContract`,
:class:`MergeStrategyContract`; ``plait.testing.stores`` has the checkpoint-store one), and
``plait.testing.servers`` gives store tests a Redis or PostgreSQL server.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

# contract suites are plain ``assert`` code: let pytest explain their failures
pytest.register_assert_rewrite("plait.testing.contracts", "plait.testing.stores")

from plait.plugins import PluginManager, get_plugin_manager, set_plugin_manager  # noqa: E402

from .contracts import (  # noqa: E402
    ConverterContract,
    MergeStrategyContract,
    PluginManagerEnv,
    RouterContract,
)
from .fakes import (  # noqa: E402
    FakeDistribution,
    FakeEntryPoint,
    StaticRouterEnv,
    broken_entry_point,
    fake_entry_point,
    make_plugin_manager,
)
from .recorder import HookCall, HookRecorder  # noqa: E402

__all__ = [
    "FakeDistribution",
    "FakeEntryPoint",
    "HookCall",
    "HookRecorder",
    "ConverterContract",
    "MergeStrategyContract",
    "PluginManagerEnv",
    "RegisterPlugin",
    "RouterContract",
    "StaticRouterEnv",
    "anyio_backend",
    "broken_entry_point",
    "fake_entry_point",
    "make_plugin_manager",
    "plait_hook_recorder",
    "plait_plugin_manager",
    "register_plugin",
]

#: The type of the ``register_plugin`` fixture's value.
RegisterPlugin = Callable[..., str]


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


@pytest.fixture
def register_plugin(request: pytest.FixtureRequest) -> Iterator[RegisterPlugin]:
    """``register_plugin(obj, name=None, *, distribution=None)``: register for this test.

    The plugin goes on the process-wide manager current at the call; every plugin
    registered this way is unregistered at teardown, last first.
    """
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
def plait_hook_recorder(register_plugin: RegisterPlugin) -> HookRecorder:
    """A :class:`HookRecorder` registered for this test (build workflows after it)."""
    recorder = HookRecorder()
    register_plugin(recorder, "plait-hook-recorder")
    return recorder
