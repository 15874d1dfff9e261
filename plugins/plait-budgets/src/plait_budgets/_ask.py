"""The ``ask`` action: when a budget whose ``on_exhausted`` is ``ask`` has no room for a
model call, a person is asked to approve more (:class:`BudgetRequest`, answered with a
:class:`BudgetApproval`), and the run waits.

The model call does not start. The agent that made it asks with ``ctx.request_info`` (the
refusal's ``asks``) and keeps its message; the run ends ``idle_with_pending_requests``,
its checkpoint holding the request. A resume with an answer (``Workflow.resume(...,
responses={request_id: {"approve": True, "usd": 1}})``, ``plait resume --respond``, or
``plait ui``'s answer form) delivers it to the agent as a :class:`plait.RequestResponse`;
the run's budget observer reads it as the invocation starts: an approval raises the budget
that ran out by the approved amount (kept in the ledger, so every later checkpoint keeps
it), and the agent prompts again with its message; a refusal fails that call as ``fail``
would (:class:`~plait_budgets.BudgetExceededError`).

The supersteps and the wall time run out at a superstep boundary, not in a call: there the
run's budget observer asks (the kernel's :class:`plait.spi.AskFirst`), the superstep does
not start, and the request is the run's own; its answer reaches the observer
(``RunObserver.answered``) as the resumed run starts, and the run goes on from that
boundary (an approval) or fails as ``fail`` would (a refusal, the request still pending).

The request is registered for checkpoints (``plait_register_type_hooks``), its answer's
type with it, so a run
waiting on a request resumes in another process; the request's fields are checked when it
is read back from a store.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
from typing_extensions import TypedDict

__all__ = [
    "APPROVABLE",
    "REQUEST_HOOKS",
    "BudgetApproval",
    "BudgetRequest",
    "amount_of",
]

#: The units checked at a superstep boundary (the run's, not a call's).
BOUNDARY = ("supersteps", "seconds")
#: The units an approval may raise: the ones reserved before a model call, and the run's.
APPROVABLE = ("tokens", "input_tokens", "output_tokens", "usd", "model_calls", *BOUNDARY)


class _Approve(TypedDict):
    approve: bool


class BudgetApproval(_Approve, total=False):
    """A person's answer to a :class:`BudgetRequest`: JSON, so that ``plait resume
    --respond ID='{"approve": true, "usd": 1}'`` and ``plait ui``'s form give it as it is.

    ``approve`` (required): whether to raise the budget (``false`` fails the call as
    ``fail`` would). The amounts to add to the budget that ran out, in its units (``usd``
    in dollars, ``seconds`` of wall time, rounded up); with none given, an approval adds
    what the request's ``needed`` says in the unit that ran out.
    """

    usd: float | int
    tokens: int
    input_tokens: int
    output_tokens: int
    model_calls: int
    supersteps: int
    seconds: float | int


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"BudgetRequest.{attribute.name} must be a name, got {value!r:.80}")


def _name_or_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _name(_inst, attribute, value)


def _unit(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in APPROVABLE:
        raise ValueError(
            f"BudgetRequest.unit must be one of {', '.join(APPROVABLE)}, got {value!r:.80}"
        )


def _number(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"BudgetRequest.{attribute.name} must be a number >= 0, got {value!r:.80}")


@attrs.frozen(kw_only=True)
class BudgetRequest:
    """What a person is asked when a budget with ``on_exhausted="ask"`` has no room for a
    model call (the payload of the agent's ``ctx.request_info``), or the run's supersteps
    or time ran out at a superstep boundary (the run's own request); the answer is a
    :class:`BudgetApproval`.

    :param budget: the budget that ran out (``run``, a fragment prefix, an executor id).
    :param unit: the unit it ran out in.
    :param limit: its limit in that unit (``usd`` in dollars).
    :param spent: what was used or reserved of it.
    :param needed: what the refused call needs in it; for ``supersteps`` and ``seconds``,
        what an approval without amounts adds (the budget's own limit again).
    :param executor_id: the agent whose call waits (``None``: the run waits, at a
        superstep boundary).
    :param model_id: the model it calls (``None`` at a superstep boundary).
    """

    #: the answer reaches the agent with the request it answers (plait-durable delivers a
    #: :class:`plait.RequestResponse`), so the budget knows which budget to raise
    respond_with_request: ClassVar[bool] = True
    #: the answer's type, named so that a checkpoint's decoder, which follows the
    #: annotations of the classes it may decode, declares it with the request (a hook
    #: cannot: a TypedDict takes no ``issubclass``, which the converters' dispatch asks)
    answer: ClassVar[BudgetApproval]

    budget: str = attrs.field(validator=_name)
    unit: str = attrs.field(validator=_unit)
    limit: float = attrs.field(validator=_number)
    spent: float = attrs.field(validator=_number)
    needed: float = attrs.field(validator=_number)
    executor_id: str | None = attrs.field(default=None, validator=_name_or_none)
    model_id: str | None = attrs.field(default=None, validator=_name_or_none)

    def describe(self) -> str:
        """One line for a person: which budget, what is left, what the call needs."""
        if self.unit == "supersteps":
            return (
                f"budget {self.budget!r} has run {self.spent:g} of {self.limit:g} supersteps; "
                f"approve {self.needed:g} more?"
            )
        if self.unit == "seconds":
            return (
                f"budget {self.budget!r} has taken {self.spent:g} of {self.limit:g} seconds; "
                f"approve {self.needed:g} more?"
            )
        usd = self.unit == "usd"

        def said(amount: float) -> str:
            return f"${amount:.6f}" if usd else f"{amount:g}"

        return (
            f"budget {self.budget!r} has {said(self.spent)} of {said(self.limit)} "
            f"{self.unit} used or reserved; agent {self.executor_id!r} (model "
            f"{self.model_id!r}) needs {said(self.needed)} more: approve?"
        )


def amount_of(request: BudgetRequest, approval: Any) -> dict[str, int]:
    """The amounts an approval adds, by unit (``usd`` in picodollars, ``seconds`` rounded
    up): the ones it gives, else the request's ``needed`` in the unit that ran out.

    :raises ValueError: an amount is not a number >= 0.
    """
    given: dict[str, int] = {}
    for unit in APPROVABLE:
        value = approval.get(unit)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"the approval's {unit} must be a number >= 0, got {value!r:.80}")
        given[unit] = _in_units(unit, value)
    if not given:
        given[request.unit] = _in_units(request.unit, request.needed)
    return given


def _in_units(unit: str, amount: float | int) -> int:
    """``amount`` of ``unit`` as the ledger counts it (dollars in picodollars, seconds
    rounded up)."""
    from ._budget import to_pico

    if unit == "usd":
        return to_pico(amount)
    return math.ceil(amount) if unit == "seconds" else int(amount)


def _structure_request(data: Any, _cls: Any) -> BudgetRequest:
    """A :class:`BudgetRequest` from a checkpoint (untrusted): only its own fields,
    checked."""
    if not isinstance(data, dict):
        raise ValueError(f"a BudgetRequest is a mapping, got {type(data).__name__}")
    fields = {a.name for a in attrs.fields(BudgetRequest)}
    unknown = sorted(str(k) for k in data if k not in fields)
    if unknown:
        raise ValueError(f"a BudgetRequest has no field(s) {', '.join(unknown)}")
    return BudgetRequest(**data)


def _hooks(cls: Any, structure: Any, unstructure: Any) -> Any:
    from plait_converters import CattrsHooks

    return CattrsHooks(cls, structure=structure, unstructure=unstructure)


#: The checkpoint hooks of the request (registered lazily by ``plait_budgets``: a
#: checkpoint of any run may hold one, so they declare it, and its answer's type, to every
#: decoder).
REQUEST_HOOKS = _hooks(BudgetRequest, _structure_request, attrs.asdict)
