"""Test configuration for the whole Plait repository (every distribution's tests).

- Every ``@pytest.mark.anyio`` test runs on asyncio and trio: we opt in to
  :mod:`plait_testing.backends`, as a plugin author would.
- The contract suites are plain ``assert`` code: let pytest explain their failures (an
  installed ``plait-testing`` gets this by itself; our editable checkout does not).
- ``register_plugin`` is our repository's short name for ``plait_register_plugin``.
- Ray's token authentication (what plait-ray's tests' local cluster uses) is said before
  anything imports Ray: Ray reads its configuration once, and a test that imports a
  plait-ray module (an exports check, a module-reference check) would otherwise fix it to
  ``disabled`` for the whole worker, whose Ray tests then cannot join the cluster.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "token")

pytest.register_assert_rewrite(
    "plait_testing.contracts", "plait_testing.schedules", "plait_testing.stores"
)

from plait_testing import RegisterPlugin  # noqa: E402

pytest_plugins = ["plait_testing.backends"]


@pytest.fixture
def register_plugin(plait_register_plugin: RegisterPlugin) -> RegisterPlugin:
    """The ``plait_register_plugin`` fixture of plait-testing, under a shorter name."""
    return plait_register_plugin


_REPO_RUNS = Path(__file__).parent / ".plait"


def _runs_folder_state() -> list[tuple[str, int, int]]:
    if not _REPO_RUNS.is_dir():
        return []
    return sorted(
        (str(p.relative_to(_REPO_RUNS)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in _REPO_RUNS.rglob("*")
        if p.is_file()
    )


@pytest.fixture(scope="session", autouse=True)
def _the_repository_keeps_its_own_runs() -> Iterator[None]:
    """No test writes into the repository's own ``.plait/`` (the CLI's default store is
    ``.plait/runs.db`` of the working folder): tests run the CLI from a scratch folder."""
    before = _runs_folder_state()
    yield
    after = _runs_folder_state()
    assert after == before, f"a test wrote into {_REPO_RUNS}: {sorted(set(after) - set(before))}"
