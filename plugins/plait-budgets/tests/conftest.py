"""Fake ``llm`` models with usage reports, and their prices: no network, no key.

``budget-test`` answers ``"ok"`` after a short random wait (so a fan-out's calls finish in
a random order) and reports its usage: the prompt's words in, ``min(max_tokens, 5)`` out.
``budget-test-mini`` is the same, cheaper. ``budget-test-silent`` reports no usage,
``budget-test-unpriced`` has no price.

"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from budget_models import Calls, FakeModels, ModelPrices


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture(autouse=True)
def fake_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Calls) -> Iterator[None]:
    """The fake models registered with llm (its user directory a temporary one)."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_LLM_MODEL", raising=False)
    plugin = FakeModels(calls)
    llm.plugins.pm.register(plugin, name="plait-budget-test-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)


@pytest.fixture
def priced(plait_register_plugin: Any) -> None:
    """The test models priced (``PRICES``)."""
    plait_register_plugin(ModelPrices(), "budget-test-prices")
