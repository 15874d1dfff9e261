"""How a budgeted run is metered: the run's observer gives each executor invocation a
meter (:data:`plait.spi.METER`) whose model calls reserve against the run's budget, its
fragments' and its node's, and the budgets of the runs it is nested in.
"""

from __future__ import annotations

import functools
from typing import Any

from plait import RunOptionError
from plait.spi import METER, Invocation, Meter, RunObserver

from ._budget import Budget, as_budget
from ._ledger import Account, Ledger, Ticket, estimate_tokens
from ._options import BudgetOptions

__all__ = ["BudgetObserver", "BudgetOptions", "InvocationMeter", "observe"]


class InvocationMeter:
    """The meter of one executor invocation: the accounts around it, in the ledger.

    :param inner: the meter this one found set (a tracer's), told of each call it admits.
    """

    __slots__ = ("accounts", "executor_id", "inner", "ledger")

    def __init__(
        self,
        ledger: Ledger,
        accounts: tuple[Account, ...],
        executor_id: str,
        inner: Meter | None = None,
    ) -> None:
        self.ledger = ledger
        self.accounts = accounts
        self.executor_id = executor_id
        self.inner = inner

    async def model_call(self, *, model_id: str, prompt: str, max_tokens: int | None) -> Ticket:
        """Reserve the call's worst case (see :meth:`Ledger.reserve`), then tell the inner
        meter, if any, of the call (with the model the budget chose)."""
        ticket = self.ledger.reserve(
            self.accounts, self.executor_id, model_id, estimate_tokens(prompt), max_tokens
        )
        if self.inner is not None:
            try:
                ticket.inner = await self.inner.model_call(
                    model_id=ticket.model_id, prompt=prompt, max_tokens=max_tokens
                )
            except BaseException as exc:
                ticket.abandon(exc)
                raise
        return ticket


def budget_meter(meter: Any) -> InvocationMeter | None:
    """The budgets' meter in a chain of meters (each wrapping the one it found), if any."""
    while meter is not None and not isinstance(meter, InvocationMeter):
        meter = getattr(meter, "inner", None)
    return meter


class BudgetObserver(RunObserver):
    """The observer of one budgeted run (or a run nested in one).

    :param ledger: the ledger (a nested run shares its outer run's).
    :param budget: the run's own budget, if it sets one.
    :param outer: the accounts around the invocation the run is nested in.
    :param name: the run's account name.
    """

    def __init__(
        self, ledger: Ledger, budget: Budget | None, outer: tuple[Account, ...], name: str
    ) -> None:
        self.ledger = ledger
        self.budget = budget
        self.run_account = ledger.account(name, budget) if budget is not None else None
        own = (self.run_account,) if self.run_account is not None else ()
        self.around = outer + own
        self.nested = bool(outer)
        #: the accounts around each executor, by id
        self.chains: dict[str, tuple[Account, ...]] = {}

    def accounts_of(self, executor_id: str) -> tuple[Account, ...]:
        """Every account around ``executor_id``: the outer runs', the run's, then each
        fragment's and node's scope that holds it, outermost first (worked out once per
        executor)."""
        known = self.chains.get(executor_id)
        if known is None:
            found = list(self.around)
            if self.budget is not None:
                _scoped(self.ledger, self.budget, executor_id, found)
            known = self.chains[executor_id] = tuple(found)
        return known

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        """Stop the run past its supersteps or time (raising fails the run, checkpointed
        at the previous superstep)."""
        if self.run_account is not None:
            self.ledger.superstep(self.run_account, superstep)

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        """The barrier: what settled calls held beyond their use is free again."""
        if not self.nested:
            self.ledger.barrier()

    def invocation_started(self, invocation: Invocation) -> Any:
        """Give the invocation its meter."""
        found = METER.get()
        if isinstance(found, InvocationMeter):  # an outer run's budgets: in our accounts
            found = found.inner
        meter = InvocationMeter(
            self.ledger, self.accounts_of(invocation.executor_id), invocation.executor_id, found
        )
        return METER.set(meter)

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        """Take the invocation's meter away."""
        METER.reset(handle)

    def run_finished(self, status: str, error: BaseException | None) -> None:
        """Calls still in flight (a cancelled run) count at their reservation."""
        if not self.nested:
            for ticket in list(self.ledger.in_flight):
                ticket.abandon(None)
            self.ledger.barrier()

    def checkpoint_metadata(self) -> dict[str, Any] | None:
        """The ledger as of this checkpoint, and the run's budget (a resume that sets none
        keeps it)."""
        if self.nested:
            return None
        snapshot = self.ledger.snapshot()
        if self.budget is not None:
            snapshot["budget"] = self.budget.to_dict()
        return {"budgets": snapshot}

    def usage(self) -> dict[str, Any] | None:
        """What the run spent (:meth:`Ledger.usage`), for ``WorkflowRunResult.usage``."""
        return None if self.nested else self.ledger.usage()


def _scoped(ledger: Ledger, budget: Budget, executor_id: str, found: list[Account]) -> None:
    for key, inner in budget.scopes.items():
        if key == executor_id or (key.endswith("/") and executor_id.startswith(key)):
            found.append(ledger.account(key, inner))
            _scoped(ledger, inner, executor_id, found)


def _check_scopes(budget: Budget, workflow: Any) -> None:
    """A scope must name an executor or a fragment prefix of the workflow."""
    ids = [node.id for node in workflow.spec.nodes]

    def walk(scopes: Any) -> None:
        for key, inner in scopes.items():
            if not any(i == key or (key.endswith("/") and i.startswith(key)) for i in ids):
                import difflib

                close = difflib.get_close_matches(key, ids, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RunOptionError(
                    f"budget scope {key!r} names no executor of workflow "
                    f"{workflow.name or '(unnamed)'}{hint}; executors: {', '.join(sorted(ids))}"
                )
            walk(inner.scopes)

    walk(budget.scopes)


def observe(
    run_id: str, workflow: Any, options: Any, manager: Any, resumed: Any = None
) -> BudgetObserver | None:
    """The observer of a run that sets a budget, is nested in a budgeted one, or resumes a
    budgeted one (whose ledger, and budget unless the resume sets one, it goes on with)."""
    budget = options.of(BudgetOptions).budget if options is not None else None
    kept = resumed.get("budgets") if isinstance(resumed, dict) else None
    where = f"run {run_id}: the budget ledger of its checkpoint"
    if budget is None and kept is not None:
        budget = as_budget(kept.get("budget") or {}, where=f"{where} (budget)")
    outer_meter = budget_meter(METER.get())
    if budget is None and outer_meter is None:
        return None
    if budget is not None and budget.scopes:
        _check_scopes(budget, workflow)
    if outer_meter is not None:
        ledger = outer_meter.ledger
        name = f"{outer_meter.executor_id}:run"
        return BudgetObserver(ledger, budget, outer_meter.accounts, name)
    from ._prices import price_of

    ledger = Ledger(functools.partial(price_of, manager=manager))
    if kept is not None:
        ledger.restore(kept, where)
    return BudgetObserver(ledger, budget, (), "run")
