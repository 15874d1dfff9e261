"""The typed facade over the non-registry hooks: no kernel code calls ``pm.hook.x(...)``
untyped (tox's pattern). :class:`~plait.plugins.PluginManager` inherits it.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["HookFacade"]


class HookFacade:
    """One typed method per observer hook (the command hook is on the manager, which loads
    plugins first)."""

    pm: pluggy.PluginManager
    _observers: tuple[bool, bool, bool] | None

    def observers(self) -> tuple[bool, bool, bool]:
        """Whether any plugin implements run_started, superstep_finished, run_finished."""
        if self._observers is None:
            hook = self.pm.hook
            self._observers = (
                bool(hook.plait_run_started.get_hookimpls()),
                bool(hook.plait_superstep_finished.get_hookimpls()),
                bool(hook.plait_run_finished.get_hookimpls()),
            )
        return self._observers

    def notify_run_started(self, run_id: str, workflow: Any) -> None:
        """Call ``plait_run_started``."""
        self.pm.hook.plait_run_started(run_id=run_id, workflow=workflow)

    def notify_superstep_finished(self, run_id: str, superstep: int, ids: list[str]) -> None:
        """Call ``plait_superstep_finished``."""
        self.pm.hook.plait_superstep_finished(run_id=run_id, superstep=superstep, executor_ids=ids)

    def notify_run_finished(self, run_id: str, status: str, error: BaseException | None) -> None:
        """Call ``plait_run_finished``."""
        self.pm.hook.plait_run_finished(run_id=run_id, status=status, error=error)
