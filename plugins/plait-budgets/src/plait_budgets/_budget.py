"""What a budget is: limits in each unit, what to do when one runs out, and the budgets of
the nodes and fragments inside it.

A :class:`Budget` is a value (frozen, comparable, JSON-ready through :meth:`Budget.to_dict`)
so that a run option, a workflow document's ``budget:`` and the command line's
``--budget usd=2,tokens=200k`` all make the same object (:func:`as_budget`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import attrs
from plait import RunOptionError

__all__ = ["ACTIONS", "UNITS", "Budget", "as_budget", "parse_budget", "to_pico"]

#: What to do when a budget runs out (see :class:`Budget`).
ACTIONS = ("fail", "route", "degrade", "ask")

#: The units a budget limits, as :class:`Budget`'s fields are named.
UNITS = (
    "tokens",
    "input_tokens",
    "output_tokens",
    "usd",
    "model_calls",
    "tool_calls",
    "supersteps",
    "seconds",
)

#: The short names ``--budget`` accepts, for the units' own.
_ALIASES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "calls": "model_calls",
    "tools": "tool_calls",
    "time": "seconds",
    "on": "on_exhausted",
}

#: Money is counted in picodollars (an int), so that sums never depend on their order.
PICO = 10**12


def to_pico(usd: float | Decimal | str) -> int:
    """US dollars as an exact number of picodollars."""
    return int((Decimal(str(usd)) * PICO).to_integral_value())


def _limit(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    whole = attribute.name not in ("usd", "seconds")
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)) or value < 0:
        raise RunOptionError(
            f"budget {attribute.name} must be a number >= 0 (or None: no limit), got {value!r}"
        )
    if whole and not isinstance(value, int):
        raise RunOptionError(f"budget {attribute.name} must be a whole number, got {value!r}")


def _action(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ACTIONS:
        raise RunOptionError(
            f"budget on_exhausted must be one of {', '.join(ACTIONS)}, got {value!r}"
        )


def _degrade(instance: Budget, attribute: attrs.Attribute[Any], value: Any) -> None:
    for agent, model in value.items():
        if not isinstance(agent, str) or not isinstance(model, str) or not agent or not model:
            raise RunOptionError(
                f"budget degrade maps an agent's executor id to a cheaper model id, got "
                f"{agent!r}: {model!r}"
            )
    if instance.on_exhausted == "degrade" and not value:
        raise RunOptionError(
            "budget on_exhausted='degrade' needs degrade={agent id: cheaper model id}"
        )


def _scopes(instance: Budget, attribute: attrs.Attribute[Any], value: Any) -> None:
    for key, inner in value.items():
        if not isinstance(key, str) or not key:
            raise RunOptionError(
                f"budget scopes are keyed by an executor id or a fragment prefix ending "
                f"in '/', got {key!r}"
            )
        if not isinstance(inner, Budget):
            raise RunOptionError(
                f"budget scopes[{key!r}] must be a Budget (or its dict), got {type(inner).__name__}"
            )
        for nested in inner.scopes:
            if not (key.endswith("/") and nested.startswith(key)):
                raise RunOptionError(
                    f"budget scopes[{key!r}] holds scope {nested!r}, which is not inside it: "
                    f"a scope nests only inside a fragment prefix ('{key.rstrip('/')}/…')"
                )


def _scope_map(value: Any) -> dict[str, Budget]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RunOptionError(
            f"budget scopes must map executor ids / fragment prefixes to budgets, got "
            f"{type(value).__name__}"
        )
    return {key: as_budget(inner, where=f"scopes[{key!r}]") for key, inner in value.items()}


@attrs.frozen(kw_only=True)
class Budget:
    """Limits on what a run (or a node, a fragment, a nested workflow) may spend.

    Every limit is optional (``None``: not limited). Tokens, money and model calls are
    reserved before a model call starts, at its worst case (the prompt plus the call's
    ``max_tokens``), against this budget and every budget around it; a call that does not
    fit does not start.

    :param tokens: input plus output tokens.
    :param input_tokens: prompt tokens.
    :param output_tokens: completion tokens.
    :param usd: US dollars, priced with the registered prices (``plait_register_prices``).
    :param model_calls: model calls.
    :param tool_calls: tool calls the models make (counted as they are reported).
    :param supersteps: supersteps of the run (a run budget only).
    :param seconds: wall time of the run, across resumes.
    :param on_exhausted: ``"fail"`` (the default: :class:`BudgetExceededError`, the run
        resumable with a raised budget), ``"route"`` (the same error, for the executor's
        error edge to take) or ``"degrade"`` (an agent named in ``degrade`` calls its
        cheaper model instead, when that fits) or ``"ask"`` (a person is asked to approve
        more: the agent's ``ctx.request_info``, the run waits; see
        :class:`~plait_budgets.BudgetRequest`).
    :param degrade: executor id of an agent -> a cheaper model id, for ``"degrade"``.
    :param scopes: executor id (``"writer"``) or fragment prefix (``"research/"``) -> the
        budget of that node or fragment, inside this one (a fragment's may hold its nodes').
    """

    tokens: int | None = attrs.field(default=None, validator=_limit)
    input_tokens: int | None = attrs.field(default=None, validator=_limit)
    output_tokens: int | None = attrs.field(default=None, validator=_limit)
    usd: float | Decimal | None = attrs.field(default=None, validator=_limit)
    model_calls: int | None = attrs.field(default=None, validator=_limit)
    tool_calls: int | None = attrs.field(default=None, validator=_limit)
    supersteps: int | None = attrs.field(default=None, validator=_limit)
    seconds: float | None = attrs.field(default=None, validator=_limit)
    on_exhausted: str = attrs.field(default="fail", validator=_action)
    degrade: Mapping[str, str] = attrs.field(factory=dict, converter=dict, validator=_degrade)
    scopes: Mapping[str, Budget] = attrs.field(
        factory=dict, converter=_scope_map, validator=_scopes
    )

    @property
    def pico(self) -> int | None:
        """The money limit in picodollars (``None``: not limited)."""
        return None if self.usd is None else to_pico(self.usd)

    def limits(self) -> dict[str, Any]:
        """The units this budget limits, with their limits."""
        return {unit: getattr(self, unit) for unit in UNITS if getattr(self, unit) is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what a document's ``budget:`` holds)."""
        out: dict[str, Any] = {
            unit: (float(v) if isinstance(v, Decimal) else v) for unit, v in self.limits().items()
        }
        if self.on_exhausted != "fail":
            out["on_exhausted"] = self.on_exhausted
        if self.degrade:
            out["degrade"] = dict(self.degrade)
        if self.scopes:
            out["scopes"] = {key: inner.to_dict() for key, inner in self.scopes.items()}
        return out

    def describe(self) -> str:
        """The limits in ``--budget`` form (``usd=2,tokens=200000``)."""
        said = [f"{unit}={value}" for unit, value in self.limits().items()]
        return ",".join(said) or "no limit"


_FIELDS = frozenset(a.name for a in attrs.fields(Budget))


def as_budget(value: Any, *, where: str = "budget") -> Budget:
    """A :class:`Budget` from what a run option, a document or the command line gives: a
    budget, a mapping of its fields, or ``--budget`` text (:func:`parse_budget`).

    :raises RunOptionError: naming ``where``, the field and the value.
    """
    if isinstance(value, Budget):
        return value
    if isinstance(value, str):
        return parse_budget(value, where=where)
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in _FIELDS)
        if unknown:
            import difflib

            hints = [
                f"{name} (did you mean {close[0]}?)"
                if (close := difflib.get_close_matches(name, sorted(_FIELDS), n=1))
                else name
                for name in unknown
            ]
            raise RunOptionError(
                f"{where}: unknown budget field(s) {', '.join(hints)}; known: "
                f"{', '.join(sorted(_FIELDS))}"
            )
        try:
            return Budget(**dict(value))
        except RunOptionError as exc:
            raise RunOptionError(f"{where}: {exc}") from None
    raise RunOptionError(
        f"{where} must be a Budget, a mapping of its fields or text such as "
        f"'usd=2,tokens=200k', got {type(value).__name__} {value!r}"
    )


_NUMBER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmM]|[smh])?\s*$")
_SCALE = {"k": 1_000, "m": 1_000_000}
_SECONDS = {"s": 1, "m": 60, "h": 3600}


def parse_budget(text: str, *, where: str = "--budget") -> Budget:
    """A :class:`Budget` from ``--budget`` text: ``usd=2,tokens=200k,calls=50,time=10m``.

    Units are :data:`UNITS` or their short names (``input``, ``output``, ``calls``,
    ``tools``, ``time``); ``k``/``M`` scale a count, ``s``/``m``/``h`` a time;
    ``on=fail|route|degrade|ask`` sets the action.

    :raises RunOptionError: naming the item that is wrong and what is accepted.
    """
    given: dict[str, Any] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = _ALIASES.get(name.strip(), name.strip())
        if not sep or (name not in UNITS and name != "on_exhausted"):
            accepted = ", ".join((*UNITS, *_ALIASES))
            raise RunOptionError(
                f"{where}: {item!r} is not unit=value (units: {accepted}); e.g. usd=2,tokens=200k"
            )
        if name in given:
            raise RunOptionError(f"{where}: {name} is given twice")
        if name == "on_exhausted":
            given[name] = raw.strip()
            continue
        given[name] = _amount(name, raw, where)
    return as_budget(given, where=where)


def _amount(unit: str, raw: str, where: str) -> Any:
    match = _NUMBER.match(raw)
    if match is None:
        raise RunOptionError(f"{where}: {unit}={raw!r} is not a number (e.g. 200k, 2.5, 10m)")
    number, suffix = match.group(1), match.group(2)
    if unit == "usd":
        if suffix:
            raise RunOptionError(f"{where}: usd={raw!r} takes a plain amount of dollars")
        try:
            return Decimal(number)
        except InvalidOperation as exc:  # pragma: no cover - the pattern admits only digits
            raise RunOptionError(f"{where}: usd={raw!r} is not a number") from exc
    if unit == "seconds":
        if suffix in ("k", "K", "M"):
            raise RunOptionError(f"{where}: time={raw!r}: use s, m or h")
        return float(number) * _SECONDS[suffix or "s"]
    if suffix in ("s", "h"):
        raise RunOptionError(f"{where}: {unit}={raw!r}: a count takes k or M, not {suffix}")
    value = Decimal(number) * _SCALE.get((suffix or "").lower(), 1)
    if value != value.to_integral_value():
        raise RunOptionError(f"{where}: {unit}={raw!r} is not a whole number")
    return int(value)
