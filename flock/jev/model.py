"""Training, the on-disk cache, and the fast single-message scorer.

The model is a scikit-learn pipeline: a FeatureUnion of word 1-2 gram and char 2-5 gram
TF-IDF, into a linear SVM (one-vs-rest), plus one temperature (calibration.py) fitted on
out-of-writer predictions when the corpus has several writers.

Prediction does not go through ``Pipeline.predict_proba``. On one short string sklearn spends
most of its time in input validation and sparse-matrix plumbing, not arithmetic. ``Scorer``
keeps the fitted analyzers, vocabularies, idf weights and coefficients and does the same
sum directly (tests hold the two equal), which makes a tag cost a fraction of a millisecond.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path

import numpy as np
import sklearn
from numpy.typing import NDArray
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import normalize
from sklearn.svm import LinearSVC

from flock.jev.calibration import fit_temperature, softmax
from flock.jev.ngrams import CodedVocabulary
from flock.jev.pair_features import build_features as build_pair_features
from flock.jev.questions import FEATURES_PAIR, FEATURES_STANDARD, Example, JevDataError, Question
from flock.jev.text import prepare

logger = logging.getLogger(__name__)

# Bump when features, preprocessing or training change: it is part of every cache key and
# of every answer's version, so old caches are retrained rather than silently reused.
CODE_VERSION = "v4"  # v2-v3: writers, out-of-writer temperature, SVM, framed text, char n-grams; v4: URIs of any scheme, no ellipsis files
IMPL = "sklearn"

# Inverse regularisation of the linear SVM, chosen by leave-one-writer-out accuracy on
# kind (flat from 0.6 to 2). The temperature turns its margins into probabilities.
SVM_C = 1.0
WORD_TOKENS = r"(?u)\b\w+\b"
# With the question's "punctuation_tokens" (kind's), ? ! : and " are word tokens too.
WORD_AND_PUNCTUATION_TOKENS = r"(?u)\b\w+\b|[?!:\"]"
TOKEN_PATTERNS = (WORD_TOKENS, WORD_AND_PUNCTUATION_TOKENS)
BOS, EOS = "_bos_", "_eos_"
# Fraction held out to fit the temperature when a question ships no dev file, and the
# fewest examples of each choice for which that slice is still worth taking.
HELD_OUT_FRACTION = 0.2
MIN_PER_CHOICE_FOR_HELD_OUT = 5
# With this many writers (the original corpus counts as one), the temperature is fitted on
# out-of-writer predictions instead of a dev split.
MIN_WRITERS_FOR_OUT_OF_WRITER = 2


@dataclass
class OutOfWriter:
    """Every training example scored by a model that never saw its writer's lines.

    Training fits one model per writer on the other writers' lines and keeps its logits on
    the held-out writer. The temperature is fitted on these, and jev_eval reports them as
    the leave-one-writer-out figures, so both come with the cached model at no extra cost.
    """

    writers: tuple[str, ...]  # one per row
    labels: tuple[str, ...]
    hard: tuple[bool, ...]
    texts: tuple[str, ...]
    logits: NDArray[np.float64]  # rows x choices, in the question's choice order
    # Temperature for each held-out writer, fitted on the other writers' rows only, so the
    # held-out writer's ECE is not measured with a temperature fitted on its own labels.
    writer_temperatures: dict[str, float]


@dataclass
class TrainedModel:
    """Everything the cache stores for one question."""

    question: str
    version: str
    choices: tuple[str, ...]
    pipeline: Pipeline
    temperature: float
    calibrated_on: str  # "dev", "held-out slice" or "none"
    n_train: int
    n_calibration: int
    train_seconds: float
    impl: str = IMPL
    out_of_writer: OutOfWriter | None = None
    # The vocabulary's integer codes (ngrams.py), computed once when the model is trained
    # and cached with it: coding kind's terms takes 0.2 s of CPU, which every server and
    # worker start would otherwise pay again. None: computed when loaded.
    coded: CodedVocabulary | None = None


def frame(prepared: str) -> str:
    """The text the vectorizers see: ``prepare``'s output between start and end markers, so
    n-grams can tell where a message opens and closes ("_bos_ _crow_ can" is a request
    opening with its addressee; "_crow_ _eos_" one that names it last)."""
    return f"{BOS} {prepared} {EOS}"


def build_pipeline(punctuation: bool = False, features: str = FEATURES_STANDARD) -> Pipeline:
    """The standard union of word and char TF-IDF into a linear SVM, or, for a question whose
    metadata says ``"features": "pair"``, pair_features.py's blocks into one (its C too was
    chosen left one writer out, on expectation_met: 0.3 and 0.5 were no better)."""
    if features == FEATURES_PAIR:
        return Pipeline(
            [("features", build_pair_features(WORD_TOKENS)), ("classifier", LinearSVC(C=SVM_C, random_state=0))]
        )
    union = FeatureUnion(
        [
            # Single-letter tokens ("I", "a") are kept: "I'll take it" and "you'll take it"
            # are different kinds, and only the pronoun tells them apart. With
            # ``punctuation`` ? ! : and " are tokens of their own: for kind a question mark
            # at the end ("? _eos_") is much of what makes an indirect request one, a colon
            # or a quote what makes a deliver. Todo-item questions leave them out: nearly
            # every murder item is a question, so a "?" token read every politely asked
            # request ("Could someone find the notes?") as a conspiracy.
            (
                "words",
                TfidfVectorizer(
                    ngram_range=(1, 2),
                    sublinear_tf=True,
                    token_pattern=WORD_AND_PUNCTUATION_TOKENS if punctuation else WORD_TOKENS,
                    preprocessor=frame,
                ),
            ),
            # Characters across word boundaries ("char", not "char_wb"): "n't", "i'll", "@x?"
            # and "_crow_ pls" survive as units, which held up better on writers the model
            # had not read.
            (
                "chars",
                TfidfVectorizer(analyzer="char", ngram_range=(2, 5), sublinear_tf=True, preprocessor=frame),
            ),
        ]
    )
    # A linear SVM where v1 had a logistic regression: on leave-one-writer-out
    # cross-validation it was about a point more accurate for every held-out writer and
    # fits several times faster, which matters now that training fits one model per
    # writer. Its margins are not probabilities; the temperature makes them so.
    # A fixed seed: liblinear shuffles the data, and a model must not differ between two
    # machines that train it from the same files.
    classifier = LinearSVC(C=SVM_C, random_state=0)
    return Pipeline([("features", union), ("classifier", classifier)])


def pipeline_logits(pipeline: Pipeline, prepared: Sequence[str]) -> NDArray[np.float64]:
    """Per-class logits in ``classes_`` order; a binary model's single score becomes [0, z]."""
    return _scores(pipeline, list(prepared))


def _fit(
    texts: Sequence[str], labels: Sequence[str], punctuation: bool = False, features: str = FEATURES_STANDARD
) -> Pipeline:
    pipeline = build_pipeline(punctuation, features)
    pipeline.fit([prepare(t) for t in texts], list(labels))
    return pipeline


def _temperature_on(pipeline: Pipeline, texts: Sequence[str], labels: Sequence[str]) -> float:
    classes = list(pipeline.classes_)
    logits = pipeline_logits(pipeline, [prepare(t) for t in texts])
    targets = np.array([classes.index(label) for label in labels], dtype=np.intp)
    return fit_temperature(logits, targets)


def _scores(estimator: Pipeline | LinearSVC, inputs: object) -> NDArray[np.float64]:
    scores = np.asarray(estimator.decision_function(inputs), dtype=np.float64)
    if scores.ndim == 1:
        scores = np.column_stack([np.zeros_like(scores), scores])
    return scores


def _choice_order(
    logits: NDArray[np.float64], classes: list[str], choices: Sequence[str]
) -> NDArray[np.float64]:
    """Columns in the question's choice order; a choice the model never saw gets -1000."""
    out = np.full((logits.shape[0], len(choices)), -1e3)
    for j, choice in enumerate(choices):
        if choice in classes:
            out[:, j] = logits[:, classes.index(choice)]
    return out


def ordered_logits(pipeline: Pipeline, texts: Sequence[str], choices: Sequence[str]) -> NDArray[np.float64]:
    """The pipeline's logits for ``texts`` in the question's choice order."""
    return _choice_order(
        pipeline_logits(pipeline, [prepare(t) for t in texts]), list(pipeline.classes_), choices
    )


class _SharedCounts:
    """Every example's n-gram counts, counted once for all the per-writer fits.

    Counting n-grams is most of what fitting a TfidfVectorizer costs. Each fold's TF-IDF
    is derived from the shared counts exactly as a vectorizer fitted on that fold computes
    it: the fold's vocabulary (terms in its documents, in the same sorted order), its smoothed
    idf, sublinear tf, and L2 rows per block. A test holds the result equal to fitting the
    pipeline on the fold.
    """

    def __init__(self, prepared: Sequence[str], punctuation: bool) -> None:
        self.blocks = []
        for _, vectorizer in build_pipeline(punctuation).named_steps["features"].transformer_list:
            counter = CountVectorizer(analyzer=vectorizer.build_analyzer())
            counts = counter.fit_transform(prepared).tocsr()
            self.blocks.append((counts, vectorizer.sublinear_tf, int(vectorizer.smooth_idf), vectorizer.norm))

    def fold(self, fit_rows: NDArray[np.intp], score_rows: NDArray[np.intp]) -> tuple[sparse.csr_matrix, ...]:
        fit_parts: list[sparse.csr_matrix] = []
        score_parts: list[sparse.csr_matrix] = []
        for counts, sublinear, smooth, norm in self.blocks:
            fit = counts[fit_rows]
            df = np.bincount(fit.indices, minlength=counts.shape[1])
            keep = np.flatnonzero(df)
            idf = sparse.diags(np.log((fit.shape[0] + smooth) / (df[keep] + smooth)) + 1.0)
            for part, parts in ((fit, fit_parts), (counts[score_rows], score_parts)):
                weighted = part[:, keep].astype(np.float64)
                if sublinear:
                    weighted.data = np.log(weighted.data) + 1.0
                parts.append(normalize(sparse.csr_matrix(weighted @ idf), norm=norm))
        return sparse.hstack(fit_parts).tocsr(), sparse.hstack(score_parts).tocsr()


def out_of_writer(
    examples: Sequence[Example], choices: Sequence[str], punctuation: bool = False, features: str = FEATURES_STANDARD
) -> OutOfWriter | None:
    """Leave-one-writer-out logits for every example, or None with fewer than two writers
    that each have lines of at least two choices."""
    by_writer: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        by_writer.setdefault(example.writer, []).append(i)
    if len(by_writer) < MIN_WRITERS_FOR_OUT_OF_WRITER:
        return None
    labels = np.array([e.label for e in examples])
    writers = np.array([e.writer for e in examples])
    for writer in by_writer:
        if len(set(labels[writers != writer])) < 2:
            return None
    prepared = [prepare(e.text) for e in examples]
    logits = np.zeros((len(examples), len(choices)))
    if features != FEATURES_STANDARD:
        # No shared counts for other feature sets: each fold fits the whole pipeline.
        for writer, rows in by_writer.items():
            fit_rows = np.flatnonzero(writers != writer)
            pipeline = build_pipeline(punctuation, features).fit([prepared[i] for i in fit_rows], labels[fit_rows])
            fold_logits = pipeline_logits(pipeline, [prepared[i] for i in rows])
            logits[rows] = _choice_order(fold_logits, list(pipeline.classes_), choices)
    else:
        counts = _SharedCounts(prepared, punctuation)
        for writer, rows in by_writer.items():
            fit_rows = np.flatnonzero(writers != writer)
            fit_x, score_x = counts.fold(fit_rows, np.asarray(rows))
            classifier = build_pipeline().named_steps["classifier"].fit(fit_x, labels[fit_rows])
            logits[rows] = _choice_order(_scores(classifier, score_x), list(classifier.classes_), choices)
    targets = np.array([list(choices).index(e.label) for e in examples], dtype=np.intp)
    temperatures = {
        writer: fit_temperature(logits[writers != writer], targets[writers != writer]) for writer in by_writer
    }
    return OutOfWriter(
        writers=tuple(e.writer for e in examples),
        labels=tuple(e.label for e in examples),
        hard=tuple(e.hard for e in examples),
        texts=tuple(e.text for e in examples),
        logits=logits,
        writer_temperatures=temperatures,
    )


def train(question: Question, data_hash: str) -> TrainedModel:
    started = time.perf_counter()
    examples = question.train_examples()
    if len({e.label for e in examples}) < 2:
        # A question only its writers write, before their lines are imported.
        raise JevDataError(f"{question.name}: no lines of two choices yet; import its writers (docs/JEV.md, Writers)")
    dev = question.dev_examples()
    texts = [e.text for e in examples]
    labels = [e.label for e in examples]
    strangers = {e.label for e in dev} - set(question.choices)
    if strangers:
        raise JevDataError(f"{question.dev_path}: labels not in the training data: {sorted(strangers)}")

    punctuation, features = question.punctuation_tokens, question.features
    held_out = out_of_writer(examples, question.choices, punctuation, features)
    if held_out is not None:
        # Calibrate for text written by someone the model has not read: the temperature is
        # fitted on every line as scored by a model trained without its writer's lines. A
        # same-author dev split would make the model look (and be calibrated) surer than it
        # is on a stranger's words.
        pipeline = _fit(texts, labels, punctuation, features)
        targets = np.array([question.choices.index(label) for label in labels], dtype=np.intp)
        temperature = fit_temperature(held_out.logits, targets)
        calibrated_on, n_calibration = "out-of-writer", len(examples)
    elif dev:
        pipeline = _fit(texts, labels, punctuation, features)
        temperature = _temperature_on(pipeline, [e.text for e in dev], [e.label for e in dev])
        calibrated_on, n_calibration = "dev", len(dev)
    elif min(Counter(labels).values()) >= MIN_PER_CHOICE_FOR_HELD_OUT:
        # Fit the temperature on a slice the model did not see, then refit on everything:
        # the full model is a little surer than the 80% one, but throwing a fifth of a
        # small data set away would cost more accuracy than that costs calibration.
        fit_texts, held_texts, fit_labels, held_labels = train_test_split(
            texts, labels, test_size=HELD_OUT_FRACTION, stratify=labels, random_state=0
        )
        temperature = _temperature_on(_fit(fit_texts, fit_labels, punctuation, features), held_texts, held_labels)
        pipeline = _fit(texts, labels, punctuation, features)
        calibrated_on, n_calibration = "held-out slice", len(held_texts)
    else:
        pipeline = _fit(texts, labels, punctuation, features)
        temperature, calibrated_on, n_calibration = 1.0, "none", 0

    return TrainedModel(
        question=question.name,
        version=model_version(question.name, data_hash),
        choices=question.choices,
        pipeline=pipeline,
        temperature=temperature,
        calibrated_on=calibrated_on,
        n_train=len(examples),
        n_calibration=n_calibration,
        train_seconds=time.perf_counter() - started,
        out_of_writer=held_out,
    )


def model_version(name: str, data_hash: str) -> str:
    return f"{name}-{data_hash[:8]}-{CODE_VERSION}"


def term_counter(vectorizer: TfidfVectorizer) -> Callable[[str], Counter[str]]:
    """The counts of the terms ``vectorizer``'s analyzer finds in a string, in the order it
    finds them first: ``Counter(vectorizer.build_analyzer()(text))``, made faster for the
    two analyzers Jev's pipeline uses (a tag spends most of its time here).

    scikit-learn builds each n-gram in a Python loop; here the slicing and the joining run
    in C (``map``) and ``Counter`` counts them as they come, in the same order, so the
    terms, their counts and the order ``Scorer`` sums them in are the same (a test holds
    it). Any other analyzer set-up is counted from scikit-learn's own analyzer."""
    config = (vectorizer.input, vectorizer.stop_words, vectorizer.tokenizer, vectorizer.ngram_range)
    preprocess = vectorizer.preprocessor
    if not callable(preprocess) or config[:3] != ("content", None, None):
        return _counted(vectorizer.build_analyzer())
    low, high = config[3]
    if vectorizer.analyzer == "char" and low >= 2:
        white_spaces = vectorizer._white_spaces  # the runs sklearn's _char_ngrams folds

        def count_chars(text: str) -> Counter[str]:
            text = white_spaces.sub(" ", preprocess(text))
            length = len(text)
            piece = text.__getitem__
            return Counter(
                chain.from_iterable(
                    map(piece, map(slice, range(length - n + 1), range(n, length + 1)))
                    for n in range(low, min(high + 1, length + 1))
                )
            )

        return count_chars
    if vectorizer.analyzer == "word" and low == 1:
        tokenize = vectorizer.build_tokenizer()

        def count_words(text: str) -> Counter[str]:
            tokens = tokenize(preprocess(text))
            counts = Counter(tokens)
            for n in range(2, min(high + 1, len(tokens) + 1)):
                counts.update(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))
            return counts

        return count_words
    return _counted(vectorizer.build_analyzer())


def _counted(analyze: Callable[[str], Iterable[str]]) -> Callable[[str], Counter[str]]:
    return lambda text: Counter(analyze(text))


@dataclass(frozen=True, slots=True)
class _Part:
    """One TF-IDF block of the FeatureUnion, with its slice of the coefficients."""

    count_terms: Callable[[str], Counter[str]]
    vocabulary: dict[str, int]
    idf: NDArray[np.float64]
    sublinear_tf: bool
    weights: NDArray[np.float64]  # (block features, choices), C-contiguous for row gathers


def _tfidf_blocks(pipeline: Pipeline) -> list[TfidfVectorizer] | None:
    """The union's vectorizers when every block is a plain TfidfVectorizer (the standard
    union), else None (pair_features.py's blocks, which Scorer leaves to scikit-learn)."""
    union: FeatureUnion = pipeline.named_steps["features"]
    blocks = [block for _, block in union.transformer_list]
    return blocks if all(isinstance(block, TfidfVectorizer) for block in blocks) else None


class Scorer:
    """Computes the pipeline's calibrated probabilities for one prepared string."""

    def __init__(self, model: TrainedModel) -> None:
        self._temperature = model.temperature
        # Dense blocks (pair_features.cues): each one's function of a list of texts and its
        # slice of the coefficients. None in the standard union.
        self._dense: tuple[tuple[Callable[[list[str]], sparse.csr_matrix], NDArray[np.float64]], ...] = ()
        union: FeatureUnion = model.pipeline.named_steps["features"]
        classifier: LinearSVC = model.pipeline.named_steps["classifier"]
        coef = np.asarray(classifier.coef_, dtype=np.float64)
        intercept = np.asarray(classifier.intercept_, dtype=np.float64)
        if coef.shape[0] == 1:
            coef = np.vstack([np.zeros_like(coef), coef])
            intercept = np.array([0.0, intercept[0]])
        # Reorder classes_ (sorted) into the question's choice order once, here.
        classes = list(classifier.classes_)
        order = [classes.index(choice) for choice in model.choices]
        coef, intercept = coef[order], intercept[order]

        if _tfidf_blocks(model.pipeline) is None:
            self._init_views(union, coef, intercept)
            return
        vectorizers = [vectorizer for _, vectorizer in union.transformer_list]
        # The union's idf weights and coefficients (one row per column, C-contiguous for row
        # gathers), which each block's are a slice of.
        self._idf = np.concatenate([np.asarray(v.idf_, dtype=np.float64) for v in vectorizers])
        self._weights = np.ascontiguousarray(coef.T)
        parts: list[_Part] = []
        offset = 0
        for vectorizer in vectorizers:
            size = len(vectorizer.vocabulary_)
            parts.append(
                _Part(
                    count_terms=term_counter(vectorizer),
                    vocabulary=vectorizer.vocabulary_,
                    idf=self._idf[offset : offset + size],
                    sublinear_tf=vectorizer.sublinear_tf,
                    weights=self._weights[offset : offset + size],
                )
            )
            offset += size
        self._parts = tuple(parts)
        self._intercept = intercept
        self.coded = model.coded or coded_vocabulary(vectorizers)
        if self.coded is not None:
            self._tf = _LOG_TF if parts[0].sublinear_tf else _TF

    def _init_views(self, union: FeatureUnion, coef: NDArray[np.float64], intercept: NDArray[np.float64]) -> None:
        """The plain path for pair_features.py's union: each TF-IDF block reads its view of
        the text (a ``FunctionTransformer`` before its vectorizer), and a dense block's
        features are computed and weighted as they are. scikit-learn's own
        ``decision_function`` on one pair costs over ten times as much, in validation."""
        self._weights = np.ascontiguousarray(coef.T)
        parts: list[_Part] = []
        dense = []
        offset = 0
        for _, block in union.transformer_list:
            if isinstance(block, Pipeline):
                view, vectorizer = block.named_steps["view"].func, block.named_steps["tfidf"]
                count = term_counter(vectorizer)
                size = len(vectorizer.vocabulary_)
                parts.append(
                    _Part(
                        count_terms=_viewed(view, count),
                        vocabulary=vectorizer.vocabulary_,
                        idf=np.asarray(vectorizer.idf_, dtype=np.float64),
                        sublinear_tf=vectorizer.sublinear_tf,
                        weights=self._weights[offset : offset + size],
                    )
                )
            else:
                size = block.func([""]).shape[1]
                dense.append((block.func, self._weights[offset : offset + size]))
            offset += size
        self._parts = tuple(parts)
        self._dense = tuple(dense)
        self._intercept = intercept
        self.coded = None

    def logits(self, prepared: str) -> NDArray[np.float64]:
        if self.coded is None:
            return self._plain_logits(prepared)
        logits = self._intercept.copy()
        columns, counts, words = self.coded.find(prepared)
        if not len(columns):
            return logits
        # A term occurs at most once per character of the framed text.
        if len(prepared) + FRAME_CHARS < len(self._tf):
            tf = self._tf[counts]
        else:
            tf = counts.astype(np.float64)
            if self._parts[0].sublinear_tf:
                tf = np.log(tf) + 1.0
        values = tf * self._idf[columns]
        weights = self._weights[columns]
        for block in (slice(None, words), slice(words, None)):
            block_values = values[block]
            if len(block_values):
                # Each TfidfVectorizer L2-normalises its own block before the union joins them.
                logits += (block_values @ weights[block]) / np.sqrt(block_values @ block_values)
        return logits

    def _plain_logits(self, prepared: str) -> NDArray[np.float64]:
        """The logits from each block's terms counted as strings and looked up in its
        vocabulary: for a union ``coded_vocabulary`` cannot code."""
        logits = self._intercept.copy()
        for part in self._parts:
            counted = part.count_terms(prepared)
            found = len(counted)
            # The terms' columns, -1 for a term the model never saw: looked up in C.
            columns = np.fromiter(map(part.vocabulary.get, counted, repeat(-1)), dtype=np.intp, count=found)
            tf = np.fromiter(counted.values(), dtype=np.float64, count=found)
            known = columns >= 0
            if not known.all():
                # Unseen terms are left out, not weighted zero: a zero in the sums below
                # would change how BLAS groups their additions, and so their last bits.
                columns, tf = columns[known], tf[known]
            if not len(columns):
                continue
            if part.sublinear_tf:
                tf = np.log(tf) + 1.0
            values = tf * part.idf[columns]
            logits += (values @ part.weights[columns]) / np.sqrt(values @ values)
        for features, weights in self._dense:
            logits += features([prepared]).toarray()[0] @ weights
        return logits

    def probabilities(self, prepared: str) -> NDArray[np.float64]:
        return softmax(self.logits(prepared), self._temperature)


def _viewed(
    view: Callable[[list[str]], list[str]], count: Callable[[str], Counter[str]]
) -> Callable[[str], Counter[str]]:
    return lambda text: count(view([text])[0])


# A term's sublinear tf, 1 + log(count), by count (and the count itself as a float, for a
# block without sublinear tf): looked up rather than computed per message. numpy's log is
# the same function on every element of any array, so these are the values the plain path
# computes (a test holds each one equal to np.log on an array of just that count).
_TF = np.arange(1 << 15, dtype=np.float64)
with np.errstate(divide="ignore"):
    _LOG_TF = np.log(_TF) + 1.0
FRAME_CHARS = len(frame(""))


def coded_vocabulary(vectorizers: Sequence[TfidfVectorizer]) -> CodedVocabulary | None:
    """The union's terms as integer codes (ngrams.py), or None when the union is not the
    word block and char block ``build_pipeline`` makes, framed by one ``frame``, with the
    same sublinear tf (a code for another set-up would have to be proved again)."""
    if len(vectorizers) != 2:
        return None
    words, chars = vectorizers
    for vectorizer in vectorizers:
        if (
            vectorizer.input != "content"
            or vectorizer.preprocessor is not frame
            or vectorizer.stop_words is not None
            or vectorizer.norm != "l2"
            or not vectorizer.use_idf
            or vectorizer.sublinear_tf != words.sublinear_tf
        ):
            return None
    # Tokens of these patterns hold no space, so a word n-gram splits back into its tokens.
    if words.analyzer != "word" or words.tokenizer is not None or words.token_pattern not in TOKEN_PATTERNS:
        return None
    if chars.analyzer != "char":
        return None
    try:
        return CodedVocabulary(
            preprocess=frame,
            tokenize=words.build_tokenizer(),
            word_vocabulary=words.vocabulary_,
            word_ngrams=words.ngram_range,
            white_spaces=chars._white_spaces,
            char_vocabulary=chars.vocabulary_,
            char_ngrams=chars.ngram_range,
        )
    except ValueError:  # an alphabet too large for 64-bit codes
        return None


def cache_path(cache_dir: Path, question: Question, data_hash: str) -> Path:
    # The sklearn version is in the file name because its pickles are not portable across
    # versions: an upgrade retrains instead of loading something subtly broken.
    return cache_dir / f"{question.name}-{data_hash[:16]}-{CODE_VERSION}-sklearn{sklearn.__version__}.pickle"


def read_cached(path: Path) -> object:
    """A cached model, with the standard library's C unpickler. (joblib's loader unpickles
    in pure Python to handle its own array format: kind's 178,000-term vocabulary took
    1.2 s of CPU to load that way and 0.14 s this way, in every server and worker that
    starts; Jev's arrays are small enough that joblib's memory-mapping buys nothing.)"""
    with open(path, "rb") as file:
        return pickle.load(file)  # noqa: S301 - Jev's own cache, written by _write_atomically


def _write_atomically(path: Path, model: object) -> None:
    # Two processes may train the same question at once; each writes its own temporary
    # file and renames it into place, so a reader never sees half a pickle.
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as file:
            pickle.dump(model, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _remove_stale(cache_dir: Path, question: Question, keep: Path) -> None:
    # .joblib: the cache's format before 2026-12-03.
    pattern = re.compile(rf"{re.escape(question.name)}-[0-9a-f]{{16}}-.+\.(pickle|joblib)")
    for old in cache_dir.glob(f"{question.name}-*"):
        if old != keep and pattern.fullmatch(old.name):
            old.unlink(missing_ok=True)


def load_or_train(question: Question, cache_dir: Path) -> tuple[TrainedModel, bool]:
    """The question's model from the cache if its data is unchanged, else trained and cached.

    Returns the model and whether it came from the cache.
    """
    data_hash = question.data_hash()
    path = cache_path(cache_dir, question, data_hash)
    if path.exists():
        try:
            model = read_cached(path)
        except Exception:  # a truncated or foreign file: retraining is always safe
            logger.warning("jev: unreadable cache %s, retraining", path, exc_info=True)
        else:
            if isinstance(model, TrainedModel) and model.version == model_version(question.name, data_hash):
                return model, True
    model = train(question, data_hash)
    blocks = _tfidf_blocks(model.pipeline)
    model.coded = coded_vocabulary(blocks) if blocks is not None else None
    logger.info("jev: trained %s in %.1f s (%s)", model.version, model.train_seconds, model.calibrated_on)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, model)
        _remove_stale(cache_dir, question, keep=path)
    except OSError:
        # A read-only data dir must not take the classifier down: serve from memory.
        logger.warning("jev: could not cache %s in %s", model.version, cache_dir, exc_info=True)
    return model, False
