async def researcher(topic: str) -> str:
    return f"notes on {topic}"


async def analyzer(notes: str) -> str:
    return f"analysis of {notes}"


async def summarizer(notes: str) -> str:
    return f"summary of {notes}"


async def writer(merged: str) -> str:
    return f"ARTICLE\n{merged}"
