"""OpenTelemetry tracing for Plait runs.

Installed, this plugin traces every run once OpenTelemetry is set up in the process (a
global tracer provider from the SDK, as ``opentelemetry.trace.set_tracer_provider`` or
``opentelemetry-instrument`` sets it): a span per run, per superstep and per executor
invocation, invocations linked to the invocations that sent them their messages. Or give
it a tracer provider of your own with :func:`instrument`.

Until then it costs nothing: loading the plugin imports no OpenTelemetry module, and a run
in a process that never imported ``opentelemetry.trace`` is not observed at all. Disable
the plugin with ``PLAIT_DISABLE_PLUGINS=otel``, or for this process with
:func:`uninstrument`.

Spans (all ``INTERNAL``):

- ``workflow <name>`` for a run: a child of the current span when the run starts (a
  nested workflow's run: of the invoking executor's span); attributes ``plait.run_id``,
  ``plait.workflow``, ``plait.resumed_after`` (resumed runs), and at the end
  ``plait.status`` and ``plait.supersteps``;
- ``superstep``: a child of the run, ``plait.superstep`` and ``plait.executor_ids``;
- ``invoke <executor id>``: a child of its superstep, linked to the invocations whose
  messages it received; ``plait.executor_id``, ``plait.superstep``, ``plait.index``,
  ``plait.message_type``, at the end ``plait.attempt`` and ``plait.status``; an event
  ``plait.retry`` per retried attempt. The span is current while the handler runs, so
  spans the handler makes (an HTTP client's, an LLM call's) are its children.

A failed run or invocation has status ``ERROR`` and the exception recorded.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from plait import hookimpl
from plait.spi import observes_when

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider
    from plait.spi import RunObserver

__all__ = ["instrument", "is_instrumented", "uninstrument"]

#: "auto": trace with the global provider once one is set; "on": with ``_provider``
#: (None: the global one, set or not); "off": never.
_mode = "auto"
_provider: TracerProvider | None = None
_tracers: dict[int, tuple[Any, Tracer]] = {}


def instrument(tracer_provider: TracerProvider | None = None) -> None:
    """Trace every run of this process with ``tracer_provider`` (default: the global one,
    even before one is set).
    """
    global _mode, _provider
    _mode, _provider = "on", tracer_provider


def uninstrument() -> None:
    """Trace no run of this process, whatever tracer provider is set, until
    :func:`instrument` is called.
    """
    global _mode, _provider
    _mode, _provider = "off", None


def is_instrumented() -> bool:
    """Whether a run started now would be traced."""
    return _tracer() is not None


def _tracer() -> Tracer | None:
    if _mode == "off":
        return None
    if _mode == "auto" and "opentelemetry.trace" not in sys.modules:
        return None  # nobody set OpenTelemetry up in this process: import nothing
    from opentelemetry import trace

    provider = _provider or trace.get_tracer_provider()
    if _mode == "auto" and isinstance(
        provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    ):
        return None  # the API's default: no SDK configured, nothing would be recorded
    found = _tracers.get(id(provider))
    if found is None or found[0] is not provider:
        from importlib.metadata import version

        tracer = provider.get_tracer("plait_otel", version("plait-otel"))
        found = _tracers[id(provider)] = (provider, tracer)
    return found[1]


@observes_when(modules=("opentelemetry.trace",))
@hookimpl
def plait_observe_run(
    run_id: str, workflow: Any, superstep: int, resumed: Any, options: Any
) -> RunObserver | None:
    """A span observer for the run, when tracing is on (see the module docstring); a
    resumed run's span links to the span of the run it continues."""
    tracer = _tracer()
    if tracer is None:
        return None
    from ._observer import start_run

    return start_run(tracer, run_id, workflow, superstep, resumed, options)
