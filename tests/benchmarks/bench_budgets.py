"""What a budget costs per model call: one reservation and its settlement on the ledger.

    python tests/benchmarks/bench_budgets.py [--n 100000] [--repeat 9] [--depth 3]

Prints one JSON line per mode: microseconds per reservation (the minimum and the median of
``--repeat`` timed rounds of ``--n`` calls, after a warm-up):

* ``reserve`` — ``InvocationBudget.call`` on an ``llm.prompt`` request, as the outside-call
  seam passes plait-llm's agent's model call to it (the prompt's size estimated, the worst
  case priced, checked and reserved against ``--depth`` nested budgets: run, fragment, node,
  the call passed on, and settled from the answer's usage);
* ``barrier`` — the same, plus the superstep barrier's release of the held slack, once per
  call (a barrier releases every call of its superstep at once, so this is the most it adds).

The goal (issue 40) is under 5 µs per reservation. With no budget set, a run gets no
observer and a model call reads one context variable: chain1000 and fanout1000 of
``tests/benchmarks/peers/compare.py`` measure that path against main.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from decimal import Decimal
from typing import Any


def _meter(depth: int) -> Any:
    from plait_budgets import Budget, Ledger, Price
    from plait_budgets._observer import InvocationBudget

    price = Price(input=2.5, output=10.0, max_output_tokens=4096)
    ledger = Ledger(lambda model_id: price)
    names = ["run", "research/", "research/writer"][:depth]
    accounts = tuple(
        ledger.account(name, Budget(usd=Decimal(10**9), tokens=10**15, model_calls=10**12))
        for name in names
    )
    return ledger, InvocationBudget(ledger, accounts, "research/writer")


def _round(n: int, depth: int, barrier: bool) -> float:
    import anyio

    ledger, budget = _meter(depth)
    prompt = "Summarize the findings of the research team in three sentences. " * 4
    request = {"model": "gpt-4o", "prompt": prompt, "options": {"max_tokens": 256}}
    answer = {"text": "...", "usage": {"input": 60, "output": 120}}

    async def invoke(request: Any) -> Any:
        return answer

    async def calls() -> float:
        started = time.perf_counter()
        for _ in range(n):
            await budget.call("llm.prompt", request, invoke)
            if barrier:
                ledger.barrier()
        return time.perf_counter() - started

    return anyio.run(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--depth", type=int, default=3, choices=(1, 2, 3))
    args = parser.parse_args()
    for mode in ("reserve", "barrier"):
        _round(min(args.n, 1000), args.depth, mode == "barrier")  # warm-up
        times = [_round(args.n, args.depth, mode == "barrier") for _ in range(args.repeat)]
        per_call = [t / args.n * 1e6 for t in times]
        print(
            json.dumps(
                {
                    "mode": mode,
                    "depth": args.depth,
                    "n": args.n,
                    "min_us": round(min(per_call), 3),
                    "median_us": round(statistics.median(per_call), 3),
                }
            )
        )


if __name__ == "__main__":
    main()
