"""The typed facade over the non-registry hooks: no kernel code calls ``pm.hook.x(...)``
untyped (tox's pattern). :class:`~plait.plugins.PluginManager` inherits it.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .observe import RunObserver

__all__ = ["HookFacade"]


class HookFacade:
    """One typed method per observer hook (the command hook is on the manager, which loads
    plugins first)."""

    pm: pluggy.PluginManager
    _observers: tuple[bool, bool, bool, bool] | None

    def observers(self) -> tuple[bool, bool, bool, bool]:
        """Whether any plugin implements run_started, superstep_finished, run_finished,
        observe_run."""
        if self._observers is None:
            hook = self.pm.hook
            self._observers = (
                bool(hook.plait_run_started.get_hookimpls()),
                bool(hook.plait_superstep_finished.get_hookimpls()),
                bool(hook.plait_run_finished.get_hookimpls()),
                bool(hook.plait_observe_run.get_hookimpls()),
            )
        return self._observers

    def notify_run_started(self, run_id: str, workflow: Any) -> None:
        """Call ``plait_run_started``."""
        self.pm.hook.plait_run_started(run_id=run_id, workflow=workflow)

    def notify_superstep_finished(self, run_id: str, superstep: int, ids: list[str]) -> None:
        """Call ``plait_superstep_finished``."""
        self.pm.hook.plait_superstep_finished(run_id=run_id, superstep=superstep, executor_ids=ids)

    def notify_run_finished(
        self,
        run_id: str,
        status: str,
        error: BaseException | None,
        observer: RunObserver | None = None,
    ) -> None:
        """Call ``plait_run_finished`` (if a plugin implements it) and tell the run's
        observer, if it has one."""
        if self.observers()[2]:
            self.pm.hook.plait_run_finished(run_id=run_id, status=status, error=error)
        if observer is not None:
            observer.run_finished(status, error)

    def observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Any = None
    ) -> RunObserver | None:
        """Call ``plait_observe_run``: the observer of this run, or ``None`` (at once, and
        without calling any hook, when no plugin implements it)."""
        if not self.observers()[3]:
            return None
        found = self.pm.hook.plait_observe_run(
            run_id=run_id, workflow=workflow, superstep=superstep, resumed=resumed
        )
        if not found:  # every implementation returned None (pluggy leaves those out)
            return None
        from .observe import combine

        return combine(found)
