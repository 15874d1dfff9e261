"""Loading 1 MB hostile documents in every format: prints one JSON line per case.

    python tests/benchmarks/bench_hostile.py [--size 1000000] [--quick]

Issue 24 (findings 5 and 7): each hostile document is a positioned error, in time and
memory linear in its size. The budget: each document of up to 1 MB loads in 1 s
(``load_spec``, from text to the LoadError and its message), after one small load per
format (imports, lark's parser build); ``seconds_per_mb`` shows the rate, and
``cpu_seconds`` the processor time of this process (on a shared machine wall time is
inflated by the other jobs; processor time much less). Cases:

``yaml_nested``        ``workflow: [[[[…`` (crashed ruamel's C composer)
``yaml_block_nested``  ``- - - - …`` block sequences on one line
``yaml_step_refs``     ``$steps["x$steps["x…``, never closed (a quadratic regex; the
                       document is valid, so it loads)
``yaml_unknown_refs``  thousands of steps read by thousands of unknown references
``json_nested``        ``{"nodes": [[[[…``
``json_duplicate_keys`` an object of repeated keys
``json_huge_integer``  one integer of a million digits
``flow_nested``        ``a -> [[[[…``
``flow_wide``          one line of unknown names (each problem copied the line)

A flow is refused past ``MAX_TEXT`` (64 KB) before parsing, so the two flow cases also
run at just under that size (``*_at_limit``), where lark's parser does the work.

Each document is then loaded once more under ``tracemalloc`` for ``peak_mib``, the most
memory the load held at once (its own pass: tracing slows the allocations it counts);
the memory budget is 512 MiB.

Exit status 1 when a case is over budget (a benchmark's verdict; tests never time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import tracemalloc
from collections.abc import Callable

BUDGET_S = 1.0
BUDGET_MIB = 512


def _steps_refs(size: int) -> str:
    # inputs of 90 KB each (one scalar may hold 256 KB)
    chunk = '$steps["x' * 10_000
    steps = "".join(
        f"  - {{id: s{n}, type: agent, name: generator, input: '{chunk}'}}\n"
        for n in range(max(size // len(chunk), 1))
    )
    return f"workflow:\n{steps}"


def _unknown_refs(size: int) -> str:
    count = max(size // 60, 1)
    steps = "".join(f"  - {{id: s{n}, type: agent, name: generator}}\n" for n in range(count))
    refs = "".join(f"{{{{ $steps.x{n}.output }}}}" for n in range(count // 2))
    return f'workflow:\n{steps}  - {{id: last, type: agent, name: generator, input: "{refs}"}}\n'


def _duplicate_keys(size: int) -> str:
    return '{"nodes": [], "connections": [], "x": {' + ", ".join(['"k": 1'] * (size // 8)) + "}}"


def _wide_flow(size: int) -> str:
    return "a -> [" + ",".join(f"n{n}" for n in range(size // 8)) + "] -> b\n"


CASES: dict[str, tuple[str, Callable[[int], str]]] = {
    "yaml_nested": ("steps", lambda n: "workflow: " + "[" * n + "\n"),
    "yaml_block_nested": ("steps", lambda n: "workflow:\n" + "- " * (n // 2) + "x\n"),
    "yaml_step_refs": ("steps", _steps_refs),
    "yaml_unknown_refs": ("steps", _unknown_refs),
    "json_nested": ("dag", lambda n: '{"nodes": ' + "[" * n + "}"),
    "json_duplicate_keys": ("dag", _duplicate_keys),
    "json_huge_integer": (
        "dag",
        lambda n: '{"nodes": [], "connections": [], "x": ' + "9" * n + "}",
    ),
    "flow_nested": ("flow", lambda n: "a -> " + "[" * n + "\n"),
    "flow_wide": ("flow", _wide_flow),
}
FLOW_LIMIT = 64 * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per document")
    parser.add_argument("--quick", action="store_true", help="10 KB documents")
    args = parser.parse_args(argv)
    size = 10_000 if args.quick else args.size

    from plait import LoadError
    from plait_documents import load_spec

    async def generator(text: str) -> str:
        return text

    for fmt in ("steps", "dag", "flow"):  # imports and lark's parser build, measured apart
        with contextlib.suppress(LoadError):
            load_spec({"steps": "workflow: [", "dag": "{", "flow": "a ->"}[fmt], format=fmt)
    documents = [(name, fmt, make(size)) for name, (fmt, make) in CASES.items()]
    for name in ("flow_nested", "flow_wide"):
        fmt, make = CASES[name]
        documents.append((f"{name}_at_limit", fmt, make(min(size, FLOW_LIMIT - 16))))
    over = False
    for name, fmt, text in documents:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            load_spec(text, format=fmt, executors={"generator": generator})
        except LoadError as exc:
            message = str(exc)
            problems = len(exc.problems)
        else:  # hostile only in its cost (an unclosed $steps[" is plain text)
            message, problems = "", 0
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu
        scaled = seconds * 1_000_000 / len(text)
        tracemalloc.start()
        with contextlib.suppress(LoadError):
            load_spec(text, format=fmt, executors={"generator": generator})
        peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        over = over or seconds > BUDGET_S or peak_mib > BUDGET_MIB
        record = {
            "case": name,
            "chars": len(text),
            "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu_seconds, 3),
            "seconds_per_mb": round(scaled, 3),
            "peak_mib": round(peak_mib, 1),
            "problems": problems,
            "message_chars": len(message),
            "budget_s": BUDGET_S,
            "budget_mib": BUDGET_MIB,
        }
        print(json.dumps(record), flush=True)
    return 1 if over and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
