"""A tool an LLM agent's ``tools`` names in test_tools.py."""


def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


NOT_A_FUNCTION = 42
