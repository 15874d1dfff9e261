"""Test configuration for the whole Plait repository (every distribution's tests).

- Every ``@pytest.mark.anyio`` test runs on asyncio and trio: we opt in to
  :mod:`plait_testing.backends`, as a plugin author would.
- The contract suites are plain ``assert`` code: let pytest explain their failures (an
  installed ``plait-testing`` gets this by itself; our editable checkout does not).
- ``register_plugin`` is our repository's short name for ``plait_register_plugin``.
"""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("plait_testing.contracts", "plait_testing.stores")

from plait_testing import RegisterPlugin  # noqa: E402

pytest_plugins = ["plait_testing.backends"]


@pytest.fixture
def register_plugin(plait_register_plugin: RegisterPlugin) -> RegisterPlugin:
    """The ``plait_register_plugin`` fixture of plait-testing, under a shorter name."""
    return plait_register_plugin
