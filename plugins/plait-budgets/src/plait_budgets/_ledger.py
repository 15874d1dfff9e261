"""The ledger of a budgeted run: what each budget has spent and holds reserved, and the
reservation a model call makes before it starts.

The rules, which make a fan-out safe and its outcome independent of completion order:

- A model call reserves its worst case (:class:`Counts`: the prompt's tokens, the call's
  ``max_tokens``, one call, their price) against every budget around it (the run's, its
  fragments', its node's: an :class:`Account` each) at once, before it starts. Checking and
  reserving happen with no ``await`` between them, so concurrent calls cannot both take the
  last of a budget. A call that does not fit in one of them does not start.
- When the call ends, its actual usage is spent, and what it reserved beyond that is *held*
  until the superstep's barrier: admission within a superstep depends only on what earlier
  supersteps spent and on the reservations made in it, never on which call finished first.
- A call that used more than it reserved is spent in full and reported
  (:attr:`Ledger.overshoots`): the only way a budget is exceeded.
- A call that failed or was cancelled is counted at its reservation.

What a call costs is worked out once per executor and model (its :class:`Meter`: the
accounts around it, the price per token, the worst case of a call without ``max_tokens``);
each account keeps its *room* per unit (limit less everything committed), so reserving is
a comparison and a subtraction per unit and budget, and the barrier works the rooms out
again from the spend.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from plait import PlaitError

from ._ask import BOUNDARY
from ._budget import Budget
from ._prices import Price, UnpricedModelError

__all__ = ["Account", "BudgetExceededError", "Counts", "Ledger", "Ticket", "estimate_tokens"]

#: tokens a chat template adds around a prompt, at most, for the worst case
TEMPLATE_TOKENS = 16

#: the bound of a unit a budget does not limit
_UNLIMITED = float("inf")
#: a model whose price was not looked up yet
_UNKNOWN: Any = object()


def estimate_tokens(text: str) -> int:
    """An upper bound of the tokens ``text`` takes: its UTF-8 bytes (a byte-level BPE token
    is at least one byte) plus :data:`TEMPLATE_TOKENS`."""
    # (an ASCII text's length is its size in bytes: no encoding needed)
    return (len(text) if text.isascii() else len(text.encode("utf-8"))) + TEMPLATE_TOKENS


class Counts:
    """Amounts in the units a model call spends: tokens in and out, calls, tool calls and
    money (picodollars, so that sums are exact)."""

    __slots__ = ("input_tokens", "model_calls", "output_tokens", "pico", "tool_calls")

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        model_calls: int = 0,
        tool_calls: int = 0,
        pico: int = 0,
    ) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.model_calls = model_calls
        self.tool_calls = tool_calls
        self.pico = pico

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def usd(self) -> float:
        """The money, in US dollars."""
        return self.pico / 10**12

    def add(self, other: Counts) -> None:
        """Add ``other``."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.model_calls += other.model_calls
        self.tool_calls += other.tool_calls
        self.pico += other.pico

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, and the money in dollars too."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "usd": self.usd,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counts) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    def __repr__(self) -> str:
        return (
            f"Counts(input_tokens={self.input_tokens}, output_tokens={self.output_tokens}, "
            f"model_calls={self.model_calls}, tool_calls={self.tool_calls}, usd={self.usd:.6f})"
        )


#: no amounts (what :meth:`Account.rebound` adds when no call is in flight)
_NOTHING = Counts()


class BudgetExceededError(PlaitError):
    """A budget ran out: a model call that does not fit did not start (or a run past its
    supersteps or its time stopped).

    :param budget: the budget's name (``run``, a fragment prefix, an executor id).
    :param unit: the unit that ran out (``usd``, ``tokens`` …).
    :param limit: the budget's limit in that unit.
    :param spent: what was spent in it (reservations of calls still running included).
    :param needed: what the refused call needed in it (``None``: not a model call).
    :param executor_id: the executor whose call was refused (``None``: the run's limit).
    :param action: the budget's ``on_exhausted``.
    :param refused_by: the request a person refused more in (an ``ask`` budget).
    """

    #: raised by the budget's answerer of a model call it refuses: the caller lets it
    #: through as it is (plait-llm's agent does not wrap it in its ``AgentError``), so the
    #: run, an error edge or a ``route`` budget sees a ``BudgetExceededError``
    refuses_call = True

    def __init__(
        self,
        *,
        budget: str,
        unit: str,
        limit: Any,
        spent: Any,
        needed: Any,
        executor_id: str | None,
        model_id: str | None = None,
        action: str = "fail",
        refused_by: str | None = None,
    ) -> None:
        self.budget = budget
        self.unit = unit
        self.limit = limit
        self.spent = spent
        self.needed = needed
        self.executor_id = executor_id
        self.model_id = model_id
        self.action = action
        #: the request a person answered with a refusal (an ``ask`` budget), if one did
        self.refused_by = refused_by
        #: for an ``ask`` budget: ``(BudgetRequest, BudgetApproval)``, what the caller asks
        #: a person before the call may go (plait-llm's agent asks with
        #: ``ctx.request_info``); ``None`` otherwise
        self.asks: tuple[Any, Any] | None = None
        who = (
            f"a call of agent {executor_id!r} (model {model_id!r}) needs up to "
            f"{_said(unit, needed)} more"
            if executor_id is not None
            else "the run stopped"
        )
        if refused_by is not None:
            who += f"; a person refused to raise it (request {refused_by})"
        super().__init__(
            f"budget {budget!r} is spent in {unit}: {_said(unit, spent)} of "
            f"{_said(unit, limit)} used or reserved, and {who}; raise it to go on (resume the "
            f"run with a larger budget: plait resume RUN_ID --budget {unit}=...)"
        )


def _said(unit: str, amount: Any) -> str:
    if unit == "usd" and isinstance(amount, int):
        return f"${amount / 10**12:.6f}"
    if unit == "usd" and amount is not None:
        return f"${float(amount):.6f}"
    return str(amount)


class Account:
    """One budget's counters: what it spent, and its *room* in each unit it limits: the
    limit less the spend, the reservations of calls in flight, and what settled calls
    reserved beyond their use (held until the superstep's barrier). Admission compares a
    call's worst case with the room; a unit the budget does not limit has infinite room.

    The rooms are plain attributes, so that a reservation is a few comparisons and
    subtractions per budget (:meth:`Meter.reserve`).
    """

    __slots__ = (
        "bounds",
        "budget",
        "detailed",
        "limits",
        "more",
        "name",
        "room_calls",
        "room_in",
        "room_out",
        "room_pico",
        "room_tokens",
        "room_tools",
        "spent",
    )

    def __init__(self, name: str, budget: Budget) -> None:
        self.name = name
        self.budget = budget
        self.spent = Counts()
        checks = (
            ("tokens", budget.tokens),
            ("input_tokens", budget.input_tokens),
            ("output_tokens", budget.output_tokens),
            ("usd", budget.pico),
            ("model_calls", budget.model_calls),
            ("tool_calls", budget.tool_calls),
        )
        #: ``(unit, limit)`` of each unit a reservation is checked in, in the order they
        #: are checked (``usd`` in picodollars), approvals added
        self.limits: tuple[tuple[str, int], ...] = tuple(
            (unit, limit) for unit, limit in checks if limit is not None
        )
        #: whether it limits input or output tokens or tool calls (rooms a reservation
        #: checks only where they are limited)
        self.detailed = any(
            unit in ("input_tokens", "output_tokens", "tool_calls") for unit, _ in self.limits
        )
        #: what people approved in the units checked at a superstep boundary
        #: (``supersteps``, ``seconds``), by unit
        self.more: dict[str, int] = {}
        self._bound()
        self.rebound(None)

    def _bound(self) -> None:
        """Work out :attr:`bounds` from :attr:`limits`."""
        given = dict(self.limits)
        #: the limits, unlimited ones infinite: tokens, input, output, picodollars, model
        #: calls, tool calls
        self.bounds: tuple[float, ...] = tuple(
            given.get(unit, _UNLIMITED)
            for unit in (
                "tokens",
                "input_tokens",
                "output_tokens",
                "usd",
                "model_calls",
                "tool_calls",
            )
        )

    def rebound(self, reserved: Counts | None) -> None:
        """Work out the rooms from the limits, the spend and ``reserved`` (what calls in
        flight hold on this budget): what a barrier does, releasing what settled calls
        held beyond their use."""
        spent = self.spent
        tokens, input_tokens, output_tokens, pico, calls, tools = self.bounds
        used_in, used_out = spent.input_tokens, spent.output_tokens
        used_pico, used_calls = spent.pico, spent.model_calls
        if reserved is not None:
            used_in += reserved.input_tokens
            used_out += reserved.output_tokens
            used_pico += reserved.pico
            used_calls += reserved.model_calls
        self.room_tokens = tokens - used_in - used_out
        self.room_pico = pico - used_pico
        self.room_calls = calls - used_calls
        if self.detailed:
            self.room_in = input_tokens - used_in
            self.room_out = output_tokens - used_out
            self.room_tools = tools - spent.tool_calls  # never reserved: counted as reported
        else:  # (unlimited: never compared)
            self.room_in = self.room_out = self.room_tools = _UNLIMITED

    def room(self, unit: str) -> Any:
        """The room left in ``unit`` (``usd`` in picodollars; infinite when unlimited)."""
        return {
            "tokens": self.room_tokens,
            "input_tokens": self.room_in,
            "output_tokens": self.room_out,
            "usd": self.room_pico,
            "model_calls": self.room_calls,
            "tool_calls": self.room_tools,
        }[unit]

    def limits_now(self) -> dict[str, Any]:
        """JSON-ready: this budget's limits, with what people approved added (``usd`` in
        dollars)."""
        said: dict[str, Any] = {
            unit: float(limit) if isinstance(limit, Decimal) else limit
            for unit, limit in self.budget.limits().items()
        }
        for unit, limit in self.limits:
            said[unit] = limit / 10**12 if unit == "usd" else limit
        for unit, more in self.more.items():
            said[unit] = said[unit] + more
        return said

    def raise_by(self, amounts: dict[str, int]) -> None:
        """Add ``amounts`` (unit -> amount, ``usd`` in picodollars) to this budget's limits
        (a person approved more); a unit it does not limit stays unlimited."""
        self.limits = tuple((unit, limit + amounts.get(unit, 0)) for unit, limit in self.limits)
        for unit in BOUNDARY:
            if amounts.get(unit) and getattr(self.budget, unit) is not None:
                self.more[unit] = self.more.get(unit, 0) + amounts[unit]
        self._bound()
        self.room_tokens += amounts.get("tokens", 0)
        self.room_in += amounts.get("input_tokens", 0)
        self.room_out += amounts.get("output_tokens", 0)
        self.room_pico += amounts.get("usd", 0)
        self.room_calls += amounts.get("model_calls", 0)

    @property
    def priced(self) -> bool:
        """Whether this budget limits money (so every call needs a price)."""
        return self.budget.usd is not None

    def short(self, tokens: int, input_tokens: int, output_tokens: int, pico: int) -> Any:
        """The first unit a call's worst case does not fit in: ``(unit, limit, used or
        reserved, needed)``, or ``None``."""
        needs = {
            "tokens": tokens,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "usd": pico,
            "model_calls": 1,
            "tool_calls": 1,
        }
        for unit, limit in self.limits:
            room = self.room(unit)
            if unit == "tool_calls" and room <= 0:  # no tool call left to make
                return unit, limit, limit - room, 0
            if unit != "tool_calls" and needs[unit] > room:
                return unit, limit, limit - room, needs[unit]
        return None


class Meter:
    """What the model calls of one executor to one model reserve against and are priced
    with, worked out once (:meth:`Ledger.meter`): the accounts around the executor, the
    price per token, the worst case of a call that sets no ``max_tokens``.

    :meth:`reserve` is the hot path of a budgeted model call: no lookups, no objects but
    its :class:`Ticket`.
    """

    __slots__ = (
        "accounts",
        "detailed",
        "executor_id",
        "in_flight",
        "ledger",
        "max_tokens",
        "model_id",
        "pico_in",
        "pico_out",
        "plain",
        "price",
        "spends",
        "unbounded",
        "used",
    )

    def __init__(
        self,
        ledger: Ledger,
        accounts: tuple[Account, ...],
        executor_id: str,
        model_id: str,
        price: Price | None,
    ) -> None:
        self.ledger = ledger
        #: the ledger's calls in flight (what :meth:`reserve` adds its tickets to)
        self.in_flight = ledger.in_flight
        self.accounts = accounts
        self.executor_id = executor_id
        self.model_id = model_id
        self.price = price
        self.pico_in, self.pico_out = price.pico_per_token() if price is not None else (0, 0)
        #: the worst-case output of a call that sets no ``max_tokens``
        self.max_tokens: int | None = price.max_output_tokens if price is not None else None
        #: the first budget that limits tokens or money (a call with no bound on its output
        #: cannot be reserved against it), or ``None``
        self.unbounded: str | None = next(
            (
                a.name
                for a in accounts
                if any(unit in ("tokens", "output_tokens", "usd") for unit, _ in a.limits)
            ),
            None,
        )
        if self.max_tokens is None and self.unbounded is None:
            self.max_tokens = 0
        #: the accounts that limit only tokens, money and model calls (most do: their other
        #: rooms are infinite, and left alone), and the others
        self.plain = tuple(a for a in accounts if not a.detailed)
        self.detailed = tuple(a for a in accounts if a.detailed)
        #: what this executor's calls of this model spent (settled calls)
        self.used = Counts()
        #: what a settled call adds its use to: each account's spend, and :attr:`used`
        self.spends = (*(a.spent for a in accounts), self.used)

    def reserve(self, prompt_tokens: int, max_tokens: int | None) -> Ticket:
        """Reserve one call's worst case on every account, or refuse it (see
        :meth:`Ledger.reserve`)."""
        given = max_tokens
        if max_tokens is None:
            max_tokens = self.max_tokens
            if max_tokens is None:
                raise self.unbounded_error()
        pico = prompt_tokens * self.pico_in + max_tokens * self.pico_out
        tokens = prompt_tokens + max_tokens
        for account in self.plain:
            if tokens > account.room_tokens or pico > account.room_pico or account.room_calls < 1:
                return self.ledger.refused(self, prompt_tokens, given)
        detailed = self.detailed
        for account in detailed:
            if (
                tokens > account.room_tokens
                or prompt_tokens > account.room_in
                or max_tokens > account.room_out
                or pico > account.room_pico
                or account.room_calls < 1
                or account.room_tools <= 0
            ):
                return self.ledger.refused(self, prompt_tokens, given)
        # checked on every account, then taken from every account: no await in between
        for account in self.plain:
            account.room_tokens -= tokens
            account.room_pico -= pico
            account.room_calls -= 1
        for account in detailed:
            account.room_tokens -= tokens
            account.room_in -= prompt_tokens
            account.room_out -= max_tokens
            account.room_pico -= pico
            account.room_calls -= 1
        ticket = Ticket(self, prompt_tokens, max_tokens, pico)
        self.in_flight.add(ticket)
        return ticket

    def unbounded_error(self) -> PlaitError:
        """The error of a call with no bound on its output against a budget of tokens or
        money."""
        return PlaitError(
            f"agent {self.executor_id!r} calls model {self.model_id!r} with no max_tokens, "
            f"so its worst case is unbounded and budget {self.unbounded!r} limits tokens or "
            f"money: set the agent's options.max_tokens, or register the model's price with "
            f"max_output_tokens (plait_register_prices)"
        )


class Ticket:
    """One admitted model call (:meth:`Meter.reserve`): its reservation (its worst case),
    held on every account of its meter until :meth:`settle`."""

    __slots__ = ("id", "meter", "need_in", "need_out", "need_pico", "used")

    def __init__(self, meter: Meter, need_in: int, need_out: int, need_pico: int) -> None:
        self.meter = meter
        self.need_in = need_in
        self.need_out = need_out
        self.need_pico = need_pico
        #: the id its journal events carry (a durable run's store keeps a journal), or None
        self.id: str | None = None
        #: what it used, once settled (``None`` while it is reserved): the counts in the
        #: journal's order (input tokens, output tokens, model calls, tool calls,
        #: picodollars)
        self.used: tuple[int, int, int, int, int] | None = None

    @property
    def accounts(self) -> tuple[Account, ...]:
        """The accounts it reserved on."""
        return self.meter.accounts

    @property
    def executor_id(self) -> str:
        """The executor that made the call."""
        return self.meter.executor_id

    @property
    def model_id(self) -> str:
        """The model it called (a ``degrade`` budget's cheaper one, if that chose it)."""
        return self.meter.model_id

    @property
    def need(self) -> Counts:
        """Its reservation."""
        return Counts(self.need_in, self.need_out, 1, 0, self.need_pico)

    @property
    def usage(self) -> Counts | None:
        """What it used, once settled."""
        return None if self.used is None else Counts(*self.used)

    def settle(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        tool_calls: int = 0,
    ) -> None:
        """Replace the reservation by the call's actual usage (a unit the model did not
        report is counted at its reservation); what it reserved beyond that is held until
        the barrier (:meth:`Ledger.barrier`)."""
        if self.used is not None:  # (settled already)
            return
        meter = self.meter
        if input_tokens is None or output_tokens is None:
            meter.ledger.unreported += 1
            if input_tokens is None:
                input_tokens = self.need_in
            if output_tokens is None:
                output_tokens = self.need_out
        pico = input_tokens * meter.pico_in + output_tokens * meter.pico_out
        ledger = meter.ledger
        ledger.in_flight.discard(self)
        ledger.unbalanced = True  # (what it held beyond its use, the barrier releases)
        # (within its tokens, a call is within its money: the same prices, never negative)
        if input_tokens > self.need_in or output_tokens > self.need_out:
            ledger.overshot(self, input_tokens, output_tokens, pico)
        # Counts.add, written out: this runs for every budget around every model call
        for spent in meter.spends:
            spent.input_tokens += input_tokens
            spent.output_tokens += output_tokens
            spent.model_calls += 1
            spent.pico += pico
        if tool_calls:
            for account in meter.accounts:
                account.spent.tool_calls += tool_calls
                account.room_tools -= tool_calls
            meter.used.tool_calls += tool_calls
        self.used = (input_tokens, output_tokens, 1, tool_calls, pico)

    def abandon(self, error: BaseException | None) -> None:
        """The call failed or was cancelled: it is counted at its reservation."""
        if self.used is None:  # (its use unknown: counted as unreported)
            self.settle(None, None)


class Ledger:
    """The accounts of one budgeted run (and the runs nested in it), its calls in flight
    and its totals per model and per executor.

    :param prices: ``model_id -> Price | None``.
    """

    def __init__(self, prices: Any) -> None:
        self.prices = prices
        #: the prices looked up so far, by model id (a run's prices do not change)
        self.priced: dict[str, Any] = {}
        #: every account by name
        self.accounts: dict[str, Account] = {}
        #: every meter, by (accounts, executor id, model id)
        self.meters: dict[tuple[tuple[Account, ...], str, str], Meter] = {}
        #: calls admitted and not yet settled
        self.in_flight: set[Ticket] = set()
        #: whether a call settled since the last barrier (so rooms hold slack to release)
        self.unbalanced = False
        #: what each model and each executor spent before this process (a resumed run's
        #: checkpoint, the calls an earlier process lost); the meters add this process's
        self.kept_by_model: dict[str, Counts] = {}
        self.kept_by_executor: dict[str, Counts] = {}
        #: calls that used more than they reserved: what they used beyond it
        self.overshoots: list[tuple[str, str, Counts]] = []
        #: model calls whose usage the model did not report (counted at their reservation)
        self.unreported = 0
        #: calls switched to a cheaper model by a ``degrade`` budget: (executor, from, to)
        self.degraded: list[tuple[str, str, str]] = []
        self.supersteps = 0
        self.started = time.monotonic()
        #: each budget's spend a resumed run's checkpoint kept, until its account is made
        self.restored: dict[str, Counts] = {}
        #: calls that were in flight when the checkpoint resumed from was taken: counted
        #: as spent at their reservation
        self.recovered = 0
        self.overshot_before = 0
        #: what people approved, per budget: unit -> amount added (``usd`` in picodollars)
        self.raised: dict[str, dict[str, int]] = {}
        #: the approvals and refusals, in order: (request id, budget, approved, amounts)
        self.answers: list[tuple[str, str, bool, dict[str, int]]] = []
        #: the superstep of the checkpoint this run resumed from (-1: it did not resume),
        #: and the ids of the calls that checkpoint counts as in flight
        self.resumed_at = -1
        self.resumed_in_flight: frozenset[str] = frozenset()
        #: calls of an earlier process that died before its superstep committed: made, and
        #: counted from the run's journal (at their use, or at their reservation when they
        #: were still in flight)
        self.lost_settled = 0
        self.lost_in_flight = 0
        #: the journal of the durable run (:func:`plait_durable.run_journal`), looked up on
        #: the first model call; set when the lost calls have been counted from it
        self.journal: Any = None
        #: the run whose ledger this is (its journal is the one it reads and writes)
        self.run_id: str | None = None
        self.journal_known = False
        self.recovery: Any = None

    def account(self, name: str, budget: Budget) -> Account:
        """The account of budget ``name`` (made on first use, with what a resumed run's
        checkpoint says it spent)."""
        found = self.accounts.get(name)
        if found is None:
            found = self.accounts[name] = Account(name, budget)
            spent = self.restored.pop(name, None)
            if spent is not None:
                found.spent.add(spent)
            raised = self.raised.get(name)
            if raised:
                found.raise_by(raised)
            found.rebound(None)
        return found

    # -- totals ---------------------------------------------------------------------------

    @property
    def by_model(self) -> dict[str, Counts]:
        """What each model spent (settled calls, and what a resumed run's checkpoint
        kept)."""
        return self._totals(self.kept_by_model, lambda meter: meter.model_id)

    @property
    def by_executor(self) -> dict[str, Counts]:
        """What each executor spent (settled calls, and what a resumed run's checkpoint
        kept)."""
        return self._totals(self.kept_by_executor, lambda meter: meter.executor_id)

    def _totals(self, kept: dict[str, Counts], key: Any) -> dict[str, Counts]:
        totals = {name: _copy(counts) for name, counts in kept.items()}
        for meter in list(self.meters.values()):
            if meter.used.model_calls:
                totals.setdefault(key(meter), Counts()).add(meter.used)
        return totals

    def reserved(self, account: Account) -> Counts:
        """What the calls in flight hold on ``account`` (their reservations). May be asked
        from another thread (a live display): it reads a copy of the calls in flight."""
        held = Counts()
        for ticket in list(self.in_flight):
            if account in ticket.meter.accounts:
                held.input_tokens += ticket.need_in
                held.output_tokens += ticket.need_out
                held.model_calls += 1
                held.pico += ticket.need_pico
        return held

    # -- across a resume ------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What a checkpoint keeps: each budget's spend, each model's and executor's, the
        wall time so far, and the calls in flight at their reservation (a resumed run
        counts them as spent: what they used is unknown)."""
        accounts: dict[str, Counts] = {}
        for name, account in self.accounts.items():
            accounts[name] = _copy(account.spent)
        in_flight = list(self.in_flight)
        for ticket in in_flight:
            for account in ticket.accounts:
                accounts[account.name].add(ticket.need)
        for name, counts in self.restored.items():
            accounts.setdefault(name, Counts()).add(counts)
        by_model = self.by_model
        by_executor = self.by_executor
        for ticket in in_flight:
            by_model.setdefault(ticket.model_id, Counts()).add(ticket.need)
            by_executor.setdefault(ticket.executor_id, Counts()).add(ticket.need)
        return {
            "version": 1,
            "accounts": {k: _raw(v) for k, v in accounts.items()},
            "by_model": {k: _raw(v) for k, v in by_model.items()},
            "by_executor": {k: _raw(v) for k, v in by_executor.items()},
            "seconds": self.elapsed(),
            "in_flight": len(in_flight) + self.recovered,
            "unreported": self.unreported,
            "overshoots": len(self.overshoots) + self.overshot_before,
            "raised": {name: dict(amounts) for name, amounts in self.raised.items()},
            "superstep": self.supersteps,
            "in_flight_ids": sorted(t.id for t in in_flight if t.id is not None),
            "lost": [self.lost_settled, self.lost_in_flight],
            "answers": [[rid, name, ok, dict(amounts)] for rid, name, ok, amounts in self.answers],
        }

    def restore(self, data: Any, where: str) -> None:
        """Go on from what a checkpoint kept (:meth:`snapshot`); it was read from a store,
        so every value is checked.

        :raises PlaitError: naming ``where`` and the value that is wrong.
        """
        if not isinstance(data, dict) or data.get("version") != 1:
            raise PlaitError(f"{where}: not a budget ledger of version 1: {data!r:.200}")
        self.restored = _read_map(data.get("accounts"), f"{where}.accounts")
        self.kept_by_model = _read_map(data.get("by_model"), f"{where}.by_model")
        self.kept_by_executor = _read_map(data.get("by_executor"), f"{where}.by_executor")
        seconds = data.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise PlaitError(f"{where}.seconds: not a number of seconds: {seconds!r}")
        self.started = time.monotonic() - float(seconds)
        self.recovered = _count(data.get("in_flight"), f"{where}.in_flight")
        self.unreported = _count(data.get("unreported"), f"{where}.unreported")
        self.overshot_before = _count(data.get("overshoots"), f"{where}.overshoots")
        self.raised = {
            name: _read_amounts(amounts, f"{where}.raised[{name!r}]")
            for name, amounts in _mapping(data.get("raised", {}), f"{where}.raised").items()
        }
        self.answers = [
            _read_answer(answer, f"{where}.answers[{i}]")
            for i, answer in enumerate(_list(data.get("answers", []), f"{where}.answers"))
        ]
        self.resumed_at = self.supersteps = _count(data.get("superstep", 0), f"{where}.superstep")
        ids = _list(data.get("in_flight_ids", []), f"{where}.in_flight_ids")
        if not all(isinstance(i, str) for i in ids):
            raise PlaitError(f"{where}.in_flight_ids: not a list of ids: {ids!r:.80}")
        self.resumed_in_flight = frozenset(ids)
        lost = _list(data.get("lost", [0, 0]), f"{where}.lost")
        if len(lost) != 2:
            raise PlaitError(f"{where}.lost: not [settled, in flight]: {lost!r:.80}")
        self.lost_settled = _count(lost[0], f"{where}.lost[0]")
        self.lost_in_flight = _count(lost[1], f"{where}.lost[1]")

    # -- a model call ---------------------------------------------------------------------

    def meter(self, accounts: tuple[Account, ...], executor_id: str, model_id: str) -> Meter:
        """The meter of ``executor_id``'s calls of ``model_id`` against ``accounts``
        (worked out on first use: the price looked up, once per model).

        :raises UnpricedModelError: a budget around the call limits money and the model has
            no price.
        """
        key = (accounts, executor_id, model_id)
        found = self.meters.get(key)
        if found is None:
            price = self.priced.get(model_id, _UNKNOWN)
            if price is _UNKNOWN:
                price = self.priced[model_id] = self.prices(model_id)
            if price is None and any(account.priced for account in accounts):
                raise UnpricedModelError(model_id, executor_id)
            found = self.meters[key] = Meter(self, accounts, executor_id, model_id, price)
        return found

    def reserve(
        self,
        accounts: tuple[Account, ...],
        executor_id: str,
        model_id: str,
        prompt_tokens: int,
        max_tokens: int | None,
    ) -> Ticket:
        """Reserve one call's worst case (``prompt_tokens``, and ``max_tokens`` out or the
        model's ``max_output_tokens``, priced) on every account, or refuse it.

        Synchronous, with no ``await``: the check and the reservation are one step of the
        event loop, whatever else runs concurrently. (An executor's calls reserve through
        their :class:`Meter`, looked up once: :meth:`Meter.reserve`.)

        :raises BudgetExceededError: a budget has no room for it (and no ``degrade`` rule
            makes room).
        :raises UnpricedModelError: a budget limits money and the model has no price.
        :raises PlaitError: the call sets no ``max_tokens`` and the model's price gives no
            ``max_output_tokens``, while a budget limits tokens or money.
        """
        return self.meter(accounts, executor_id, model_id).reserve(prompt_tokens, max_tokens)

    def refused(self, meter: Meter, prompt_tokens: int, max_tokens: int | None) -> Ticket:
        """A call of ``meter`` does not fit (``max_tokens`` as the call gave it): reserve
        it with the cheaper model of a ``degrade`` budget if that fits, else refuse it.

        :raises BudgetExceededError: naming the first budget and unit it does not fit in.
        """
        out = meter.max_tokens if max_tokens is None else max_tokens
        assert out is not None  # (the meter checked it)
        pico = prompt_tokens * meter.pico_in + out * meter.pico_out
        shortfall = _short(meter.accounts, prompt_tokens, out, pico)
        assert shortfall is not None  # (the meter found it short)
        account, (unit, limit, used, wanted) = shortfall
        budget = account.budget
        cheaper = budget.degrade.get(meter.executor_id)
        if budget.on_exhausted == "degrade" and cheaper is not None:
            other = self.meter(meter.accounts, meter.executor_id, cheaper)
            other_out = other.max_tokens if max_tokens is None else max_tokens
            if other_out is None:
                raise other.unbounded_error()
            other_pico = prompt_tokens * other.pico_in + other_out * other.pico_out
            if _short(meter.accounts, prompt_tokens, other_out, other_pico) is None:
                self.degraded.append((meter.executor_id, meter.model_id, cheaper))
                return other.reserve(prompt_tokens, other_out)
        error = BudgetExceededError(
            budget=account.name,
            unit=unit,
            limit=limit,
            spent=used,
            needed=wanted,
            executor_id=meter.executor_id,
            model_id=meter.model_id,
            action=budget.on_exhausted,
        )
        if budget.on_exhausted == "ask" and unit != "tool_calls":
            error.asks = _asks(error)
        raise error

    def overshot(self, ticket: Ticket, input_tokens: int, output_tokens: int, pico: int) -> None:
        """A call used more than it reserved: report it, and take what it used beyond its
        reservation from every account's room."""
        over = Counts(
            max(input_tokens - ticket.need_in, 0),
            max(output_tokens - ticket.need_out, 0),
            0,
            0,
            max(pico - ticket.need_pico, 0),
        )
        self.overshoots.append((ticket.executor_id, ticket.model_id, over))
        for account in ticket.accounts:
            account.room_tokens -= over.tokens
            account.room_in -= over.input_tokens
            account.room_out -= over.output_tokens
            account.room_pico -= over.pico

    def count_lost(self, events: Iterable[Any]) -> None:
        """Count the model calls an earlier process made in supersteps that never
        committed (it died: the superstep runs again), from the run's journal
        (``call_reserved`` / ``call_settled`` events, written as each call went out and
        ended): a settled call at what it used, one still in flight at its reservation.
        Calls the checkpoint resumed from counts already (its superstep or before, or in
        flight at it) are left alone."""
        reserved: dict[str, Any] = {}
        settled: dict[str, list[int]] = {}
        for event in events:
            call = event.call or {}
            call_id = call.get("id")
            if not isinstance(call_id, str) or event.superstep <= self.resumed_at:
                continue
            if call_id in self.resumed_in_flight:
                continue
            counts = call.get("counts")
            if not isinstance(counts, list) or len(counts) != len(_FIELDS):
                continue
            if event.kind == "call_reserved":
                reserved[call_id] = event
            elif event.kind == "call_settled":
                settled[call_id] = counts
        for call_id, event in reserved.items():
            call = event.call
            used = settled.get(call_id)
            counts = Counts(*(max(0, n) for n in (used or call["counts"])))
            if used is None:
                self.lost_in_flight += 1
            else:
                self.lost_settled += 1
            names = call.get("accounts")
            for name in names if isinstance(names, list) else ():
                account = self.accounts.get(name)
                if account is not None:
                    account.spent.add(counts)
                    account.rebound(self.reserved(account))
                else:
                    self.restored.setdefault(str(name), Counts()).add(counts)
            for table, key in (
                (self.kept_by_model, call.get("model")),
                (self.kept_by_executor, event.executor),
            ):
                table.setdefault(str(key), Counts()).add(counts)

    def answer(self, request_id: str, request: Any, approval: Any) -> bool:
        """A person answered ``request`` (a :class:`~plait_budgets.BudgetRequest`) with
        ``approval`` (a :class:`~plait_budgets.BudgetApproval`): on an approval, raise the
        budget that ran out by the approved amounts. Whether it was approved. A request
        approved before is not approved twice (its answer was delivered again: the
        superstep that took it did not commit); one refused before may be answered again
        (a refusal fails the run, and the request stays pending).

        :raises ValueError: an approved amount is not a number >= 0.
        """
        from ._ask import amount_of

        if any(rid == request_id and ok for rid, _name, ok, _amounts in self.answers):
            return True
        approved = approval.get("approve") is True
        amounts = amount_of(request, approval) if approved else {}
        self.answers.append((request_id, request.budget, approved, amounts))
        if approved:
            raised = self.raised.setdefault(request.budget, {})
            for unit, amount in amounts.items():
                raised[unit] = raised.get(unit, 0) + amount
            account = self.accounts.get(request.budget)
            if account is not None:
                account.raise_by(amounts)
        return approved

    def barrier(self) -> None:
        """A superstep ended: release what settled calls reserved beyond their use (each
        budget's room is its limit less its spend and the reservations of calls still in
        flight: a pipelined run's)."""
        if not self.unbalanced:  # no call settled since the last barrier: nothing held
            return
        self.unbalanced = False
        in_flight = self.in_flight
        for account in self.accounts.values():
            account.rebound(self.reserved(account) if in_flight else None)

    # -- the run's own limits -------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds of wall time this run has taken."""
        return time.monotonic() - self.started

    def superstep(self, account: Account, superstep: int) -> None:
        """Superstep ``superstep`` (the run's count, across resumes) starts: stop the run
        past its supersteps or its time (what people approved added). An ``ask`` budget's
        error carries its request (:attr:`BudgetExceededError.asks`: the run's own, whose
        ``needed`` is the budget's own limit again).

        :raises BudgetExceededError: naming the run's budget and the limit.
        """
        self.supersteps = superstep
        budget = account.budget
        unit: str | None = None
        limit: float = 0
        spent: float = 0
        if budget.supersteps is not None:
            limit = budget.supersteps + account.more.get("supersteps", 0)
            if superstep > limit:
                unit, spent = "supersteps", superstep - 1
        if unit is None and budget.seconds is not None:
            limit = budget.seconds + account.more.get("seconds", 0)
            if (elapsed := self.elapsed()) > limit:
                unit, spent = "seconds", round(elapsed, 3)
        if unit is None:
            return
        error = BudgetExceededError(
            budget=account.name,
            unit=unit,
            limit=limit,
            spent=spent,
            needed=None,
            executor_id=None,
            action=budget.on_exhausted,
        )
        if budget.on_exhausted == "ask":
            from ._ask import BudgetApproval, BudgetRequest

            again = getattr(budget, unit)
            request = BudgetRequest(
                budget=account.name, unit=unit, limit=limit, spent=spent, needed=again
            )
            error.asks = (request, BudgetApproval)
        raise error

    def usage(self) -> dict[str, Any]:
        """JSON-ready totals: overall, per model, per executor, per budget, and what the
        run should know (overshoots, unreported usage, degraded calls)."""
        total = Counts()
        for counts in self.by_model.values():
            total.add(counts)
        return {
            "total": total.to_dict(),
            "by_model": {k: v.to_dict() for k, v in sorted(self.by_model.items())},
            "by_executor": {k: v.to_dict() for k, v in sorted(self.by_executor.items())},
            "budgets": {
                name: {
                    "limits": account.limits_now(),
                    "spent": account.spent.to_dict(),
                }
                for name, account in self.accounts.items()
            },
            "in_flight": len(self.in_flight),
            "recovered_in_flight": self.recovered,
            "lost_calls": {"settled": self.lost_settled, "in_flight": self.lost_in_flight},
            "overshoots": [
                {"executor": e, "model": m, "beyond": c.to_dict()} for e, m, c in self.overshoots
            ],
            "unreported": self.unreported,
            "degraded": [{"executor": e, "from": a, "to": b} for e, a, b in self.degraded],
            "approvals": [
                {
                    "request_id": rid,
                    "budget": name,
                    "approved": ok,
                    "added": {
                        unit: amount / 10**12 if unit == "usd" else amount
                        for unit, amount in amounts.items()
                    },
                }
                for rid, name, ok, amounts in self.answers
            ],
            "supersteps": self.supersteps,
        }


def _short(
    accounts: Iterable[Account], tokens_in: int, tokens_out: int, pico: int
) -> tuple[Account, tuple[str, int, int, int]] | None:
    for account in accounts:
        short = account.short(tokens_in + tokens_out, tokens_in, tokens_out, pico)
        if short is not None:
            return account, short
    return None


_FIELDS = ("input_tokens", "output_tokens", "model_calls", "tool_calls", "pico")


def _copy(counts: Counts) -> Counts:
    copy = Counts()
    copy.add(counts)
    return copy


def _raw(counts: Counts) -> list[int]:
    return [getattr(counts, name) for name in _FIELDS]


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlaitError(f"{where}: not a count: {value!r:.80}")
    return value


def _read_map(value: Any, where: str) -> dict[str, Counts]:
    if not isinstance(value, dict):
        raise PlaitError(f"{where}: not a mapping: {value!r:.80}")
    found: dict[str, Counts] = {}
    for key, raw in value.items():
        if not isinstance(raw, list) or len(raw) != len(_FIELDS):
            raise PlaitError(f"{where}[{key!r}]: not {len(_FIELDS)} counts: {raw!r:.80}")
        found[str(key)] = Counts(*(_count(n, f"{where}[{key!r}]") for n in raw))
    return found


def _asks(error: BudgetExceededError) -> tuple[Any, Any]:
    """What an ``ask`` budget's refusal asks a person: a request naming the budget, the
    unit, its limit, what was used and what the call needs (money in dollars)."""
    from ._ask import BudgetApproval, BudgetRequest

    def said(amount: Any) -> Any:  # money in dollars, counts as they are
        return amount / 10**12 if error.unit == "usd" else amount

    request = BudgetRequest(
        budget=error.budget,
        unit=error.unit,
        limit=said(error.limit),
        spent=said(error.spent),
        needed=said(error.needed),
        executor_id=str(error.executor_id),
        model_id=str(error.model_id),
    )
    return request, BudgetApproval


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlaitError(f"{where}: not a mapping: {value!r:.80}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise PlaitError(f"{where}: not a list: {value!r:.80}")
    return value


def _read_amounts(value: Any, where: str) -> dict[str, int]:
    from ._ask import APPROVABLE

    amounts = _mapping(value, where)
    for unit in amounts:
        if unit not in APPROVABLE:
            raise PlaitError(f"{where}: {unit!r:.40} is not a unit an approval raises")
    return {str(unit): _count(n, f"{where}[{unit!r}]") for unit, n in amounts.items()}


def _read_answer(value: Any, where: str) -> tuple[str, str, bool, dict[str, int]]:
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not isinstance(value[0], str)
        or not isinstance(value[1], str)
        or not isinstance(value[2], bool)
    ):
        raise PlaitError(f"{where}: not [request id, budget, approved, amounts]: {value!r:.80}")
    return value[0], value[1], value[2], _read_amounts(value[3], f"{where}[3]")
