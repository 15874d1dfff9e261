"""Expression evaluation after compilation, and the cold start: prints one JSON line per case.

    python tests/benchmarks/bench_expressions.py [--number 20000] [--repeat 9] [--quick]
        [--frameworks plait,jmespath,cel]

Cases, over ``{"steps": {"qa": {"output": {"is_approved": True, ...}}}, "attempts": 1}``:

``condition``  ``steps.qa.output.is_approved == true && attempts < 3`` (the issue's budget:
               a median of 10 µs or less per evaluation)
``template``   ``compile_template("{{ name }} scored {{ steps.qa.output.score * 100 }}%").render``
``cold_start`` in a fresh process: importing ``plait_expr``, then the first ``compile``
               (the parser's tables imported: they are made from the grammar ahead of
               time, ``python -m plait_expr._generate``, so nothing is built and lark is
               never imported — the issue's goal: 5 ms or less, it was 66 ms), then a
               second; wall and CPU time (``*_cpu_ms``: what a loaded machine inflates
               least)

Peers, measured only when installed (never part of the workspace; see the report in
tests/benchmarks/RESULTS.md): ``jmespath`` (the condition needs backtick literals:
``... == `true` && attempts < `3```) and ``cel`` (cel-python, with the activation converted
to CEL types once, outside the timing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

CONDITION = "steps.qa.output.is_approved == true && attempts < 3"
TEMPLATE = "{{ name }} scored {{ steps.qa.output.score * 100 }}%"
DATA: dict[str, Any] = {
    "steps": {"qa": {"output": {"is_approved": True, "score": 0.5}}},
    "attempts": 1,
    "name": "Ada",
}

COLD = """
import json, sys, time
t0 = time.perf_counter()
import plait_expr
t1, c1 = time.perf_counter(), time.process_time()
language = plait_expr.PlaitLanguage()
language.compile("attempts < 3")
t2, c2 = time.perf_counter(), time.process_time()
language.compile("steps.qa.output.is_approved == true && attempts < 3")
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_compile_ms": (t2 - t1) * 1e3,
                  "first_compile_cpu_ms": (c2 - c1) * 1e3, "second_compile_ms": (t3 - t2) * 1e3,
                  "lark_imported": "lark" in sys.modules}))
"""


def per_call_us(fn: Callable[[], Any], number: int, repeat: int) -> dict[str, float]:
    """Median and best of ``repeat`` batches of ``number`` calls, in µs per call."""
    for _ in range(min(number, 1000)):  # warm up
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return {"median_us": round(statistics.median(samples), 3), "best_us": round(min(samples), 3)}


def plait_cases(number: int, repeat: int) -> list[dict[str, Any]]:
    from plait_expr import PlaitLanguage

    language = PlaitLanguage()
    language.compile("warm_up")  # the parser is built once per process: see cold_start
    start = time.perf_counter()
    condition = language.compile(CONDITION)
    compile_us = (time.perf_counter() - start) * 1e6
    template = language.compile_template(TEMPLATE)
    assert condition.evaluate(DATA) is True
    assert template.render(DATA) == "Ada scored 50.0%"
    return [
        {
            "case": "condition",
            "expression": CONDITION,
            "result": condition.evaluate(DATA),
            "compile_us": round(compile_us, 1),
            **per_call_us(lambda: condition.evaluate(DATA), number, repeat),
        },
        {
            "case": "template",
            "expression": TEMPLATE,
            "result": template.render(DATA),
            **per_call_us(lambda: template.render(DATA), number, repeat),
        },
    ]


def jmespath_cases(number: int, repeat: int) -> list[dict[str, Any]]:
    import jmespath

    text = "steps.qa.output.is_approved == `true` && attempts < `3`"
    compiled = jmespath.compile(text)
    return [
        {
            "case": "condition",
            "expression": text,
            "result": compiled.search(DATA),
            **per_call_us(lambda: compiled.search(DATA), number, repeat),
        }
    ]


def cel_cases(number: int, repeat: int) -> list[dict[str, Any]]:
    import celpy

    env = celpy.Environment()
    program = env.program(env.compile(CONDITION))
    activation = {key: celpy.json_to_cel(value) for key, value in DATA.items()}
    return [
        {
            "case": "condition",
            "expression": CONDITION,
            "result": bool(program.evaluate(activation)),
            **per_call_us(lambda: program.evaluate(activation), number, repeat),
        }
    ]


def cold_start(repeat: int) -> dict[str, Any]:
    """The median (and best) of ``repeat`` fresh processes, each with the modules' bytecode
    already compiled, as an installed package has it (kept in a temporary
    ``PYTHONPYCACHEPREFIX``, written by a first, unmeasured run)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        records = []
        for _ in range(repeat + 1):
            done = subprocess.run(
                [sys.executable, "-c", COLD],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
                env=env,
            )
            records.append(json.loads(done.stdout))
    records = records[1:]
    out: dict[str, Any] = {"processes": len(records)}
    for key, value in records[0].items():
        if isinstance(value, float):
            values = [r[key] for r in records]
            out[key] = round(statistics.median(values), 2)
            out[key.replace("_ms", "_best_ms")] = round(min(values), 2)
        else:
            out[key] = any(r[key] for r in records)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--frameworks", default="plait,jmespath,cel")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.number, args.repeat = 50, 1
    cases = {"plait": plait_cases, "jmespath": jmespath_cases, "cel": cel_cases}
    for framework in args.frameworks.split(","):
        try:
            records = cases[framework](args.number, args.repeat)
        except ImportError as exc:
            print(json.dumps({"framework": framework, "skipped": f"not installed: {exc}"}))
            continue
        for record in records:
            print(json.dumps({"benchmark": "expressions", "framework": framework, **record}))
        if framework == "plait":
            print(
                json.dumps(
                    {
                        "benchmark": "expressions",
                        "framework": "plait",
                        "case": "cold_start",
                        **cold_start(args.repeat),
                    }
                )
            )


if __name__ == "__main__":
    main()
