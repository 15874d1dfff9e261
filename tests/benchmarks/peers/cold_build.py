"""One cold build, in this fresh process: ``python cold_build.py FRAMEWORK [N]``.

Imports the framework, builds an ``N``-executor chain (default 1,000) with its public
builder (validation included) and prints one JSON line: ``import_s`` (the framework's
imports, and for Plait its plugin discovery), ``build_s`` (making the executors, wiring
them and ``build()``/``compile()``), ``total_s`` (both, counted from this script's first
statement, so the interpreter's own start-up is left out), and ``result`` (the node count,
as a check). ``tests/benchmarks/bench_cold_start.py`` runs it in a new process per sample.

Nothing is imported at module level beyond the standard library, so each framework pays
for its own imports only. The chains are the ones of the ``build1000`` workload:

- ``plait``: ``@executor`` functions and ``plait_builders.WorkflowBuilder``, after
  ``plait.get_plugin_manager()`` (entry-point discovery, every plugin registered);
- ``langgraph``: a ``StateGraph`` of plain function nodes, ``compile()``;
- ``maf``: one ``Executor`` subclass instantiated ``N`` times, ``add_chain``, ``build()``;
- ``libraries``: no chain, only the imports of the libraries outside the standard library
  that Plait's cold build imports (attrs, pluggy, typing_extensions): the floor under
  Plait's number.

No ``from __future__ import annotations`` here: MAF reads handler annotations at build time.
"""

import time

_START = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402


def plait_chain(n: int) -> tuple[float, Any]:
    import plait
    from plait import Never, WorkflowContext, executor
    from plait_builders import WorkflowBuilder

    plait.get_plugin_manager()
    imported = time.perf_counter()

    def link(i: int) -> plait.Executor:
        if i == n - 1:

            @executor(id=f"n{i}")
            async def final(x: int, ctx: WorkflowContext[Never, int]) -> None:
                await ctx.yield_output(x + 1)

            return final

        @executor(id=f"n{i}")
        async def add(x: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(x + 1)

        return add

    nodes = [link(i) for i in range(n)]
    builder = WorkflowBuilder("chain", max_supersteps=n + 1)
    builder.add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    workflow = builder.set_start(nodes[0]).build()
    return imported, len(workflow.executors)


def langgraph_chain(n: int) -> tuple[float, Any]:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    imported = time.perf_counter()

    class Counter(TypedDict):
        value: int

    def add_one(state: Counter) -> dict[str, int]:
        return {"value": state["value"] + 1}

    builder: Any = StateGraph(Counter)
    previous = START
    for i in range(n):
        builder.add_node(f"step{i}", add_one)
        builder.add_edge(previous, f"step{i}")
        previous = f"step{i}"
    builder.add_edge(previous, END)
    graph = builder.compile()
    return imported, len(graph.builder.nodes)


def maf_chain(n: int) -> tuple[float, Any]:
    from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler
    from typing_extensions import Never

    imported = time.perf_counter()

    class AddOne(Executor):
        @handler
        async def add_one(self, value: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(value + 1)

    class AddOneAndYield(Executor):
        @handler
        async def add_one(self, value: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(value + 1)

    executors = [*(AddOne(id=f"step{i}") for i in range(n - 1)), AddOneAndYield(id=f"step{n - 1}")]
    builder = WorkflowBuilder(max_iterations=n + 10, start_executor=executors[0])
    builder.add_chain(executors)
    workflow = builder.build()
    return imported, len(workflow.executors)


def libraries(n: int) -> tuple[float, Any]:
    """Only the libraries outside the standard library that Plait's cold build imports
    (attrs, pluggy, typing_extensions; plugin discovery's importlib.metadata and packaging
    are imported only when the plugin manifest is not current, as in the first process
    after an install): the floor under Plait's cold build, which no change to Plait's own
    code can go below. Nothing is built (``result`` is ``n``)."""
    import attrs  # noqa: F401
    import pluggy  # noqa: F401
    import typing_extensions  # noqa: F401

    return time.perf_counter(), n


CHAINS = {
    "plait": plait_chain,
    "langgraph": langgraph_chain,
    "maf": maf_chain,
    "libraries": libraries,
}


def main() -> None:
    framework = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    imported, result = CHAINS[framework](n)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "framework": framework,
                "n": n,
                "import_s": round(imported - _START, 6),
                "build_s": round(done - imported, 6),
                "total_s": round(done - _START, 6),
                "result": result,
            }
        )
    )


if __name__ == "__main__":
    main()
