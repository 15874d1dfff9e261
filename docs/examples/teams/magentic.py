"""A Magentic team: a manager (here Python; LLMMagenticManager asks a model) plans, then
leads a researcher and a writer round by round until the request is satisfied."""

from plait_teams import Conversation, MagenticBuilder, MagenticContext


class LedgerKeeper:
    """Answers the manager's three questions: a plan, each round's progress, the answer."""

    async def plan(self, context: MagenticContext) -> dict:
        return {"facts": f"Asked: {context.task}", "plan": "the scout finds, the scribe writes"}

    async def progress(self, context: MagenticContext) -> dict:
        speaker = ("scout", "scribe")[context.round % 2]
        return {
            "is_request_satisfied": context.round >= 2,
            "is_in_loop": False,
            "is_progress_being_made": True,
            "next_speaker": speaker,
            "instruction": f"{speaker}, your turn",
        }

    async def final_answer(self, context: MagenticContext) -> str:
        return context.conversation.by("scribe")[-1].text


async def scout(conversation: Conversation) -> str:
    """Finds facts."""
    return "Otters hold hands while they sleep."


async def scribe(conversation: Conversation) -> str:
    """Writes the note."""
    return "Note: " + conversation.by("scout")[-1].text


magentic = (
    MagenticBuilder("research")
    .participants([scout, scribe])
    .with_manager(LedgerKeeper(), max_round_count=10, max_stall_count=3, max_reset_count=2)
    .build()
)

if __name__ == "__main__":
    print(magentic.run_sync("a note on otters").outputs[0].last.text)
