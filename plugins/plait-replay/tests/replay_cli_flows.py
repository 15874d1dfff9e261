"""Workflows the ``plait replay`` tests name as ``module:attr`` targets: a shell step
whose output a recorded run keeps, before and after a code change."""

from __future__ import annotations

import sys
from typing import Any

from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_executors import ShellExecutor

__all__ = ["changed", "shell"]


def _flow(suffix: str) -> Workflow:
    count = ShellExecutor(
        "count",
        [sys.executable, "-c", "import sys; print(len(sys.stdin.read()))"],
        output="json",
    )

    @executor(id="report")
    async def report(n: Any, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(f"{n} characters{suffix}")

    return WorkflowBuilder(name="count").set_start(count).add_edge(count, report).build()


def shell() -> Workflow:
    """``count`` (a program: the length of its input) -> ``report``."""
    return _flow("")


def changed() -> Workflow:
    """The same, with ``report`` changed."""
    return _flow(" in all")
