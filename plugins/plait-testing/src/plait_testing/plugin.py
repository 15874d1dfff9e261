"""The pytest plugin of ``plait-testing`` (entry point ``pytest11``, name ``plait``).

Only fixtures prefixed ``plait_``, none of them autouse, no hook that changes collection or
reporting: a project that never asks for these fixtures runs exactly as without
``plait-testing`` installed (it adds the ``--plait-record`` and ``--plait-live`` options
and the ``plait_replay`` and ``plait_live`` markers, which nothing uses unless asked; the
one setup hook acts on tests marked ``plait_live(only=True)`` alone; a session gives the
process back the plugin manager it began with). Disable it with ``-p no:plait``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# pytest loads this module in every session of an environment that has plait-testing:
# the kernel is imported only when a test asks for a fixture, so nobody else pays for it
if TYPE_CHECKING:
    from plait.spi import PluginManager

    from .recorder import HookRecorder
    from .replaying import ReplayCheck

__all__ = [
    "STORE_KINDS",
    "RegisterPlugin",
    "plait_hook_recorder",
    "plait_plugin_manager",
    "plait_postgres_url",
    "plait_redis_url",
    "plait_register_plugin",
    "plait_replay",
    "plait_store_url",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
]

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


#: The durable stores ``plait_store_url`` gives in turn (its test ids).
STORE_KINDS = ("sqlite", "redis", "postgresql")


@pytest.fixture(scope="session")
def plait_redis_url() -> Iterator[str]:
    """A Redis server the tests may write to: ``PLAIT_TEST_REDIS_URL`` (``source
    .ci/services.sh`` starts one), else a throwaway server for the session
    (:func:`plait_testing.servers.redis_url`: without either the test fails, naming the
    Debian package). Shared: a test names its keys (runs, queues) uniquely."""
    from .servers import redis_url

    with redis_url() as url:
        yield url


@pytest.fixture(scope="session")
def plait_postgres_url() -> Iterator[str]:
    """A PostgreSQL server the tests may write to, as :func:`plait_redis_url`
    (``PLAIT_TEST_POSTGRES_URL``, :func:`plait_testing.servers.postgres_url`)."""
    from .servers import postgres_url

    with postgres_url() as url:
        yield url


@pytest.fixture(params=STORE_KINDS)
def plait_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of each durable store in turn (:data:`STORE_KINDS`): a new SQLite file of
    the test's own, then the shared Redis and PostgreSQL servers
    (:func:`plait_redis_url`, :func:`plait_postgres_url`, started only when a test gets
    there)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    fixture = "plait_redis_url" if request.param == "redis" else "plait_postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--plait-record``: record again the run bundles (``plait_replay``) and cassettes
    (``plait_testing.cassette``) whose tests diverge."""
    parser.addoption(
        "--plait-record",
        action="store_true",
        default=False,
        help="plait: record again the run bundles of plait_replay tests that diverge, and "
        "every cassette (review the new files in a diff)",
    )
    parser.addoption(
        "--plait-live",
        action="store_true",
        default=False,
        help="plait: cassettes stand aside, every call is made for real and nothing is "
        "recorded (run the real-model tests, -m plait_live, live); tests marked "
        "plait_live(only=True) run only then",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``plait_replay`` and ``plait_live`` markers; under ``--plait-record``
    cassettes record, under ``--plait-live`` they stand aside."""
    config.addinivalue_line(
        "markers",
        "plait_live(only=False): a test whose outside calls (a real model's) a cassette "
        "answers, run live by pytest --plait-live (select them with -m plait_live); "
        "only=True: it runs only under --plait-live (it checks what a cassette cannot stand "
        "in for)",
    )
    config.addinivalue_line(
        "markers",
        "plait_replay(bundle, workflow, key=None): replay the run bundle with the workflow "
        "(or 'module:attr') in the plait_replay fixture; the test fails with the "
        "first-divergence report",
    )
    for option, variable in (("--plait-record", "PLAIT_RECORD"), ("--plait-live", "PLAIT_LIVE")):
        if config.getoption(option, default=False):
            _set_for_session(config, variable)  # what plait_testing.cassette() reads
    _keep_plugin_manager(config)


def _keep_plugin_manager(config: pytest.Config) -> None:
    """Give the process back the plugin manager it had when the session began.

    A session run inside another (pytester's ``runpytest_inprocess``) forgets, as it
    ends, every module it imported: a process-wide manager it made (``plait.register``,
    ``get_plugin_manager()``, the ``plait_register_plugin`` fixture) would outlive them,
    holding registries built from classes of modules imported again later (a durable run
    then finds its options under a class that is no longer its own). When the kernel is
    not imported yet, a session made whatever manager there is, and nothing is kept.
    """
    import sys

    if "plait" not in sys.modules:
        return
    from plait.spi import set_plugin_manager

    began = set_plugin_manager(None)
    set_plugin_manager(began)

    def give_back() -> None:
        set_plugin_manager(began)

    config.add_cleanup(give_back)


def _set_for_session(config: pytest.Config, variable: str) -> None:
    """``variable=1`` until the session ends (then as it was: a session run inside another,
    pytester's, leaves the outer one alone)."""
    import os

    previous = os.environ.get(variable)
    os.environ[variable] = "1"

    def restore() -> None:
        if previous is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = previous

    config.add_cleanup(restore)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``plait_live(only=True)`` (it means something only on the installed
    model) is deselected without ``--plait-live``: never run, never reported skipped; the
    live run (``pytest --plait-live -m plait_live``) runs it."""
    if config.getoption("--plait-live", default=False):
        return
    kept: list[pytest.Item] = []
    live_only: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("plait_live")
        (live_only if marker is not None and marker.kwargs.get("only") else kept).append(item)
    if live_only:
        config.hook.pytest_deselected(items=live_only)
        items[:] = kept


@pytest.fixture
def plait_replay(request: pytest.FixtureRequest) -> ReplayCheck:
    """A :class:`~plait_testing.replaying.ReplayCheck`: its ``check(bundle, workflow)``
    replays a run bundle and fails the test with the first-divergence report.
    A test marked ``@pytest.mark.plait_replay(bundle, workflow)`` is checked as the fixture
    is set up (its ``report`` is there for the test to look at)."""
    from .replaying import ReplayCheck

    checker = ReplayCheck(rerecord=bool(request.config.getoption("--plait-record")))
    marker = request.node.get_closest_marker("plait_replay")
    if marker is not None:
        checker.check(*marker.args, **marker.kwargs)
    return checker
