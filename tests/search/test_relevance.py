"""Relevance: real questions about this box find their answer in the first three hits.

The index is built from this checkout's own ``docs/``, ``data/`` and ``notes/``, on each
engine; the questions and their answers are :mod:`tests.search.relevance`.

Spec: SRCH2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.search.relevance import QUESTIONS
from tmsite.mounts.fs.mount import FsMount
from tmsite.search import index
from tmsite.search.query import is_cjk, parse_query

pytestmark = [pytest.mark.spec("SRCH2"), pytest.mark.django_db]
CHECKOUT = Path(__file__).resolve().parents[2]
AT_LEAST = 0.9


def test_the_question_set_is_large_enough_and_in_both_languages() -> None:
    assert len(QUESTIONS) >= 30
    japanese = [q for q, _ in QUESTIONS if any(is_cjk(w) for w in parse_query(q).words)]
    assert 5 <= len(japanese) < len(QUESTIONS)
    assert all((CHECKOUT / answer).is_file() for _, answer in QUESTIONS)


def test_nine_in_ten_questions_have_their_answer_in_the_top_three(using: str) -> None:
    index.sync({"fs": FsMount("test", CHECKOUT, ["docs", "data", "notes"])}, using)
    missed = []
    for question, answer in QUESTIONS:
        hits = index.search(parse_query(question), "tm://test/", (), 3, using)
        if f"tm://test/fs/{answer}" not in [hit.uri for hit in hits]:
            missed.append((question, answer, [hit.uri for hit in hits]))
    share = 1 - len(missed) / len(QUESTIONS)
    assert share >= AT_LEAST, f"{share:.0%} in the top three; missed: {missed}"
