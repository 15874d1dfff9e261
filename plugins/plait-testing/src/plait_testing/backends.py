"""Opt-in: run every ``@pytest.mark.anyio`` test on asyncio *and* trio.

anyio's pytest plugin runs a test on the backend the ``anyio_backend`` fixture names
(``asyncio`` unless a project overrides it). This module overrides it with a fixture
parametrised over both backends. It is never loaded by itself; a project opts in with one
line in its top-level ``conftest.py``::

    pytest_plugins = ["plait_testing.backends"]

and installs trio with ``pip install 'plait-testing[trio]'``. Or, in any ``conftest.py``
(a nested one, or to combine it with fixtures of your own)::

    from plait_testing.backends import anyio_backend  # noqa: F401  (a fixture, re-exported)

A test module or class whose client library runs on asyncio only overrides it again with an
``anyio_backend`` fixture returning ``"asyncio"``.
"""

from __future__ import annotations

import importlib.util

import pytest

__all__ = ["BACKENDS", "anyio_backend"]

#: The backends every anyio test runs on, in this order.
BACKENDS = ("asyncio", "trio")


@pytest.fixture(params=BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each anyio test on asyncio and on trio (one test id per backend)."""
    backend: str = request.param
    if importlib.util.find_spec(backend) is None:
        pytest.fail(
            f"plait_testing.backends runs each anyio test on {' and '.join(BACKENDS)}, "
            f"but {backend} is not installed: pip install 'plait-testing[{backend}]'"
        )
    return backend
