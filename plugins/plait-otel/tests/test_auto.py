"""Without ``instrument()``: the plugin follows the process-wide tracer provider, and
imports nothing of OpenTelemetry while nobody set it up. Each case runs in a fresh
interpreter, since the global provider can be set once per process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

RUN_A_CHAIN = """
import json, sys
import plait
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder

@executor(id="a")
async def a(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)

@executor(id="b")
async def b(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)

workflow = WorkflowBuilder("auto").add_edge(a, b).set_start(a).build()
plugins = {info.name: info.status for info in plait.get_plugin_manager().describe()}
"""


def run_python(code: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_nobody_set_opentelemetry_up_so_nothing_of_it_is_imported() -> None:
    found = run_python(
        RUN_A_CHAIN
        + """
import plait_otel
loaded = "opentelemetry" in sys.modules
result = workflow.run_sync("x")
print(json.dumps({
    "otel": plugins.get("otel"),
    "outputs": result.outputs,
    "imported_on_load": loaded,
    "imported_after_run": sorted(m for m in sys.modules if m.startswith("opentelemetry")),
    "instrumented": plait_otel.is_instrumented(),
    "observer": repr(plait.get_plugin_manager().observe_run("r", workflow, 0)),
}))
"""
    )
    assert found == {
        "otel": "loaded",
        "outputs": ["x"],
        "imported_on_load": False,
        "imported_after_run": [],
        "instrumented": False,
        "observer": "None",  # so runs keep the runner's plain methods
    }


def test_the_api_alone_traces_nothing() -> None:
    found = run_python(
        RUN_A_CHAIN
        + """
import plait_otel
from opentelemetry import trace  # imported, but no SDK provider was set
result = workflow.run_sync("x")
print(json.dumps({"outputs": result.outputs, "instrumented": plait_otel.is_instrumented()}))
"""
    )
    assert found == {"outputs": ["x"], "instrumented": False}


def test_a_global_sdk_provider_turns_tracing_on() -> None:
    found = run_python(
        RUN_A_CHAIN
        + """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
workflow.run_sync("x", backend="trio")
print(json.dumps(sorted(span.name for span in exporter.get_finished_spans())))
"""
    )
    assert found == ["invoke a", "invoke b", "superstep", "superstep", "workflow auto"]
