"""A handoff team: triage answers first and hands the conversation to the refund or the
orders desk; the orders desk asks the user for an order number."""

from plait_teams import Conversation, Decision, Handoff, HandoffBuilder


async def triage(conversation: Conversation) -> object:
    """Sends each question to its desk."""
    question = conversation[-1].text
    if "refund" in question:
        return Handoff("refund", "the user wants their money back")
    if "order" in question:
        return Handoff("orders", "a question about an order")
    return "We answer refunds and orders."


async def refund(conversation: Conversation) -> str:
    """Refunds payments."""
    return "Your refund is on its way."


async def orders(conversation: Conversation) -> object:
    """Answers questions about orders."""
    if any(ch.isdigit() for ch in conversation[-1].text):
        return f"Order {conversation[-1].text} ships tomorrow."
    return Decision(text="Which order number?", needs_user=True)


desk = (
    HandoffBuilder("desk")
    .participants([triage, refund, orders])
    .with_start_agent("triage")
    .add_handoff("triage", ["refund", "orders"])
    .add_handoff("refund", ["triage"])
    .build()
)

if __name__ == "__main__":
    print(desk.run_sync("I want a refund").outputs[0].last.text)
