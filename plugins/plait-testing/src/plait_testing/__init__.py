"""``plait_testing``: pytest helpers for people who write Plait plugins.

Installed with the ``plait-testing`` distribution, which registers the pytest plugin
:mod:`plait_testing.plugin` through the ``pytest11`` entry point. Its fixtures are all
prefixed ``plait_`` and used only by tests that ask for them, so installing it changes no
other project's test suite:

``plait_plugin_manager``
    A fresh :class:`~plait.spi.PluginManager` that loads no installed plugin, installed
    as the process-wide manager for the duration of the test.

``plait_register_plugin``
    ``plait_register_plugin(obj, name=None, *, distribution=None) -> name`` registers an
    in-process plugin on the current process-wide manager (the fresh one when the test also
    asks for ``plait_plugin_manager``) and unregisters it at teardown.

``plait_hook_recorder``
    A registered :class:`HookRecorder` that records every call the run observers get.

``plait_replay``
    A :class:`ReplayCheck`: its ``check(bundle, workflow)`` replays a run bundle
    (``plait export``) with today's code and fails the test with the first-divergence
    report (or ``@pytest.mark.plait_replay(bundle, workflow)``); ``pytest
    --plait-record`` records diverging bundles again. :func:`cassette` records and
    replays the model calls of a plain test (both need ``plait-replay``).

Running every ``@pytest.mark.anyio`` test on asyncio *and* trio is opt-in: put
``pytest_plugins = ["plait_testing.backends"]`` in your top-level ``conftest.py`` (or
``from plait_testing.backends import anyio_backend`` in any ``conftest.py``).

Beside the fixtures, the package holds fake entry points (:func:`fake_entry_point`,
:func:`broken_entry_point`, :func:`make_plugin_manager`), a :class:`StaticRouterEnv` for
testing routers alone, and contract suites (:class:`RouterContract`,
:class:`MergeStrategyContract`, :class:`ConverterContract`; ``plait_testing.stores`` has the
checkpoint-store one and ``plait_testing.schedules`` the schedule one), and
``plait_testing.servers`` gives store tests a Redis or PostgreSQL server.

Every name is imported on first use, not when pytest loads the plugin: loading it imports
neither the kernel (only its lazy-export helper, :func:`plait.spi.lazy_exports`) nor the
contract suites, so pytest can still rewrite the contracts' ``assert`` statements (it does
so for an installed ``plait-testing`` by itself; an editable checkout calls
``pytest.register_assert_rewrite("plait_testing.contracts", "plait_testing.schedules",
"plait_testing.stores")`` in its root ``conftest.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.spi import lazy_exports

if TYPE_CHECKING:
    from .contracts import (
        BuildContext as BuildContext,
        ConverterContract as ConverterContract,
        MergeStrategyContract as MergeStrategyContract,
        RouterContract as RouterContract,
    )
    from .fakes import (
        FakeDistribution as FakeDistribution,
        FakeEntryPoint as FakeEntryPoint,
        StaticRouterEnv as StaticRouterEnv,
        broken_entry_point as broken_entry_point,
        fake_entry_point as fake_entry_point,
        make_plugin_manager as make_plugin_manager,
    )
    from .plugin import RegisterPlugin as RegisterPlugin
    from .recorder import HookCall as HookCall, HookRecorder as HookRecorder
    from .replaying import (
        ModelCalls as ModelCalls,
        ReplayCheck as ReplayCheck,
        cassette as cassette,
    )


# each name is imported when first asked for (see the module docstring for why)
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
