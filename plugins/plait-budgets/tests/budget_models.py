"""The fake ``llm`` models of the budgets' tests and their prices (see conftest.py)."""

from __future__ import annotations

import random
import time
from typing import Any

import llm
import plait

#: What each priced test model costs: dollars per million tokens.
PRICES = {
    "budget-test": (1_000.0, 2_000.0),  # $0.001 a token in, $0.002 out: easy sums
    "budget-test-mini": (100.0, 200.0),
    "budget-test-silent": (1_000.0, 2_000.0),
}


class Calls:
    """What the fake models were asked: ``(model_id, prompt)`` in completion order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []


class MeteredModel(llm.Model):
    can_stream = False

    class Options(llm.Options):
        max_tokens: int | None = None

    def __init__(self, model_id: str, calls: Calls, *, report: bool = True) -> None:
        self.model_id = model_id
        self.calls = calls
        self.report = report

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
        time.sleep(random.random() / 1000)  # completion order is random
        self.calls.seen.append((self.model_id, prompt.prompt))
        out = min(prompt.options.max_tokens or 5, 5)
        if self.report:
            response.set_usage(input=len(prompt.prompt.split()), output=out)
        yield "ok"


class FakeModels:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(MeteredModel("budget-test", self.calls))
        register(MeteredModel("budget-test-mini", self.calls))
        register(MeteredModel("budget-test-silent", self.calls, report=False))
        register(MeteredModel("budget-test-unpriced", self.calls))


class ModelPrices:
    """The test models' prices, registered through ``plait_register_prices``."""

    @plait.hookimpl
    def plait_register_prices(self, register: Any) -> None:
        from plait_budgets import Price

        for model_id, (dollars_in, dollars_out) in PRICES.items():
            register(model_id, Price(input=dollars_in, output=dollars_out))
