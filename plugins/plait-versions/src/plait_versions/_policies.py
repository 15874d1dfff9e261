"""Which policy a resume of a changed workflow applies: the policies' names (the one list
of them: ``plait resume --on-change`` asks for it through the ``plait_change_policies``
hook), a policy per workflow (:func:`set_policy`), and the one a resume gets
(:func:`policy_for`). Light: ``plait resume --help`` lists the names."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plait import Workflow

__all__ = ["POLICIES", "policy_for", "set_policy"]

#: The policies for a changed workflow, in the order they are listed.
POLICIES = ("reject", "pin", "migrate", "accept")

_policies: dict[str, str] = {}


def _check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"on_change must be one of {', '.join(POLICIES)}, got {policy!r}")
    return policy


def set_policy(workflow: str, policy: str | None) -> None:
    """Set the policy of every run of workflow ``workflow`` (by name) in this process,
    unless a resume names its own; ``None`` drops it (back to ``reject``).

    :raises ValueError: ``policy`` is not one of :data:`POLICIES`.
    """
    if policy is None:
        _policies.pop(workflow, None)
    else:
        _policies[workflow] = _check_policy(policy)


def policy_for(workflow: Workflow, on_change: str | None = None) -> str:
    """The policy a resume of ``workflow`` applies: ``on_change`` when given, else the
    workflow's (:func:`set_policy`), else ``reject``."""
    if on_change is not None:
        return _check_policy(on_change)
    return _policies.get(workflow.name or "", "reject")
