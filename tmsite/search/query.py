"""A search query: plain words, checked and capped, read the same by every engine.

Nothing a client types reaches an engine as syntax. The query is cut into words (runs of
letters and digits); every other character — quotes, ``*``, ``-``, ``:``, parentheses — only
separates them, and ``NEAR``, ``OR``, ``AND`` and ``NOT`` are words like any other. Japanese,
Chinese and Korean runs have no spaces between words, so they are matched by overlapping
character pairs (:func:`grams`). A query with NUL, a lone surrogate or no word at all, or past
the caps, is refused ``bad-argument`` saying which.

Spec: SRCH1, SRCH3.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from tmsite.core.errors import BadArgument

MAX_QUERY_CHARS = 256
MAX_TERMS = 12
#: Letters of scripts written without spaces between words.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_WORD = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+")
_CJK_RUN = re.compile(rf"[{CJK}]+")
#: What separates words: everything but letters and digits (``connect.md``, ``pad-poll`` are
#: two words to every engine, as FTS5 reads them; PostgreSQL's parser would keep them whole).
_SEPARATOR = re.compile(r"[\W_]+")
#: Words that say nothing a match could use; left out when other words remain.
_STOP = (
    "a about an and are as at be been by can could do does for from had has have here how i "
    "if in into is it its me my of on or our should so than that the them then there these they "
    "this those to was we what when where which who why will with would you your"
)
STOPWORDS = frozenset(_STOP.split(" "))


@dataclass(frozen=True)
class Query:
    """A checked query.

    Attributes:
        text: The query as asked (normalised).
        words: Its words, lowercased (CJK runs among them, whole).
        needed: The words every hit should have (``words`` less the stopwords).
    """

    text: str
    words: tuple[str, ...]
    needed: tuple[str, ...]


def parse_query(text: object) -> Query:
    """The words of ``text``, or a refusal naming what is wrong with it.

    Raises:
        BadArgument: not a string, empty, too long, NUL or a lone surrogate, no words, or
            more than ``MAX_TERMS`` words.
    """
    if not isinstance(text, str):
        raise BadArgument(None, "query is a string of words", valid=["query"])
    if len(text) > MAX_QUERY_CHARS:
        raise BadArgument(None, f"query is longer than {MAX_QUERY_CHARS} characters")
    if "\x00" in text:
        raise BadArgument(None, "query holds a NUL character")
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        raise BadArgument(None, "query holds a lone surrogate, which is not text")
    normal = unicodedata.normalize("NFKC", text)
    words = tuple(dict.fromkeys(word.lower() for word in _WORD.findall(normal)))
    if not words:
        raise BadArgument(None, "query has no words to search for (letters or digits)")
    if len(words) > MAX_TERMS:
        raise BadArgument(None, f"query has {len(words)} words; at most {MAX_TERMS} are searched")
    needed = tuple(word for word in words if word not in STOPWORDS) or words
    return Query(normal, words, needed)


def is_cjk(word: str) -> bool:
    """Whether ``word`` is a run of a script written without spaces."""
    return bool(_CJK_RUN.fullmatch(word))


def gram(pair: str) -> str:
    """The index token of one or two CJK characters: ASCII, so every tokenizer keeps it whole.

    ``u`` and five hex digits a character; a digit always follows the ``u``, so no stemmer
    takes it for an English word.
    """
    return "u" + "".join(f"{ord(ch):05x}" for ch in pair)


def grams(run: str) -> list[str]:
    """A CJK run as the tokens of its overlapping pairs (a lone character as itself)."""
    if len(run) == 1:
        return [gram(run)]
    return [gram(run[i : i + 2]) for i in range(len(run) - 1)]


def indexable(text: str) -> str:
    """``text`` as the index tokenizes it: plain words, each CJK run spelled as its pairs.

    A run's last character is added alone, so that one character asked alone finds it by
    prefix.
    """
    normal = _SEPARATOR.sub(" ", unicodedata.normalize("NFKC", text))
    return _CJK_RUN.sub(lambda m: f" {' '.join([*grams(m[0]), gram(m[0][-1])])} ", normal)
