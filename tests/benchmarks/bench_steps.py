"""The YAML steps front-end: loading a 1,000-step file, and the prior-outputs block.

    python tests/benchmarks/bench_steps.py [--steps 1000] [--repeat 9] [--quick]

Prints one JSON line per case:

``load``     ``plait.load`` of a YAML file of N agent steps (every 10th step a parallel
             block of two, every step with an instruction template): ruamel.yaml parse,
             checks, the WorkflowSpec and ``Workflow.from_spec``. Budget: 200 ms for 1,000.
``block``    building one step's user message (seed 002's prior-outputs block) after K
             prior steps, for K = 10, 100, 1,000: the per-call time and the time per prior
             step, which stays flat when the cost is linear in K.
``run``      a whole run of the N-step workflow (trivial agents), per step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

BUDGET_MS = 200.0


def make_yaml(steps: int) -> str:
    lines = ["workflow:"]
    made = 0
    i = 0
    while made < steps:
        if i % 10 == 9 and steps - made >= 2:
            lines += [
                f"  - id: p{i}",
                "    type: parallel",
                "    steps:",
                f"      - {{id: s{i}a, type: agent, name: a{i % 5}}}",
                f"      - {{id: s{i}b, type: agent, name: a{(i + 1) % 5}}}",
            ]
            made += 2
        else:
            prev = f"s{i - 1}" if i % 10 not in (0,) and i > 0 else None
            lines += [f"  - id: s{i}", "    type: agent", f"    name: a{i % 5}"]
            if prev is not None:
                lines.append(f'    instruction: "Improve {{{{ $steps.{prev}.output }}}}"')
            made += 1
        i += 1
    return "\n".join(lines) + "\n"


def make_agents() -> dict[str, Any]:
    async def agent(prompt: str, instruction: str | None = None) -> str:
        return "ok"

    return {f"a{n}": agent for n in range(5)}


def median_ms(fn: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def block_state(prior: int) -> tuple[dict[str, Any], Any]:
    """A step context after ``prior`` steps, and those steps' entries (as the run's shared
    state holds them)."""
    from plait_steps._context import Entries, entry_key, record, start

    state = start("Translate and publish this draft")
    shared: dict[str, Any] = {}
    for k in range(prior):
        key = entry_key(state, f"s{k}", k + 1)
        shared[key] = {"output": f"output of step {k} " * 5, "agent": "writer"}
        state = record(state, f"s{k}", key, label=f"s{k}", who="agent: writer", attempt=1)
    return state, Entries(state["steps"], shared)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat")
    args = parser.parse_args()
    steps, repeat, sizes = args.steps, args.repeat, (10, 100, 1000)
    if args.quick:
        steps, repeat, sizes = 20, 1, (10, 20)

    import plait
    from plait_steps._context import prior_block

    text, agents = make_yaml(steps), make_agents()
    plait.load(text, format="steps", executors=agents)  # first use: imports, parser
    load = median_ms(lambda: plait.load(text, format="steps", executors=agents), repeat)
    workflow = plait.load(text, format="steps", executors=agents)
    print(
        json.dumps(
            {
                "case": "load",
                "steps": steps,
                "nodes": len(workflow.spec.nodes),
                "median_ms": round(load, 2),
                "budget_ms": BUDGET_MS,
                "within_budget": load <= BUDGET_MS,
            }
        )
    )
    for prior in sizes:
        state, entries = block_state(prior)
        calls = max(1, 2000 // prior) if not args.quick else 1
        ms = (
            median_ms(
                lambda s=state, e=entries, n=calls: [prior_block(s, e) for _ in range(n)], repeat
            )
            / calls
        )
        print(
            json.dumps(
                {
                    "case": "block",
                    "prior_steps": prior,
                    "us_per_block": round(ms * 1000, 2),
                    "ns_per_prior_step": round(ms * 1e6 / prior, 1),
                }
            )
        )
    result: dict[str, Any] = {}

    def run() -> None:
        result["r"] = workflow.run_sync("go")

    ms = median_ms(run, max(1, repeat // 3))
    print(
        json.dumps(
            {
                "case": "run",
                "steps": steps,
                "median_ms": round(ms, 2),
                "us_per_step": round(ms * 1000 / steps, 1),
                "ok": result["r"].outputs == ["ok"],
            }
        )
    )


if __name__ == "__main__":
    main()
