"""What a model call costs: prices per model, from the registry the
``plait_register_prices`` hook fills, else from a dated default table (``prices.json``,
read on first use: loading plugins reads nothing).
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError

if TYPE_CHECKING:
    from decimal import Decimal


__all__ = ["DEFAULT_TABLE", "Price", "UnpricedModelError", "default_prices", "price_of"]

#: The default table: ``{"date", "unit", "models": {model_id: price fields}}``.
DEFAULT_TABLE = Path(__file__).with_name("prices.json")


class UnpricedModelError(PlaitError):
    """A run with a money budget calls a model that has no registered price.

    :param model_id: the model.
    """

    def __init__(self, model_id: str, executor_id: str) -> None:
        self.model_id = model_id
        self.executor_id = executor_id
        super().__init__(
            f"agent {executor_id!r} calls model {model_id!r}, which has no price, and the run "
            f"has a money budget (usd): register its price with the plait_register_prices "
            f"hook (register({model_id!r}, plait_budgets.Price(input=..., output=...)), US "
            f"dollars per million tokens), or drop usd from the budget"
        )


def _dollars(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # a Decimal is a Number (decimal itself is imported on a price's first use)
    if isinstance(value, (bool, complex)) or not isinstance(value, numbers.Number) or value < 0:  # type: ignore[operator]
        raise PlaitError(
            f"Price.{attribute.name} must be US dollars per million tokens (a number >= 0), "
            f"got {value!r}"
        )


def _tokens(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise PlaitError(f"Price.max_output_tokens must be a positive int, got {value!r}")


@attrs.frozen(kw_only=True)
class Price:
    """What one model costs.

    :param input: US dollars per million input (prompt) tokens.
    :param output: US dollars per million output tokens.
    :param max_output_tokens: the most a call of this model answers: the worst case of a
        call that sets no ``max_tokens`` option.
    """

    input: float | Decimal = attrs.field(validator=_dollars)
    output: float | Decimal = attrs.field(validator=_dollars)
    max_output_tokens: int | None = attrs.field(default=None, validator=_tokens)
    #: picodollars per token (exact for prices with up to six decimals)
    _input_pico: int = attrs.field(init=False, default=-1, repr=False, eq=False)
    _output_pico: int = attrs.field(init=False, default=-1, repr=False, eq=False)

    def pico_per_token(self) -> tuple[int, int]:
        """Picodollars per input token and per output token."""
        if self._input_pico < 0:  # worked out on first use: loading plugins pays nothing
            from ._budget import to_pico

            object.__setattr__(self, "_input_pico", to_pico(self.input) // 10**6)
            object.__setattr__(self, "_output_pico", to_pico(self.output) // 10**6)
        return self._input_pico, self._output_pico


def default_prices() -> tuple[str, dict[str, Price]]:
    """The default table's date and its prices by model id."""
    data = json.loads(DEFAULT_TABLE.read_text(encoding="utf-8"))
    return data["date"], {model: Price(**fields) for model, fields in data["models"].items()}


def price_of(model_id: str, manager: Any) -> Price | None:
    """The price of ``model_id``: the one a plugin registers, else the default table's,
    else ``None``."""
    from plait import UnknownNameError

    try:
        price: Price = manager.registry("price").get(model_id)
    except UnknownNameError:
        return _defaults().get(model_id)
    return price


_DEFAULTS: dict[str, Price] = {}


def _defaults() -> dict[str, Price]:
    if not _DEFAULTS:
        _DEFAULTS.update(default_prices()[1])
    return _DEFAULTS
