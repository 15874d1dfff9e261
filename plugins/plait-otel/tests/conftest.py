"""Spans go to an in-memory exporter on a tracer provider given to the plugin with
``plait_otel.instrument``: the process-wide provider is never set (OpenTelemetry allows
that once per process)."""

from __future__ import annotations

from collections.abc import Iterator

import plait_otel
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def restore_instrumentation() -> Iterator[None]:
    """Put the plugin back in the mode it was in (auto, on, off) after the test."""
    saved = plait_otel._mode, plait_otel._provider
    try:
        yield
    finally:
        plait_otel._mode, plait_otel._provider = saved


@pytest.fixture
def provider() -> TracerProvider:
    return TracerProvider()


@pytest.fixture
def exporter(provider: TracerProvider, restore_instrumentation: None) -> InMemorySpanExporter:
    """Every span of the test's runs, in the order they ended."""
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    plait_otel.instrument(tracer_provider=provider)
    return memory
