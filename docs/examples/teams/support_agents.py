"""The agents of the support desk examples (support.yaml, support.json): a triage agent
that hands off, a refund desk, and an orders desk that asks the user for a number."""

from plait_teams import Conversation, Decision, Handoff


def _question(conversation: Conversation) -> str:
    return next(m.text for m in reversed(conversation.messages) if m.role == "user")


async def triage(conversation: Conversation) -> object:
    """Sends each question to the desk that answers it."""
    question = _question(conversation)
    if "refund" in question or "money back" in question:
        return Handoff("refund", "the user wants their money back")
    if "order" in question:
        return Handoff("orders", "a question about an order")
    return "We answer refunds and orders."


async def refund(conversation: Conversation) -> str:
    """Refunds a payment."""
    return "Your refund is on its way."


async def orders(conversation: Conversation) -> object:
    """Needs the order's number, which it asks the user for."""
    question = _question(conversation)
    if any(ch.isdigit() for ch in question):
        return f"Order {question.split()[-1]} ships tomorrow."
    return Decision(text="Which order number?", needs_user=True)
