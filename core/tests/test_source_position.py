"""A problem on a long line costs a bounded excerpt, and a LoadError with thousands of
problems shows a bounded number of them (issue 24, finding 7)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from plait import DocumentError, LoadError, SourcePosition


def test_a_position_on_a_100_kb_line_keeps_a_window_with_the_caret_in_place() -> None:
    line = "x" * 50_000 + "BAD" + "y" * 50_000
    error = DocumentError("oops", SourcePosition(source="f", line=1, column=50_001, text=line))
    text, caret = str(error).split("\n")[1:]
    assert len(text) <= SourcePosition.WINDOW + 4
    assert text.startswith("    …") and text.endswith("…")
    assert text[caret.index("^") : caret.index("^") + 3] == "BAD"
    assert str(error).startswith("f:1:50001: oops")


def test_a_piece_of_a_line_places_the_caret_by_its_starting_column() -> None:
    line = "a -> " + "n," * 1000 + "BAD"
    start = len(line) - 50
    column = len(line) - 2
    position = SourcePosition(line=1, column=column, text=line[start:], text_column=start + 1)
    text, caret = position.caret().split("\n")
    assert text.startswith("    …")
    assert text[caret.index("^") : caret.index("^") + 3] == "BAD"


def test_a_short_line_is_kept_whole() -> None:
    position = SourcePosition(line=2, column=3, text="a -> b")
    assert position.text == "a -> b"
    assert position.caret() == "    a -> b\n      ^"


def test_a_load_error_shows_the_first_problems_and_counts_the_rest() -> None:
    problems = [
        DocumentError(f"problem {n}", SourcePosition(line=n, column=1)) for n in range(4000)
    ]
    error = LoadError(problems, source="big.flow")
    message = str(error)
    assert len(error.problems) == 4000
    assert message.count("\n  - ") == LoadError.SHOWN
    assert message.endswith(f"… and {4000 - LoadError.SHOWN:,} more")
    assert "big.flow: 4000 problem(s):" in message


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abcdefgh ->,[]", min_size=1, max_size=600),
    st.integers(1, 601),
    st.integers(0, 300),
)
def test_the_caret_is_under_the_same_character_of_any_excerpt(
    line: str, column: int, cut: int
) -> None:
    column = min(column, len(line))
    cut = min(cut, column - 1)  # a caller passing the piece from column cut + 1 on
    whole = SourcePosition(line=1, column=column, text=line)
    piece = SourcePosition(line=1, column=column, text=line[cut:], text_column=cut + 1)
    for position in (whole, piece):
        assert position.text is not None
        assert len(position.text) <= SourcePosition.WINDOW + 1  # "…" marks within it
        shown, caret = position.caret().split("\n")
        assert shown[caret.index("^")] == line[column - 1]
