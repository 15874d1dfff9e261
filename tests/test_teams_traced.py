"""A team's turns in OpenTelemetry (plait-otel): each turn is an invocation span of its
participant under the span of its own superstep, as for any other node."""

from __future__ import annotations

from collections.abc import Iterator

import plait_otel
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from plait_teams import Conversation, GroupChatBuilder


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans into memory, on a provider given to the plugin (never the process-wide one)."""
    saved = plait_otel._mode, plait_otel._provider
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    plait_otel.instrument(tracer_provider=provider)
    try:
        yield memory
    finally:
        plait_otel._mode, plait_otel._provider = saved


def test_each_turn_is_an_invocation_span_in_its_superstep(exporter: InMemorySpanExporter) -> None:
    async def writer(conversation: Conversation) -> str:
        return "draft"

    async def critic(conversation: Conversation) -> str:
        return "fine"

    chat = GroupChatBuilder("chat").participants([writer, critic]).with_max_rounds(3).build()
    chat.run_sync("a slogan")
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    turns = [
        (s.name, int(str(s.attributes["plait.superstep"])), by_id[s.parent.span_id].name)
        for s in spans
        if s.name in ("invoke writer", "invoke critic") and s.attributes and s.parent
    ]
    assert sorted(turns, key=lambda t: t[1]) == [
        ("invoke writer", 2, "superstep"),
        ("invoke critic", 4, "superstep"),
        ("invoke writer", 6, "superstep"),
    ]
    managers = [s for s in spans if s.name == "invoke manager"]
    assert len(managers) == 4  # the task and each of the three replies
