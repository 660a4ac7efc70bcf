"""Jev's fast paths give the answers of the plain ones, to the last bit.

``prepare`` skips a substitution its text cannot match, and ``Scorer`` counts n-grams and
looks them up in C (docs/PERFORMANCE.md, "Jev"). Here both are held equal to the plain
forms they replace, written out below: every substitution run, scikit-learn's own
analyzers, one Python loop per term. Equal means the same bytes, not close.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from flock.jev.calibration import softmax
from flock.jev.model import Scorer, term_counter
from flock.jev.questions import read_examples
from flock.jev.service import default_jev
from flock.jev.text import (
    _FILE_RE,
    _FOLDER_RE,
    _HEADER_RE,
    _ID_RE,
    _MENTION_RE,
    _QUOTES,
    _URL_RE,
    MAX_TEXT_CHARS,
    _header_token,
    prepare,
)

UNSEEN_KIND = Path(__file__).resolve().parent / "data" / "kind_unseen.jsonl"

# Texts at the edges of the skipped substitutions and of whitespace.
EDGES = [
    "", " ", "  ", "\t\n", "x" * 10_000, "WWW.EXAMPLE.COM now", "see wWw.foo.org", "s3://b/k", "ftp://x",
    "id ٣٤ and todo-٣", "abc１２３４５６７", "\x1c\x1dword\x1e \x1f", "a\u00a0b\u2003c\u3000d",
    "\u2018hi\u2019 \u201cyo\u201d", "[CLAIM todo-3] ok", "[refer notes.md] see", "notes.md, drafts/ and ~/x",
    "@Hugin pls", "K\u212a \u017f \u0130\u0131", "\u00e9.PDF", "x.tar.gz", "end.", "a/b/c", "and/or 24/7",
    "deadbeef 1234abcd", "\u0085next\u2028line\u2029p", "Stra\u00dfe \u00df", "an \U0001f642 emoji.png",
    "wait...and", "e.g. this", "v2.1 is 3.5x", "done it.Then", "@x?", "I'll take it", "a", "ab",
]


def plain_prepare(text: str) -> str:
    """`prepare` as it was before it skipped anything."""
    text = text[:MAX_TEXT_CHARS].translate(_QUOTES)
    text = _HEADER_RE.sub(_header_token, text)
    text = _URL_RE.sub(" _url_ ", text)
    text = _FILE_RE.sub(" _file_ ", text)
    text = _FOLDER_RE.sub(" _folder_ ", text)
    text = _MENTION_RE.sub(" _crow_ ", text)
    text = _ID_RE.sub(" _id_ ", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def plain_logits(scorer: Scorer, analyzers: list, prepared: str) -> np.ndarray:
    """`Scorer.logits` with scikit-learn's analyzers and a loop per term."""
    logits = scorer._intercept.copy()
    for part, analyze in zip(scorer._parts, analyzers, strict=True):
        columns: list[int] = []
        counts: list[int] = []
        for term, count in Counter(analyze(prepared)).items():
            column = part.vocabulary.get(term)
            if column is not None:
                columns.append(column)
                counts.append(count)
        if not columns:
            continue
        tf = np.array(counts, dtype=np.float64)
        if part.sublinear_tf:
            tf = np.log(tf) + 1.0
        values = tf * part.idf[columns]
        logits += (values @ part.weights[columns]) / np.sqrt(values @ values)
    return logits


def corpus() -> list[str]:
    jev = default_jev()
    texts = [e.text for q in jev.questions().values() for e in [*q.train_examples(), *q.dev_examples()]]
    return texts + [e.text for e in read_examples(UNSEEN_KIND, "kind")] + EDGES


def test_prepare_gives_what_every_substitution_gives() -> None:
    for text in corpus():
        assert prepare(text) == plain_prepare(text), text


@pytest.mark.parametrize("question", sorted(default_jev().questions()))
def test_the_scorer_counts_and_sums_as_scikit_learn_counts_and_a_plain_loop_sums(question: str) -> None:
    loaded = default_jev().loaded(question)
    vectorizers = [v for _, v in loaded.model.pipeline.named_steps["features"].transformer_list]
    analyzers = [v.build_analyzer() for v in vectorizers]
    scorer = loaded.scorer
    texts = corpus()
    # Every text for the counts (cheap); a fixed sample of a few hundred for the sums.
    for text in texts:
        prepared = prepare(text)
        for vectorizer, analyze in zip(vectorizers, analyzers, strict=True):
            # Same terms, counts and first-seen order: the order is the order of the sums.
            assert list(term_counter(vectorizer)(prepared).items()) == list(Counter(analyze(prepared)).items())
    for text in texts[::40] + EDGES:
        prepared = prepare(text)
        expected = plain_logits(scorer, analyzers, prepared)
        assert scorer.logits(prepared).tobytes() == expected.tobytes(), text
        assert scorer.probabilities(prepared).tobytes() == softmax(expected, scorer._temperature).tobytes()
