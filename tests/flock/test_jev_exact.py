"""Jev's fast paths give the answers of the plain ones, to the last bit.

``prepare`` skips a substitution its text cannot match, and ``Scorer`` finds a message's
n-grams as integer codes in one sorted array (flock/jev/ngrams.py), or, for a union it
cannot code, counts them as strings and looks them up in C (docs/PERFORMANCE.md, "Jev").
Here all of them are held equal to the plain forms they replace, written out below: every
substitution run, scikit-learn's own analyzers, one Python loop per term. Equal means the
same bytes, not close.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion

from flock.jev.model import (
    TrainedModel,
    build_pipeline,
    coded_vocabulary,
    counting_of,
    served_blocks,
    served_model,
)
from flock.jev.ngrams import CodedVocabulary
from flock.jev.questions import FEATURES_STANDARD, read_examples
from flock.jev.service import default_jev
from flock.jev.serving import _LOG_TF, _TF, Scorer, ServedVocabulary, frame, softmax, term_counter
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
    # Characters no vocabulary holds: a lone surrogate, the last code point, private use.
    "half \ud800 a pair", "\U0010ffff end", "\ue000\ue001 ok", "ok ok ok ok ok ok ok", "? ? ! : \"",
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
    for (_, block, weights), analyze in zip(scorer._parts, analyzers, strict=True):
        columns: list[int] = []
        counts: list[int] = []
        for term, count in Counter(analyze(prepared)).items():
            column = block.vocabulary.get(term)
            if column is not None:
                columns.append(column)
                counts.append(count)
        if not columns:
            continue
        tf = np.array(counts, dtype=np.float64)
        if block.sublinear_tf:
            tf = np.log(tf) + 1.0
        values = tf * block.idf[columns]
        logits += (values @ weights[columns]) / np.sqrt(values @ values)
    return logits


def vocabulary_terms(vectorizers: list, counted: list[Counter[str]]) -> tuple[list[int], list[int], int]:
    """What `CodedVocabulary.find` answers, from each block's terms as scikit-learn's
    analyzer counts them: the union's columns of the known terms in first-seen order, their
    counts, and how many are word terms."""
    columns: list[int] = []
    counts: list[int] = []
    blocks: list[int] = []
    offset = 0
    for vectorizer, terms in zip(vectorizers, counted, strict=True):
        for term, count in terms.items():
            column = vectorizer.vocabulary_.get(term)
            if column is not None:
                columns.append(offset + column)
                counts.append(count)
        blocks.append(len(columns))
        offset += len(vectorizer.vocabulary_)
    return columns, counts, blocks[0]


def corpus() -> list[str]:
    """Every text of every question on the standard union, and every fourth of the pair
    question's: its 4,549 pairs of messages are no text a standard model reads, and a
    sample of them is all the codes need to meet (the scorer of the pair question itself
    is held to scikit-learn's in test_jev_pairs.py)."""
    jev = default_jev()
    texts = []
    for q in jev.questions().values():
        examples = [*q.train_examples(), *q.dev_examples()]
        texts += [e.text for e in (examples if q.features == FEATURES_STANDARD else examples[::4])]
    return texts + [e.text for e in read_examples(UNSEEN_KIND, "kind")] + EDGES


def test_prepare_gives_what_every_substitution_gives() -> None:
    for text in corpus():
        assert prepare(text) == plain_prepare(text), text


# The questions on the standard union; a pair feature set (expectation_met) is scored by
# scikit-learn (test_jev_pairs.py).
STANDARD = sorted(name for name, spec in default_jev().questions().items() if spec.features == FEATURES_STANDARD)


@pytest.mark.parametrize("question", STANDARD)
def test_the_scorer_finds_counts_and_sums_as_scikit_learn_counts_and_a_plain_loop_sums(question: str) -> None:
    loaded = default_jev().loaded(question)
    vectorizers = [v for _, v in default_jev().trained(question).pipeline.named_steps["features"].transformer_list]
    analyzers = [v.build_analyzer() for v in vectorizers]
    scorer = loaded.scorer
    coded = scorer.coded
    assert coded is not None  # every built-in question on the standard union takes the coded path
    texts = corpus()
    # Every text for the coded terms, and a sample unprepared (the codes must hold for any
    # string, not just prepare's output); a sample for the strings the plain path counts
    # (no built-in question takes it) and a fixed sample of a few hundred for the sums.
    inputs = [*map(prepare, texts), *texts[::25], *EDGES, "  two  spaces  ", "\t", "x" * 5000]
    for i, prepared in enumerate(inputs):
        counted = [Counter(analyze(prepared)) for analyze in analyzers]
        for vectorizer, terms in zip(vectorizers, counted, strict=True):
            # Same terms, counts and first-seen order: the order is the order of the sums.
            if i % 10 == 0:
                assert list(term_counter(counting_of(vectorizer))(prepared).items()) == list(terms.items())
        columns, counts, words = coded.find(prepared)
        assert (columns.tolist(), counts.tolist(), words) == vocabulary_terms(vectorizers, counted), prepared
    for text in texts[::40] + EDGES:
        prepared = prepare(text)
        expected = plain_logits(scorer, analyzers, prepared)
        assert scorer.logits(prepared).tobytes() == expected.tobytes(), text
        assert scorer._plain_logits(prepared).tobytes() == expected.tobytes(), text
        assert scorer.probabilities(prepared).tobytes() == softmax(expected, scorer._temperature).tobytes()


def test_a_long_text_is_scored_past_the_tabulated_counts() -> None:
    scorer = default_jev().loaded("kind").scorer
    vectorizers = [v for _, v in default_jev().trained("kind").pipeline.named_steps["features"].transformer_list]
    prepared = "ok " * 12_000  # "ok" 12,000 times: more than the table of counts holds
    assert len(prepared) >= len(_TF)
    expected = plain_logits(scorer, [v.build_analyzer() for v in vectorizers], prepared)
    assert scorer.logits(prepared).tobytes() == expected.tobytes()


def test_one_messages_softmax_is_its_row_of_the_batchs() -> None:
    rng = np.random.default_rng(0)
    logits = np.vstack([rng.normal(scale=4.0, size=(200, 6)), [[1e3, -1e3, 0, 0, 0, 0], [0.0] * 6]])
    for temperature in (0.05, 0.7, 1.0, 3.3):
        batch = softmax(logits, temperature)
        for row, expected in zip(logits, batch, strict=True):
            assert softmax(row, temperature).tobytes() == expected.tobytes()


def test_the_tabulated_tf_is_numpys_log_of_each_count_alone() -> None:
    for count in range(1, len(_TF)):
        assert _TF[count] == float(count)
        assert _LOG_TF[count] == (np.log(np.array([count], dtype=np.float64)) + 1.0)[0]


def test_a_union_the_codes_do_not_cover_is_scored_the_plain_way() -> None:
    texts = ["take it", "I'll take it", "can someone look?", "please look at this", "done: it works", "thanks!"]
    labels = ["claim", "claim", "request", "request", "deliver", "say"]
    pipeline = build_pipeline(punctuation=True).fit([prepare(t) for t in texts], labels)
    vectorizers = [v for _, v in pipeline.named_steps["features"].transformer_list]
    assert isinstance(coded_vocabulary(vectorizers), CodedVocabulary)
    words, chars = vectorizers
    assert coded_vocabulary([chars, words]) is None
    assert coded_vocabulary([words]) is None
    chars.sublinear_tf = False
    assert coded_vocabulary(vectorizers) is None
    chars.sublinear_tf = True
    # Tokens that may hold what joins a word n-gram's tokens: the scorer counts strings.
    words.token_pattern = r"\S+"
    assert coded_vocabulary(vectorizers) is None
    model = TrainedModel(
        question="test", version="test-v", choices=("claim", "deliver", "request", "say"), pipeline=pipeline,
        temperature=1.0, calibrated_on="none", n_train=len(texts), n_calibration=0, train_seconds=0.0,
    )
    scorer = Scorer(served_model(model))
    assert scorer.coded is None
    analyzers = [v.build_analyzer() for v in vectorizers]
    for text in [*texts, "take: it? now", ""]:
        prepared = prepare(text)
        assert scorer.logits(prepared).tobytes() == plain_logits(scorer, analyzers, prepared).tobytes()
    # An alphabet so large that five of its characters do not fit a 64-bit code.
    with pytest.raises(ValueError, match="64 bits"):
        CodedVocabulary(
            preprocess=frame,
            tokenize=str.split,
            word_vocabulary={"a": 0},
            word_ngrams=(1, 2),
            white_spaces=chars._white_spaces,
            char_vocabulary={chr(0x4E00 + i) * 2: i for i in range(7000)},
            char_ngrams=(2, 5),
        )


def test_the_served_analyzers_count_as_scikit_learns_and_the_fit_vocabulary_transforms_as_its_union() -> None:
    # The crow-fit vocabulary's blocks (flock/jev/fit.py): English stop words, char_wb; and
    # a few set-ups Jev does not use today, so a new one is served right from the start.
    texts = corpus()[::7]
    prepared = [prepare(t) for t in texts]
    union = FeatureUnion(
        [
            ("words", TfidfVectorizer(stop_words="english", sublinear_tf=True)),
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)),
        ]
    ).fit(prepared)
    others = [
        TfidfVectorizer(ngram_range=(2, 3)),
        TfidfVectorizer(analyzer="char", ngram_range=(1, 3), lowercase=False),
        TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 2)),
        TfidfVectorizer(token_pattern=r"\S+", ngram_range=(1, 3), stop_words="english"),
    ]
    for vectorizer in [v for _, v in union.transformer_list] + [v.fit(prepared) for v in others]:
        analyze, count = vectorizer.build_analyzer(), term_counter(counting_of(vectorizer))
        for text in [*texts, *EDGES]:
            assert list(count(text).items()) == list(Counter(analyze(text)).items()), (vectorizer, text)
    served = ServedVocabulary(blocks=served_blocks(union))
    for text in prepared[::5] + EDGES:
        expected = union.transform([text]).toarray()[0]
        found = served.unit_vector(text)
        if not expected.any():
            assert found is None
            continue
        assert found is not None
        got = np.zeros_like(expected)
        got[found[0]] = found[1]
        np.testing.assert_allclose(got, expected / np.linalg.norm(expected), rtol=1e-12, atol=1e-15)
