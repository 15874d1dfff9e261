"""Run budgets for Plait: tokens, money, model and tool calls, supersteps and wall time.

- :class:`Budget`: limits in each unit, what to do when one runs out (``fail``, ``route``,
  ``degrade``) and the budgets of the nodes and fragments inside it (``scopes``); the run
  option ``budget`` (:class:`BudgetOptions`) takes one, its dict, or ``--budget`` text
  (:func:`parse_budget`).
- The ledger (:class:`Ledger`): before a model call of plait-llm's ``agent`` starts, its
  worst case is reserved against every budget around it, through the kernel's outside-call
  seam (this distribution's run observer adds an answerer of kind ``llm.prompt`` calls to
  each invocation: :func:`plait.spi.add_answerer`); a call that does not fit does not start
  (:class:`BudgetExceededError`).
- ``on_exhausted="ask"``: a person approves more (:class:`BudgetRequest`, answered with a
  :class:`BudgetApproval`) while the run waits.
- :class:`Price`: what a model costs; the ``plait_register_prices`` hook, and a dated
  default table (``prices.json``, read on a money budget's first unregistered model) for
  the models no plugin prices.

Loading plugins imports this module alone; a run without a budget gets no observer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import PluginManager, Register, lazy_exports, observes_when

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._ask import (
        BudgetApproval as BudgetApproval,
        BudgetRequest as BudgetRequest,
    )
    from ._budget import (
        ACTIONS as ACTIONS,
        UNITS as UNITS,
        Budget as Budget,
        as_budget as as_budget,
        parse_budget as parse_budget,
    )
    from ._command import (
        budget_panel as budget_panel,
        spend_of as spend_of,
        spend_summary as spend_summary,
    )
    from ._ledger import (
        Account as Account,
        BudgetExceededError as BudgetExceededError,
        Counts as Counts,
        Ledger as Ledger,
        Meter as Meter,
        Ticket as Ticket,
        estimate_tokens as estimate_tokens,
    )
    from ._observer import (
        BudgetObserver as BudgetObserver,
        InvocationBudget as InvocationBudget,
    )
    from ._options import BudgetOptions as BudgetOptions
    from ._prices import (
        DEFAULT_TABLE as DEFAULT_TABLE,
        Price as Price,
        UnpricedModelError as UnpricedModelError,
        default_prices as default_prices,
    )


@plait.hookimpl
def plait_addhooks(pluginmanager: PluginManager) -> None:
    """Declare the hook this plugin reads prices from (:mod:`plait_budgets.hookspecs`) and
    its registry, ``price`` (a :class:`Price`: ``input``, ``output``)."""
    # (not `from . import hookspecs`, which asks this module's lazy exports first)
    import plait_budgets.hookspecs as hookspecs

    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_registry("plait_register_prices", "price", ("input", "output"))


@plait.hookimpl
def plait_register_run_options(register: Register) -> None:
    """Declare the run option ``budget`` (:class:`BudgetOptions`)."""
    from ._options import BudgetOptions

    register("budgets", BudgetOptions)


@observes_when(options=("budget",), sections=("budgets",))
@plait.hookimpl
def plait_observe_run(
    run_id: str, workflow: Any, superstep: int, resumed: Mapping[str, Any] | None, options: Any
) -> Any:
    """Meter a run that sets a budget, resumes a budgeted one, or runs nested in a
    budgeted one (else ``None``: the run is not observed by this plugin). Declared
    (:func:`plait.spi.observes_when`): a run that sets no budget, in a process that has
    not imported this module (so no budgeted run is around it), does not import it."""
    if options is None or options.value("budget") is None:
        from plait.spi import outside_calls

        # a run nested in a budgeted one finds its budget among the calls' answerers
        if not outside_calls.get() and not (resumed and "budgets" in resumed):
            return None
    from ._observer import observe

    return observe(run_id, workflow, options, plait.get_plugin_manager(), resumed)


@plait.hookimpl
def plait_register_type_hooks(register: Register) -> None:
    """Declare the ``ask`` action's request (:class:`BudgetRequest`, and its answer's type
    :class:`BudgetApproval` with it) to checkpoints, so a run waiting on a person resumes
    in another process. Registered lazily: imported when a checkpoint's types are first
    needed."""
    from plait.spi import lazy

    hooks = lazy("plait_budgets._ask:REQUEST_HOOKS", provides=("type", "structure", "unstructure"))
    register("budgets.request", hooks)


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_register_commands(cli: Any) -> None:
    """Add ``plait spend``: what runs spent against their budgets (its module is imported
    when the command runs)."""
    from plait_cli import lazy_command

    cli.add_command(
        lazy_command(
            "spend",
            "plait_budgets._command:spend_command",
            "Show what runs spent against their budgets.",
        )
    )


@plait.hookimpl(optionalhook=True)  # a hook of plait-cli's
def plait_run_columns() -> dict[str, Any]:
    """The ``spend`` column of ``plait runs`` and ``plait ui``: each run's spend against its
    budget (:func:`spend_summary`), from the metadata the listing read."""
    from ._command import spend_cell

    return {"spend": spend_cell}


@plait.hookimpl(optionalhook=True)  # a hook of plait-ui's
def plait_run_panels(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``budget`` panel of a run's page in ``plait ui``: a bar per limited unit and
    the spend per node, from the ledger the shown checkpoint keeps (``None``: the run has
    no budget)."""
    from ._command import budget_panel

    panel = budget_panel(metadata)
    return None if panel is None else {"budget": panel}


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
