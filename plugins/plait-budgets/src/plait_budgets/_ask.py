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

The request is registered for checkpoints (``plait_register_type_hooks``), its answer's
type with it, so a run
waiting on a request resumes in another process; the request's fields are checked when it
is read back from a store.
"""

from __future__ import annotations

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

#: The units an approval may raise (the ones reserved before a model call).
APPROVABLE = ("tokens", "input_tokens", "output_tokens", "usd", "model_calls")


class _Approve(TypedDict):
    approve: bool


class BudgetApproval(_Approve, total=False):
    """A person's answer to a :class:`BudgetRequest`: JSON, so that ``plait resume
    --respond ID='{"approve": true, "usd": 1}'`` and ``plait ui``'s form give it as it is.

    ``approve`` (required): whether to raise the budget (``false`` fails the call as
    ``fail`` would). The amounts to add to the budget that ran out, in its units (``usd``
    in dollars); with none given, an approval adds what the refused call needs in the
    unit that ran out.
    """

    usd: float | int
    tokens: int
    input_tokens: int
    output_tokens: int
    model_calls: int


def _name(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"BudgetRequest.{attribute.name} must be a name, got {value!r:.80}")


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
    model call (the payload of the agent's ``ctx.request_info``; the answer is a
    :class:`BudgetApproval`).

    :param budget: the budget that ran out (``run``, a fragment prefix, an executor id).
    :param unit: the unit it ran out in.
    :param limit: its limit in that unit (``usd`` in dollars).
    :param spent: what was used or reserved of it.
    :param needed: what the refused call needs in it.
    :param executor_id: the agent whose call waits.
    :param model_id: the model it calls.
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
    executor_id: str = attrs.field(validator=_name)
    model_id: str = attrs.field(validator=_name)

    def describe(self) -> str:
        """One line for a person: which budget, what is left, what the call needs."""
        usd = self.unit == "usd"

        def said(amount: float) -> str:
            return f"${amount:.6f}" if usd else f"{amount:g}"

        return (
            f"budget {self.budget!r} has {said(self.spent)} of {said(self.limit)} "
            f"{self.unit} used or reserved; agent {self.executor_id!r} (model "
            f"{self.model_id!r}) needs {said(self.needed)} more: approve?"
        )


def amount_of(request: BudgetRequest, approval: Any) -> dict[str, int]:
    """The amounts an approval adds, by unit (``usd`` in picodollars): the ones it gives,
    else what the refused call needs in the unit that ran out.

    :raises ValueError: an amount is not a number >= 0.
    """
    from ._budget import to_pico

    given: dict[str, int] = {}
    for unit in APPROVABLE:
        value = approval.get(unit)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"the approval's {unit} must be a number >= 0, got {value!r:.80}")
        given[unit] = to_pico(value) if unit == "usd" else int(value)
    if not given:
        needed = request.needed
        given[request.unit] = to_pico(needed) if request.unit == "usd" else int(needed)
    return given


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
