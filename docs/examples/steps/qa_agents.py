ROUNDS: list[str] = []


async def generator(prompt: str) -> str:
    return "a draft"


async def researcher(prompt: str) -> str:
    return "research"


async def summarizer(prompt: str) -> str:
    return "summary"


async def translator(prompt: str) -> str:
    ROUNDS.append(prompt)
    return f"translation {len(ROUNDS)}"


async def qa_agent(prompt: str) -> dict:
    return {"is_approved": len(ROUNDS) >= 2}  # the first translation is sent back


async def publisher(prompt: str) -> str:
    return f"published after {len(ROUNDS)} translation(s)"
