"""The agents of the slogan group chats (group_chat.py, slogan.yaml): a writer that revises
its slogan once, and a critic that approves a slogan about being on time."""

from plait_teams import Conversation


async def writer(conversation: Conversation) -> str:
    """Writes and revises a slogan."""
    drafts = len(conversation.by("writer"))
    return ["Tides wait for no one", "Ride the tide, on time"][min(drafts, 1)]


async def critic(prompt: str) -> str:
    """Reviews the latest slogan."""
    return "APPROVED" if "on time" in prompt else "Too gloomy: mention being on time."
