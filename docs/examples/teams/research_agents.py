"""The agents and the manager of the Magentic example (research.yaml): a scripted manager
(plans, then asks the researcher, then the writer, then answers) and two Python agents."""

from plait_teams import Conversation, MagenticContext


class ResearchManager:
    """A Magentic manager written in Python: its ledgers are dicts, checked against the
    ledgers' schemas as an LLM's would be."""

    async def plan(self, context: MagenticContext) -> dict:
        return {"facts": f"The task: {context.task}", "plan": "researcher finds, writer writes"}

    async def progress(self, context: MagenticContext) -> dict:
        speaker = "researcher" if context.round == 0 else "writer"
        return {
            "is_request_satisfied": context.round >= 2,
            "is_in_loop": False,
            "is_progress_being_made": True,
            "next_speaker": speaker,
            "instruction": "Find three facts." if speaker == "researcher" else "Write it up.",
        }

    async def final_answer(self, context: MagenticContext) -> str:
        return context.conversation.by("writer")[-1].text


manager = ResearchManager()


async def researcher(conversation: Conversation) -> str:
    """Finds facts."""
    return "Otters hold hands; they use tools; they eat sea urchins."


async def writer(conversation: Conversation) -> str:
    """Writes a short report from what was found."""
    facts = conversation.by("researcher")[-1].text
    return f"Report: {facts}"
