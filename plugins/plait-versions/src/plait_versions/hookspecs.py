"""The hook ``plait-versions`` calls, for the plugins that publish migrations.

``plait-versions`` declares it as it is registered (its ``plait_addhooks``), with the
registry it fills (``migration``): a plugin that implements it and does not require
``plait-versions`` marks it ``@hookimpl(optionalhook=True)``, so that it loads where
``plait-versions`` is not installed. It is documented with the kernel's hooks, in
``docs/hooks.md``.
"""

from __future__ import annotations

from plait.spi import Register, hookspec

__all__: list[str] = []


@hookspec
def plait_register_migrations(register: Register) -> None:
    """Register migrations: functions that carry a stored run of a workflow from its
    version N to N+1.

    A migration has ``workflow`` (the workflow's name), ``from_version`` (N) and
    ``migrate(snapshot)``, which takes a run's snapshot and returns the new one;
    ``plait-versions`` defines them (``plait_versions.Migration``), chains them at
    resume and in ``plait compat``, and checks what they return against the new
    workflow's declared types before anything runs. Two migrations of the same workflow
    from the same version are an error naming both distributions.

    :param register: ``register(name, migration, replaces=None)``; by convention the name
        is ``"<workflow>@<from_version>"``.
    :return: nothing; every implementation is called.
    """
