"""The hook ``plait-budgets`` calls, for the plugins that price models.

``plait-budgets`` declares it as it is registered (its ``plait_addhooks``), with the
registry it fills (``price``): a plugin that implements it and does not require
``plait-budgets`` marks it ``@hookimpl(optionalhook=True)``, so that it loads where
``plait-budgets`` is not installed. It is documented with the kernel's hooks, in
``docs/hooks.md``.
"""

from __future__ import annotations

from plait.spi import Register, hookspec

__all__: list[str] = []


@hookspec
def plait_register_prices(register: Register) -> None:
    """Register what a model costs, by model id: what a run's money budget prices its
    model calls with (``plait-budgets`` reads the registry, and falls back to its dated
    default table for a model no plugin prices).

    A price has ``input`` and ``output`` (US dollars per million tokens) and may have
    ``max_output_tokens`` (the worst case of a call that sets no ``max_tokens``). A model
    with no price in a run with a money budget is an error naming the model and this hook.

    :param register: ``register(model_id, price, replaces=None)``; ``replaces`` names the
        distribution whose price of that model this one overrides.
    :return: nothing; every implementation is called.
    """
