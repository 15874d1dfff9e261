async def long_answer(prompt: str) -> str:
    return "a long explanation"


async def short_answer(prompt: str) -> str:
    return "a short explanation"
