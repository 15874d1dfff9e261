"""Every ``@pytest.mark.anyio`` test runs on asyncio and on trio (opt-in, from plait-testing)."""

from plait_testing.backends import anyio_backend  # noqa: F401  (a fixture, re-exported)
