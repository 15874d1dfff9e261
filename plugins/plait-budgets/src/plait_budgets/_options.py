"""The run option ``budget`` (imported when plugins load: it imports no more than attrs;
the budget itself is read by :mod:`plait_budgets._budget` when a run sets one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ._budget import Budget

__all__ = ["BudgetOptions"]


def _budget(value: Any) -> Budget | None:
    if value is None:
        return None
    from ._budget import as_budget

    return as_budget(value)


@attrs.frozen(kw_only=True)
class BudgetOptions:
    """The run option ``plait-budgets`` declares.

    :param budget: the run's :class:`~plait_budgets.Budget` (or a mapping of its fields, or
        ``--budget`` text: ``"usd=2,tokens=200k"``); ``None``, the default, meters nothing.
    """

    budget: Budget | None = attrs.field(default=None, converter=_budget)
