"""The typed facade over the non-registry hooks: no kernel code calls ``pm.hook.x(...)``
untyped (tox's pattern). :class:`~plait.spi.PluginManager` inherits it.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ._observer import RunObserver

__all__ = ["HookFacade", "HookObserver"]


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

    def notify_superstep_finished(self, run_id: str, superstep: int, ids: list[str]) -> None:
        """Call ``plait_superstep_finished``."""
        self.pm.hook.plait_superstep_finished(run_id=run_id, superstep=superstep, executor_ids=ids)

    def notify_run_finished(self, run_id: str, status: str, error: BaseException | None) -> None:
        """Call ``plait_run_finished``."""
        self.pm.hook.plait_run_finished(run_id=run_id, status=status, error=error)

    def observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Any = None
    ) -> RunObserver | None:
        """The one observer of this run, or ``None`` — at once, and without calling any
        hook, when no plugin observes runs: what ``plait_observe_run`` returns, plus the
        ``plait_superstep_finished`` and ``plait_run_finished`` hooks as an observer
        (:class:`HookObserver`). Calls ``plait_run_started`` first."""
        started, superstep_hook, finished, observe = self.observers()
        if not (started or superstep_hook or finished or observe):
            return None
        if started:
            self.pm.hook.plait_run_started(run_id=run_id, workflow=workflow)
        found = []
        if observe:
            found = self.pm.hook.plait_observe_run(
                run_id=run_id, workflow=workflow, superstep=superstep, resumed=resumed
            )  # implementations that return None are left out by pluggy
        from ._observer import combine

        if superstep_hook or finished:
            found = [HookObserver(self, run_id), *found]
        return combine(found)


class HookObserver:
    """The ``plait_superstep_finished`` and ``plait_run_finished`` hooks, as a
    :class:`~plait.spi.RunObserver` of one run: the runner has one seam, and these
    hooks are told through it (what they are not told of, it ignores)."""

    def __init__(self, manager: Any, run_id: str) -> None:
        self.manager = manager
        self.run_id = run_id
        self.executor_ids: tuple[str, ...] = ()

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.executor_ids = executor_ids

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        if error is None:
            self.manager.notify_superstep_finished(self.run_id, superstep, list(self.executor_ids))

    def run_finished(self, status: str, error: BaseException | None) -> None:
        self.manager.notify_run_finished(self.run_id, status, error)

    def invocation_started(self, invocation: Any) -> None:
        return None

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        return None

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        return None

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        return None

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        return None

    def checkpoint_metadata(self) -> None:
        return None
