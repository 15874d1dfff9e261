"""Text analysis for the docs-review demo: Markdown structure, readability, TF-IDF keywords
and an extractive summariser. Pure functions of text, no I/O beyond checking that a
relative link's file exists, so every number in the report can be recomputed by hand.

Definitions (the demo's test recomputes the structural ones independently):

- a *fence* is a line starting (after indentation) with three backticks or tildes; a code
  block is an opening fence, and nothing inside a block counts as anything else;
- a *heading* is a line outside code blocks matching ``#{1,6} text``;
- a *link* is ``[text](target)`` (not an image ``![..](..)``) outside code blocks and
  inline code spans; it is *external* when the target has a scheme (``https:``,
  ``mailto:``), an *anchor* when it starts with ``#``, else *relative*: its path (before
  ``#``) is resolved against the document's folder and is *broken* when no file is there;
- *prose* is every other non-blank line outside code blocks, except table rows (``|``)
  and HTML lines (``<``); list items and paragraphs become text with link syntax reduced
  to the link text;
- *words* are runs of letters (with digits, ``'``, ``-`` or ``_`` inside) in prose;
  *terms* are words of at least three letters that are not stop words, lowercased and
  folded to a singular (:func:`stem`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "document_frequencies",
    "flesch",
    "idf_weights",
    "keywords",
    "parse_markdown",
    "sentences",
    "stem",
    "summarise",
    "syllables",
    "terms",
    "tfidf",
    "words",
]

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
HEADING = re.compile(r"^(#{1,6})\s+(\S.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
INLINE_CODE = re.compile(r"`+([^`\n]*)`+")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
EMPHASIS = re.compile(r"(\*\*|__|\*)")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'\u2019-]*[A-Za-z0-9]|[A-Za-z]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(\[\"'])")

_STOP_WORDS_TEXT = """
    about above after again against all also an and any are aren't as at be because been
    before being below between both but by can cannot could did didn't do does doesn't
    doing don't down during each else etc every few for from further get gets given gives
    had has hasn't have haven't having he her here hers herself him himself his how however
    i if in into is isn't it it's its itself just let like may me might more most much must
    my myself need needs no nor not now of off on once one only or other others our ours
    ourselves out over own same say says see she should so some such than that that's the
    their theirs them themselves then there there's these they this those through thus to
    too two under until up upon us use used uses using very via was wasn't way we well were
    what what's when where whether which while who whom whose why will with within without
    won't would yet you your yours yourself yourselves
"""
#: Common English words that say nothing about a page (for keywords and summaries).
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def _strip_inline(text: str) -> str:
    """A prose line without image, link and emphasis syntax; inline code keeps its text."""
    text = IMAGE.sub(" ", text)
    text = LINK.sub(lambda m: m.group(1), text)
    text = INLINE_CODE.sub(lambda m: m.group(1), text)
    return EMPHASIS.sub("", text)


def parse_markdown(text: str, folder: Path | None = None) -> dict[str, Any]:
    """The structure of a Markdown document (see the module docstring for definitions).

    :param folder: where relative links are resolved; ``None`` checks none.
    :returns: ``headings`` (``[level, text, line]``), ``code_blocks`` (languages, ``""``
        when unnamed), ``links`` (``{target, line, kind, broken}``) and ``paragraphs``
        (prose text, one per paragraph or list item).
    """
    headings: list[list[Any]] = []
    code_blocks: list[str] = []
    links: list[dict[str, Any]] = []
    paragraphs: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def close() -> None:
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            close()
            fence = opened.group(1)
            code_blocks.append(opened.group(2))
            continue
        for match in LINK.finditer(INLINE_CODE.sub(" ", line)):
            links.append(_link(match.group(2), number, folder))
        heading = HEADING.match(line)
        if heading:
            close()
            headings.append([len(heading.group(1)), _strip_inline(heading.group(2)), number])
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", "<")):
            close()
            continue
        if LIST_MARKER.match(line):
            close()
            line = LIST_MARKER.sub("", line, count=1)
        current.append(_strip_inline(line.strip().lstrip(">").strip()))
    close()
    return {
        "headings": headings,
        "code_blocks": code_blocks,
        "links": links,
        "paragraphs": paragraphs,
    }


def _link(target: str, line: int, folder: Path | None) -> dict[str, Any]:
    if SCHEME.match(target):
        return {"target": target, "line": line, "kind": "external", "broken": False}
    if target.startswith("#"):
        return {"target": target, "line": line, "kind": "anchor", "broken": False}
    path = target.split("#", 1)[0]
    broken = folder is not None and not (folder / path).exists()
    return {"target": target, "line": line, "kind": "relative", "broken": broken}


def sentences(paragraphs: Iterable[str]) -> list[str]:
    """Every paragraph split into sentences (a sentence ends at ``.``, ``!`` or ``?``
    followed by a capital, a digit, a quote or a bracket)."""
    found: list[str] = []
    for paragraph in paragraphs:
        found.extend(s.strip() for s in SENTENCE_END.split(paragraph) if s.strip())
    return found


def words(text: str) -> list[str]:
    """The words of ``text``."""
    return WORD.findall(text)


def stem(word: str) -> str:
    """``word`` lowercased, without a possessive ``'s`` and folded to its singular by a
    few suffix rules (``steps`` → ``step``, ``entries`` → ``entry``; ``class``, ``status``
    and ``analysis`` stay)."""
    word = word.lower().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    word = word.rstrip("'")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The terms of ``text``: words of three letters or more that are not stop words, each
    :func:`stem`-med."""
    return [
        stem(w)
        for w in words(text)
        if len(w) >= 3 and w.lower() not in STOP_WORDS and not w.isdigit()
    ]


def syllables(word: str) -> int:
    """English syllables of ``word``, estimated: groups of vowels, less a silent final
    ``e``; at least one."""
    letters = re.sub(r"[^a-z]", "", word.lower())
    count = len(re.findall(r"[aeiouy]+", letters))
    if letters.endswith("e") and not letters.endswith(("le", "ee")) and count > 1:
        count -= 1
    return max(count, 1)


def flesch(text_sentences: Sequence[str]) -> dict[str, float]:
    """Flesch reading ease (higher is easier; 60-70 is plain English) and the
    Flesch-Kincaid grade level of the sentences, rounded to one decimal."""
    all_words = [w for s in text_sentences for w in words(s)]
    if not all_words or not text_sentences:
        return {"reading_ease": 0.0, "grade": 0.0}
    per_sentence = len(all_words) / len(text_sentences)
    per_word = sum(syllables(w) for w in all_words) / len(all_words)
    return {
        "reading_ease": round(206.835 - 1.015 * per_sentence - 84.6 * per_word, 1),
        "grade": round(0.39 * per_sentence + 11.8 * per_word - 15.59, 1),
    }


def document_frequencies(documents: Iterable[Sequence[str]]) -> Counter[str]:
    """In how many documents each term occurs (each a sequence of terms)."""
    frequencies: Counter[str] = Counter()
    for document in documents:
        frequencies.update(set(document))
    return frequencies


def idf_weights(frequencies: Mapping[str, int], count: int) -> dict[str, float]:
    """Smoothed inverse document frequency: ``ln((1 + n) / (1 + df)) + 1``."""
    return {t: math.log((1 + count) / (1 + df)) + 1 for t, df in frequencies.items()}


def tfidf(document: Sequence[str], idf: Mapping[str, float]) -> dict[str, float]:
    """TF-IDF weight of each term of ``document`` (term frequency times ``idf``)."""
    counts = Counter(document)
    total = len(document) or 1
    return {t: (n / total) * idf.get(t, 1.0) for t, n in counts.items()}


def keywords(weights: Mapping[str, float], count: int) -> list[str]:
    """The ``count`` terms of highest weight (ties alphabetically)."""
    return [t for t, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:count]]


def summarise(
    text_sentences: Sequence[str],
    weights: Mapping[str, float],
    budget: int,
    focus: Iterable[str] = (),
) -> list[str]:
    """An extractive summary: the ``budget`` sentences whose terms weigh most, in document
    order. A sentence scores the sum of its distinct terms' weights over the square root of
    its length, so dense sentences beat long ones; terms in ``focus`` (keywords an earlier
    summary missed) count three times. Sentences under five or over sixty words, and those
    that end with a colon (they introduce a code block or a list), are skipped unless
    nothing else is left."""
    focused = set(focus)
    scored: list[tuple[float, int]] = []
    for index, sentence in enumerate(text_sentences):
        found = set(terms(sentence))
        length = len(words(sentence))
        if not found or not 5 <= length <= 60 or sentence.endswith(":"):
            continue
        # fsum: exactly rounded, so the score does not depend on the order a set of
        # strings iterates in (it changes with each process's hash seed), and sentences of
        # equal weight tie exactly, broken by their place in the page
        score = math.fsum(weights.get(t, 0.0) * (3.0 if t in focused else 1.0) for t in found)
        scored.append((score / math.sqrt(length), index))
    if not scored:
        scored = [(0.0, i) for i in range(len(text_sentences))]
    chosen = sorted(sorted(scored, key=lambda si: (-si[0], si[1]))[:budget], key=lambda si: si[1])
    return [text_sentences[i] for _, i in chosen]
