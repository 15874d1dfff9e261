"""``plait spend``: what each run of a checkpoint store spent, against its budget, from
the ledger its latest checkpoint keeps (imported when the command line is built: the hook
``plait_register_commands`` adds it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import click

__all__ = [
    "account_summary",
    "budget_panel",
    "spend_cell",
    "spend_command",
    "spend_of",
    "spend_summary",
]

#: Where the command looks unless ``--checkpoint`` says otherwise (where ``plait run``
#: keeps runs).
DEFAULT_STORE = "sqlite:///.plait/runs.db"


def _kept_ledger(metadata: Any) -> Any:
    """The budget ledger a checkpoint's metadata keeps (``observers.budgets``), as
    stored (untrusted: maybe not a ledger at all), or ``None`` when the run had no
    budget."""
    observers = metadata.get("observers") if isinstance(metadata, Mapping) else None
    return observers.get("budgets") if isinstance(observers, Mapping) else None


def _restored(kept: Any, *, with_budget: bool = True) -> tuple[Any, Any]:
    """A :class:`Ledger` restored from ``kept`` (only numbers and names are taken from
    it), and the run's budget it records (``None`` unless ``with_budget``).

    :raises Exception: the ledger or its budget is not one (a caller reports it, never
        trusts it).
    """
    from ._budget import as_budget
    from ._ledger import Ledger

    ledger = Ledger(lambda model_id: None)
    ledger.restore(kept, "the checkpoint's budget ledger")
    if not with_budget:
        return ledger, None
    return ledger, as_budget(kept.get("budget") or {}, where="the checkpoint's budget")


def spend_of(metadata: Any) -> dict[str, Any] | None:
    """The spend a checkpoint's metadata keeps (its budget ledger), JSON-ready: the run's
    budget, and per budget what it spent, or ``None`` when the run had no budget. The
    metadata was read from a store: only numbers and names are taken from it."""
    kept = _kept_ledger(metadata)
    if kept is None:
        return None
    try:
        ledger, _ = _restored(kept, with_budget=False)
    except Exception as exc:  # a bad ledger is reported, never trusted
        return {"error": str(exc)}
    budget = kept.get("budget")
    spent = {name: counts.to_dict() for name, counts in ledger.restored.items()}
    return {
        "budget": budget if isinstance(budget, dict) else {},
        "spent": spent,
        "in_flight": ledger.recovered,
        "lost_calls": {"settled": ledger.lost_settled, "in_flight": ledger.lost_in_flight},
        "seconds": round(ledger.elapsed(), 3),
    }


def spend_cell(info: Any) -> str:
    """A run's cell in the ``spend`` column of run listings (``plait_run_columns``): its
    :func:`spend_summary`, or ``-`` for a run without a budget or when the listing read no
    metadata (a run index, a sealed store)."""
    metadata = getattr(info, "metadata", None)
    if not isinstance(metadata, Mapping) or not metadata:
        return "-"
    return spend_summary(metadata) or "-"


def spend_summary(checkpoint: Any) -> str | None:
    """A run's spend against its budget in a few characters, for a column of a run list
    (``plait runs``, ``plait ui``): ``"$0.12/$2.00 · 1.2k/200k tok · 3/50 calls"``.

    Each unit the run's budget limits is shown as spent/limit (limits raised by an ``ask``
    approval included); money, tokens and calls spent without a limit as the spend alone.
    Calls made by a process that died before their superstep committed add
    ``· 1 lost call`` (they are in the spend: see :meth:`Ledger.count_lost`).

    :param checkpoint: a run's latest checkpoint (a :class:`plait_durable.Checkpoint`, or
        anything with its ``metadata`` mapping), or that metadata itself.
    :return: the summary, ``None`` when the run has no budget ledger, or
        ``"unreadable ledger"`` when the one it keeps is not one (read from a store: only
        numbers are taken from it).
    """
    kept = _kept_ledger(getattr(checkpoint, "metadata", checkpoint))
    if kept is None:
        return None
    try:
        ledger, budget = _restored(kept)
    except Exception:  # a bad ledger is reported, never trusted
        return "unreadable ledger"
    account = ledger.account("run", budget)
    return account_summary(account, ledger.lost_settled + ledger.lost_in_flight)


def account_summary(account: Any, lost: int = 0, reserved: Any = None) -> str:
    """One budget's spend against its limits (an :class:`Account` of the ledger), as
    :func:`spend_summary` shows a run's: what a live display shows as the run goes (it
    reads plain counters only, so it may be asked from another thread).

    :param reserved: what calls in flight hold on it (:meth:`Ledger.reserved`), shown
        after the spend (``· 2 calls in flight: $0.04, 3.1k tok reserved``) when any is.
    """
    limits = account.limits_now()
    spent = account.spent
    parts = []
    if "usd" in limits or spent.pico:
        part = _dollars(spent.pico / 10**12)
        parts.append(part + (f"/{_dollars(limits['usd'])}" if "usd" in limits else ""))
    if "tokens" in limits or spent.tokens:
        part = _compact(spent.tokens)
        limit = limits.get("tokens")
        parts.append(part + (f"/{_compact(limit)}" if limit is not None else "") + " tok")
    if "model_calls" in limits:
        parts.append(f"{spent.model_calls}/{limits['model_calls']} calls")
    if lost:
        parts.append(f"{lost} lost call" + ("s" if lost > 1 else ""))
    if reserved is not None and reserved.model_calls:
        held = []
        if "usd" in limits or reserved.pico:
            held.append(_dollars(reserved.pico / 10**12))
        if "tokens" in limits or "usd" not in limits:
            held.append(f"{_compact(reserved.tokens)} tok")
        calls = reserved.model_calls
        parts.append(
            f"{calls} call{'s' if calls > 1 else ''} in flight: {', '.join(held)} reserved"
        )
    return " · ".join(parts) or "$0.00"


def budget_panel(metadata: Any) -> dict[str, Any] | None:
    """The ``budget`` panel of a run's page in ``plait ui`` (``plait_run_panels``), from
    the ledger a checkpoint's metadata keeps: a bar per unit the run's budget limits
    (spent against the limit, approvals included) and the spend of each node (the ledger's
    ``by_executor``: model calls, tokens, tool calls, money), most expensive first.

    :param metadata: the checkpoint's metadata (read from a store: only numbers and names
        are taken from it).
    :return: the panel, ``None`` for a run without a budget ledger, or a panel saying the
        ledger is unreadable.
    """
    kept = _kept_ledger(metadata)
    if kept is None:
        return None
    try:
        ledger, budget = _restored(kept)
    except Exception as exc:  # a bad ledger is reported, never trusted
        return {"title": "Budget", "error": f"unreadable ledger: {exc}"}
    account = ledger.account("run", budget)
    spent = account.spent
    used = {
        "tokens": spent.tokens,
        "input_tokens": spent.input_tokens,
        "output_tokens": spent.output_tokens,
        "usd": spent.pico / 10**12,
        "model_calls": spent.model_calls,
        "tool_calls": spent.tool_calls,
        "supersteps": ledger.supersteps,
        "seconds": float(kept["seconds"]),
    }
    bars = []
    for unit, limit in account.limits_now().items():
        amount = used[unit]
        if unit == "usd":
            text = f"{_dollars(amount)} of {_dollars(limit)}"
        elif unit == "seconds":
            text = f"{amount:.1f} s of {limit:g} s"
        else:
            text = f"{_compact(amount)} of {_compact(limit)} {unit.replace('_', ' ')}"
        fraction = min(amount / limit, 1.0) if limit > 0 else 1.0
        bars.append({"label": unit, "fraction": fraction, "text": text})
    nodes = sorted(ledger.by_executor.items(), key=lambda kv: (-kv[1].pico, -kv[1].tokens, kv[0]))
    rows = [
        [
            executor_id,
            str(counts.model_calls),
            str(counts.input_tokens),
            str(counts.output_tokens),
            str(counts.tool_calls),
            f"${counts.pico / 10**12:,.4f}",  # a node's share: to a hundredth of a cent
        ]
        for executor_id, counts in nodes
    ]
    panel: dict[str, Any] = {"title": "Budget", "bars": bars}
    panel["columns"] = ["node", "model calls", "tokens in", "tokens out", "tool calls", "usd"]
    panel["rows"] = rows
    notes = []
    lost = ledger.lost_settled + ledger.lost_in_flight
    if ledger.recovered:
        notes.append(f"{ledger.recovered} call(s) in flight, counted at their reservation")
    if lost:
        notes.append(f"{lost} call(s) lost to a crash, counted from the run's journal")
    if ledger.overshot_before:
        notes.append(f"{ledger.overshot_before} call(s) used more than they reserved")
    if notes:
        panel["notes"] = notes
    return panel


def _dollars(amount: float) -> str:
    """``$0.12``; below a cent, enough digits to see it (``$0.0016``)."""
    if amount == 0 or amount >= 0.01:
        return f"${amount:,.2f}"
    return f"${amount:.2g}" if amount >= 1e-6 else "<$0.000001"


def _compact(count: float) -> str:
    """``950``, ``1.2k``, ``200k``, ``3.4M``."""
    for scale, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if count >= scale:
            text = f"{count / scale:.1f}".removesuffix(".0")
            return text + suffix
    return f"{count:g}"


async def _spend(url: str, run_ids: tuple[str, ...], limit: int | None) -> list[dict[str, Any]]:
    from plait_durable import open_store

    store = open_store(url)
    try:
        ids = list(run_ids) or [info.run_id for info in await store.runs(limit=limit)]
        found = []
        for run_id in ids:
            latest = await store.latest(run_id)
            if latest is None:
                raise click.UsageError(f"run {run_id!r} has no checkpoint in {url}")
            spend = spend_of(dict(latest.metadata))
            found.append({"run_id": run_id, "status": latest.status, "spend": spend})
        return found
    finally:
        await store.aclose()


def _against(spend: dict[str, Any] | None) -> str:
    if spend is None:
        return "no budget"
    if "error" in spend:
        return f"unreadable: {spend['error']}"
    run = spend["spent"].get("run", {})
    limits = spend["budget"]
    parts = []
    for unit, key in (
        ("usd", "usd"),
        ("tokens", "tokens"),
        ("model_calls", "model_calls"),
        ("tool_calls", "tool_calls"),
    ):
        used = run.get(key, 0)
        if unit == "usd":
            text = f"${used:.4f}"
            limit = f"${float(limits[unit]):.4f}" if unit in limits else None
        else:
            text, limit = str(used), (str(limits[unit]) if unit in limits else None)
        parts.append(f"{unit} {text}" + (f" / {limit}" if limit is not None else ""))
    return ", ".join(parts)


@click.command("spend", short_help="Show what runs spent against their budgets.")
@click.argument("run_ids", nargs=-1, metavar="[RUN_ID]...")
@click.option(
    "--checkpoint",
    "url",
    metavar="URL",
    default=DEFAULT_STORE,
    show_default=True,
    help="The checkpoint store the runs wrote to.",
)
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="At most N runs.")
@click.option("--json", "as_json", is_flag=True, help="Print the spend as JSON.")
def spend_command(run_ids: tuple[str, ...], url: str, limit: int | None, as_json: bool) -> None:
    """Show what each run (RUN_ID, or every run of the store, newest first) spent against
    its budget, from the ledger its latest checkpoint keeps (plait-budgets): money, tokens,
    model and tool calls, each with the run budget's limit."""
    found = anyio.run(_spend, url, run_ids, limit)
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    for row in found:
        click.echo(f"{row['run_id']}  {row['status']}  {_against(row['spend'])}")
