"""A group chat of two Python agents, round-robin, until the critic approves."""

from plait_teams import Conversation, GroupChatBuilder, participant


async def writer(conversation: Conversation) -> str:
    """Writes and revises a slogan."""
    drafts = len(conversation.by("writer"))
    return ["Tides wait for no one", "Ride the tide, on time"][min(drafts, 1)]


def critic(prompt: str) -> str:
    """Reviews the latest slogan."""
    return "APPROVED" if "on time" in prompt else "Too gloomy: mention being on time."


chat = (
    GroupChatBuilder("slogan")
    .participants([writer, participant(critic, description="Approves or asks again.")])
    .with_termination("contains(last.text, 'APPROVED')")
    .with_max_rounds(6)
    .build()
)

result = chat.run_sync("A slogan for a ferry company")
conversation = result.outputs[0]
for message in conversation:
    print(f"{message.author}: {message.text}")
assert [m.author for m in conversation] == ["user", "writer", "critic", "writer", "critic"]
assert conversation[-1].text == "APPROVED"
