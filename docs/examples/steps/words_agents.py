async def split(prompt: str) -> list:
    return prompt.split()


async def lengthen(word: str) -> str:
    return word + "+"


async def join(words: list) -> str:
    return " ".join(words)
