"""A group chat of two Python agents, round-robin, until the critic approves."""

from plait_teams import GroupChatBuilder, participant
from slogan_agents import critic, writer

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
