"""Hello, Plait: two executors and one edge.

Run it with ``python docs/examples/hello.py``; it prints ``DLROW OLLEH``.
"""

from __future__ import annotations

from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@executor(id="upper")
async def upper(text: str, ctx: WorkflowContext[str]) -> None:
    """Send the text on, in capitals."""
    await ctx.send_message(text.upper())


@executor(id="reverse")
async def reverse(text: str, ctx: WorkflowContext[Never, str]) -> None:
    """Yield the text backwards as the workflow's output."""
    await ctx.yield_output(text[::-1])


workflow = WorkflowBuilder("hello").add_edge(upper, reverse).set_start(upper).build()

if __name__ == "__main__":
    result = workflow.run_sync("hello world")
    for output in result.outputs:
        print(output)
