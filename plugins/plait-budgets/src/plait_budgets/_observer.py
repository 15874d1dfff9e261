"""How a budgeted run is metered: the run's observer gives each executor invocation an
answerer of its outside calls (:func:`plait.spi.add_answerer`, place ``decide``: asked
before a tracer or a recorder) whose model calls (kind ``llm.prompt``) reserve against the
run's budget, its fragments' and its node's, and the budgets of the runs it is nested in.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from plait import RunOptionError
from plait.spi import (
    AskFirst,
    Invocation,
    RunObserver,
    add_answerer,
    outside_calls,
    remove_answerer,
)

from ._budget import Budget, as_budget
from ._ledger import (
    TEMPLATE_TOKENS,
    Account,
    BudgetExceededError,
    Ledger,
    Meter,
    Ticket,
    _raw,
)
from ._options import BudgetOptions

__all__ = ["BudgetObserver", "BudgetOptions", "InvocationBudget", "observe"]

#: the option names llm model plugins use for the output limit
_MAX_TOKENS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


class InvocationBudget:
    """What answers the model calls of one executor invocation (a
    :class:`plait.spi.OutsideCalls`): the accounts around it, in the ledger.

    A call of kind ``llm.prompt`` (plait-llm's agent) reserves its worst case from its
    request (:meth:`Ledger.reserve`) before it is passed on — with the cheaper model a
    ``degrade`` budget chose as the request's ``model`` —, and is settled from its
    answer's ``usage`` and ``tool_calls`` (a replayed call's answer is the recorded one:
    what the recorded call used is counted). A call that raises, or is cancelled, is
    counted at its reservation. Other calls and values pass through.
    """

    __slots__ = ("accounts", "executor_id", "ledger", "meters", "refused", "superstep")

    #: asked first: a call the budget refuses is never traced nor recorded
    place = "decide"

    def __init__(
        self,
        ledger: Ledger,
        accounts: tuple[Account, ...],
        executor_id: str,
        superstep: int = 0,
        meters: dict[str, Meter] | None = None,
    ) -> None:
        self.ledger = ledger
        self.accounts = accounts
        self.executor_id = executor_id
        self.superstep = superstep
        #: the executor's meters by model id (shared by its invocations)
        self.meters: dict[str, Meter] = {} if meters is None else meters
        #: ``(request id, BudgetRequest)`` a person refused more in: the invocation
        #: answering it fails its model call as ``fail`` would
        self.refused: tuple[str, Any] | None = None

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Reserve a model call, pass it on, settle it from its answer."""
        if kind != "llm.prompt":
            return await invoke(request)
        if self.refused is not None:
            raise _refusal(*self.refused)
        ledger = self.ledger
        if not ledger.journal_known:  # (the first call of the run)
            await _look_up_journal(ledger)
        get = request.get
        model_id = get("model")
        meter = self.meters.get(model_id)  # type: ignore[arg-type]
        if meter is None:
            model_id = str(model_id)
            meter = self.meters[model_id] = ledger.meter(self.accounts, self.executor_id, model_id)
        # the common call, written out: a prompt alone (a str), options with max_tokens
        prompt = get("prompt")
        if type(prompt) is not str or get("system") or get("conversation"):
            prompt = _sent(request)
        options = get("options")
        out = options.get("max_tokens") if options else None
        if type(out) is not int:
            out = _max_tokens(request)
        # (estimate_tokens, written out)
        sent = len(prompt) if prompt.isascii() else len(prompt.encode("utf-8"))
        ticket = meter.reserve(sent + TEMPLATE_TOKENS, out)
        journal = ledger.journal
        if journal is not None:  # durably, before the call goes out
            try:
                await _journal(journal, "call_reserved", ticket, self.superstep, _raw(ticket.need))
            except BaseException as exc:
                ticket.abandon(exc)
                raise
        if ticket.meter is not meter:  # a degrade budget chose a cheaper model
            request = {**request, "model": ticket.model_id}
        try:
            answer = await invoke(request)
        except BaseException as exc:
            ticket.abandon(exc)
            raise
        # the common answer, written out: plait-llm's dict, its usage a dict of ints
        usage = answer.get("usage") if type(answer) is dict else None
        if (
            type(usage) is dict
            and type(used_in := usage.get("input")) is int
            and type(used_out := usage.get("output")) is int
            and not answer.get("tool_calls")
        ):
            ticket.settle(used_in, used_out)
        else:
            settle(ticket, answer)
        if journal is not None and ticket.used is not None:
            await _journal(journal, "call_settled", ticket, self.superstep, list(ticket.used))
        return answer

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        """The time and random numbers cost nothing: passed through."""
        return produce()


async def _look_up_journal(ledger: Ledger) -> None:
    """On a budgeted run's first model call: find the durable run's journal (if its store
    keeps one) and, once, count from it the calls an earlier process made and lost
    (:meth:`Ledger.count_lost`); concurrent first calls wait for that."""
    if ledger.recovery is not None:
        await ledger.recovery.wait()
        return
    import anyio

    ledger.recovery = anyio.Event()
    try:
        from plait_durable import run_journal

        journal = run_journal()
        if journal is not None and ledger.run_id == journal.run_id:
            if ledger.resumed_at >= 0:
                ledger.count_lost(await journal.read(_CALL_EVENTS))
            ledger.journal = journal
    finally:
        ledger.journal_known = True
        ledger.recovery.set()


#: the journal events of budgeted model calls
_CALL_EVENTS = frozenset({"call_reserved", "call_settled"})


async def _journal(
    journal: Any, kind: str, ticket: Ticket, superstep: int, counts: list[int]
) -> None:
    """Write one of ``ticket``'s journal events (its id made on the first)."""
    import time

    from plait_durable import JournalEvent

    if ticket.id is None:
        import uuid

        ticket.id = uuid.uuid4().hex
    call = {
        "id": ticket.id,
        "model": ticket.model_id,
        "accounts": [account.name for account in ticket.accounts],
        "counts": counts,
    }
    event = JournalEvent(
        kind, superstep, time.time(), time.monotonic(), executor=ticket.executor_id, call=call
    )
    await journal.append([event])


def _sent(request: Mapping[str, Any]) -> str:
    """Every text a model call sends: the system prompt, the conversation so far, the
    prompt."""
    system, conversation = request.get("system"), request.get("conversation")
    if not system and not conversation:  # a prompt alone
        return str(request.get("prompt") or "")
    sent = [str(system or "")]
    for turn in request.get("conversation") or ():
        if isinstance(turn, Mapping):
            sent.append(str(turn.get("prompt") or ""))
            sent.append(str(turn.get("text") or ""))
    sent.append(str(request.get("prompt") or ""))
    return "\n".join(t for t in sent if t)


def _max_tokens(request: Mapping[str, Any]) -> int | None:
    """The call's output limit, from its options (``None``: the model's own)."""
    options = request.get("options")
    if options:
        for name in _MAX_TOKENS:
            limit = options.get(name)
            if limit is not None:
                return int(limit)
    return None


def settle(ticket: Ticket, answer: Any) -> None:
    """Replace the reservation by what the answer says the call used (a count it does not
    give is counted at its reservation)."""
    # (a dict, as plait-llm answers, is read without the Mapping ABC's isinstance)
    if type(answer) is dict or isinstance(answer, Mapping):
        usage, calls = answer.get("usage"), answer.get("tool_calls")
    else:
        usage = calls = None
    if type(usage) is dict or isinstance(usage, Mapping):
        used_in, used_out = usage.get("input"), usage.get("output")
        if type(used_in) is not int and not _count(used_in):
            used_in = None
        if type(used_out) is not int and not _count(used_out):
            used_out = None
    else:
        used_in = used_out = None
    ticket.settle(used_in, used_out, len(calls) if type(calls) is list else 0)


def _count(value: Any) -> bool:
    """Whether ``value`` is an int (a subclass of it, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _answer_of(message: Any) -> tuple[str, Any, Any] | None:
    """``(request id, BudgetRequest, BudgetApproval)`` when ``message`` is a person's
    answer to an ``ask`` budget's request (delivered as a ``RequestResponse``)."""
    if type(message).__name__ != "RequestResponse":  # (plait's, checked below)
        return None
    from plait import RequestResponse

    from ._ask import BudgetRequest

    if not isinstance(message, RequestResponse) or not isinstance(message.request, BudgetRequest):
        return None
    return message.request_id, message.request, message.value


def _refusal(request_id: str, request: Any) -> BudgetExceededError:
    """What a call whose budget a person refused to raise fails with (as ``fail``)."""
    from ._budget import to_pico

    def amount(n: float) -> Any:
        return to_pico(n) if request.unit == "usd" else n

    return BudgetExceededError(
        budget=request.budget,
        unit=request.unit,
        limit=amount(request.limit),
        spent=amount(request.spent),
        needed=amount(request.needed),
        executor_id=request.executor_id,
        model_id=request.model_id,
        action="fail",
        refused_by=request_id,
    )


def budget_of(chain: tuple[Any, ...]) -> InvocationBudget | None:
    """The budgets' answerer among the answerers of the running invocation, if any."""
    return next((one for one in chain if isinstance(one, InvocationBudget)), None)


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
        #: each executor's meters by model id (:attr:`InvocationBudget.meters`), by id
        self.meters: dict[str, dict[str, Meter]] = {}
        #: ``(request id, BudgetRequest)`` of the run's own request (supersteps, seconds)
        #: a person refused more in: the run fails at its next superstep, as ``fail``
        self.refused: tuple[str, Any] | None = None

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
        at the previous superstep); an ``ask`` budget has it wait at this boundary for a
        person's answer (:class:`plait.spi.AskFirst`, the run's own request)."""
        if self.refused is not None:
            raise _refusal(*self.refused)
        if self.run_account is not None:
            try:
                self.ledger.superstep(self.run_account, superstep)
            except BudgetExceededError as error:
                if error.asks is None:
                    raise
                request, answer_type = error.asks
                request_id = self._request_id(superstep, request)
                raise AskFirst(request, answer_type, request_id) from error

    def _request_id(self, superstep: int, request: Any) -> str:
        """The id of the run's own request at ``superstep``: the same for the same run at
        the same point (and a new one after each answer)."""
        import hashlib

        seed = f"{self.ledger.run_id}:{superstep}:{request.budget}:{request.unit}"
        seed += f":{len(self.ledger.answers)}"
        return hashlib.sha256(seed.encode()).hexdigest()[:32]

    def answered(self, response: Any) -> bool:
        """A person answered the run's own request: an approval raises the budget (in the
        ledger: every later checkpoint keeps it) and is taken; a refusal fails the run at
        its first superstep, the request still pending."""
        answered = _answer_of(response)
        if answered is None:
            return False
        request_id, request, approval = answered
        if self.ledger.answer(request_id, request, approval):
            return True
        self.refused = (request_id, request)
        return False

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        """The barrier: what settled calls held beyond their use is free again."""
        if not self.nested:
            self.ledger.barrier()

    def invocation_started(self, invocation: Invocation) -> Any:
        """Let the invocation's budget answer its model calls, in place of an outer run's
        (whose accounts are among its own)."""
        outer = budget_of(outside_calls.get())
        if outer is not None:
            remove_answerer(outer)
        executor_id = invocation.executor_id
        meters = self.meters.get(executor_id)
        if meters is None:
            meters = self.meters[executor_id] = {}
        budget = InvocationBudget(
            self.ledger,
            self.accounts_of(executor_id),
            executor_id,
            invocation.superstep,
            meters,
        )
        answered = _answer_of(invocation.message)
        if answered is not None:  # a person answered an ask budget's request
            request_id, request, approval = answered
            if not self.ledger.answer(request_id, request, approval):
                budget.refused = (request_id, request)
        add_answerer(budget)
        return budget, outer

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        """Take the invocation's budget away (giving an outer run's its place back)."""
        budget, outer = handle
        remove_answerer(budget)
        if outer is not None:
            add_answerer(outer)

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

    def status(self) -> dict[str, str] | None:
        """The run's spend against its budget as it goes (``{"spend": "$0.12/$2.00 ·
        1.2k/200k tok · 2 calls in flight: $0.04, 3.1k tok reserved"}``: what
        :func:`spend_summary` says of a checkpoint, and the reservations of the calls in
        flight), for a live display (:attr:`plait.spi.RunWatch.status`); ``None`` for a
        run nested in a budgeted one (the outer run shows it) or without a budget of its
        own. Read from the display's thread: it reads the run account's counters and a
        copy of the calls in flight."""
        account = self.run_account
        if account is None or self.nested:
            return None
        from ._command import account_summary

        ledger = self.ledger
        lost = ledger.lost_settled + ledger.lost_in_flight
        return {"spend": account_summary(account, lost, ledger.reserved(account))}


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
    outer_budget = budget_of(outside_calls.get())
    if budget is None and outer_budget is None:
        return None
    if budget is not None and budget.scopes:
        _check_scopes(budget, workflow)
    if outer_budget is not None:
        ledger = outer_budget.ledger
        name = f"{outer_budget.executor_id}:run"
        return BudgetObserver(ledger, budget, outer_budget.accounts, name)
    from ._prices import price_of

    ledger = Ledger(functools.partial(price_of, manager=manager))
    ledger.run_id = run_id
    if kept is not None:
        ledger.restore(kept, where)
    return BudgetObserver(ledger, budget, (), "run")
