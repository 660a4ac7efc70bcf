"""Training and the on-disk cache: everything of Jev's that needs scikit-learn.

The model is a scikit-learn pipeline: a FeatureUnion of word 1-2 gram and char 2-5 gram
TF-IDF, into a linear SVM (one-vs-rest), plus one temperature (calibration.py) fitted on
out-of-writer predictions when the corpus has several writers.

Prediction does not go through ``Pipeline.predict_proba``, nor through scikit-learn at all.
On one short string sklearn spends most of its time in input validation and sparse-matrix
plumbing, not arithmetic, and importing it costs a process start more than a second.
``served_model`` takes the fitted analyzers' settings, vocabularies, idf weights and
coefficients out of the pipeline into serving.py's types, cached beside the trained model;
``serving.Scorer`` does the same sum directly (tests hold the two equal), which makes a tag
cost a fraction of a millisecond, and serving processes never import this module.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, normalize
from sklearn.svm import LinearSVC

from flock.jev.calibration import fit_temperature
from flock.jev.ngrams import CodedVocabulary
from flock.jev.pair_features import SERVED_DENSE
from flock.jev.pair_features import build_features as build_pair_features
from flock.jev.questions import FEATURES_PAIR, FEATURES_STANDARD, Example, JevDataError, Question
from flock.jev.serving import (
    CODE_VERSION,
    WHITE_SPACES,
    Block,
    Counting,
    DenseBlock,
    ServedModel,
    TermBlock,
    frame,
    model_version,
    read_cached,
    read_served,
    served_path,
    trainer_version,
)
from flock.jev.text import prepare

logger = logging.getLogger(__name__)

# Inverse regularisation of the linear SVM, chosen by leave-one-writer-out accuracy on
# kind (flat from 0.6 to 2). The temperature turns its margins into probabilities.
SVM_C = 1.0
WORD_TOKENS = r"(?u)\b\w+\b"
# With the question's "punctuation_tokens" (kind's), ? ! : and " are word tokens too.
WORD_AND_PUNCTUATION_TOKENS = r"(?u)\b\w+\b|[?!:\"]"
TOKEN_PATTERNS = (WORD_TOKENS, WORD_AND_PUNCTUATION_TOKENS)
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
    out_of_writer: OutOfWriter | None = None


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


def counting_of(vectorizer: TfidfVectorizer, view: object = None) -> Counting:
    """How a fitted vectorizer finds its terms, as serving.py reproduces it; ValueError for
    a set-up it does not (every vectorizer Jev builds is one it does: a test holds it)."""
    analyzer = vectorizer.analyzer
    plain = (
        vectorizer.input == "content"
        and vectorizer.strip_accents is None
        and vectorizer.tokenizer is None
        and not vectorizer.binary
        and vectorizer.norm == "l2"
        and vectorizer.use_idf
        and analyzer in ("word", "char", "char_wb")
        and (analyzer == "word" or vectorizer.stop_words is None)
        and vectorizer.stop_words in (None, "english")
        and (vectorizer.preprocessor is None or getattr(vectorizer.preprocessor, "__module__", "").startswith("flock."))
        and WHITE_SPACES.pattern == vectorizer._white_spaces.pattern
    )
    if not plain:
        raise ValueError(f"Jev cannot serve this vectorizer without scikit-learn: {vectorizer!r}")
    stop_words = vectorizer.get_stop_words()
    return Counting(
        analyzer=analyzer,
        ngram_range=tuple(vectorizer.ngram_range),
        token_pattern=vectorizer.token_pattern,
        lowercase=vectorizer.lowercase,
        preprocessor=vectorizer.preprocessor,
        stop_words=frozenset(stop_words) if stop_words is not None else None,
        view=view,  # type: ignore[arg-type]  # a module-level function of a list of texts
    )


def term_block(vectorizer: TfidfVectorizer, view: object = None) -> TermBlock:
    return TermBlock(
        counting=counting_of(vectorizer, view),
        vocabulary=dict(vectorizer.vocabulary_),
        idf=np.asarray(vectorizer.idf_, dtype=np.float64),
        sublinear_tf=vectorizer.sublinear_tf,
    )


def served_blocks(union: FeatureUnion) -> tuple[Block, ...]:
    """The union's blocks in its column order: a TF-IDF block, the same behind a view
    (pair_features.py's ``Pipeline`` of a ``FunctionTransformer`` and a vectorizer), or a
    dense block (a ``FunctionTransformer`` of pair_features.SERVED_DENSE)."""
    blocks: list[Block] = []
    for _, block in union.transformer_list:
        if isinstance(block, TfidfVectorizer):
            blocks.append(term_block(block))
        elif isinstance(block, Pipeline):
            blocks.append(term_block(block.named_steps["tfidf"], view=block.named_steps["view"].func))
        elif isinstance(block, FunctionTransformer) and block.func in SERVED_DENSE:
            served = SERVED_DENSE[block.func]
            blocks.append(DenseBlock(features=served, width=block.func([""]).shape[1]))  # type: ignore[arg-type]
        else:
            raise ValueError(f"Jev cannot serve this block without scikit-learn: {block!r}")
    return tuple(blocks)


def served_model(model: TrainedModel) -> ServedModel:
    """The trained pipeline's arithmetic, for serving.Scorer."""
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
    vectorizers = _tfidf_blocks(model.pipeline)
    return ServedModel(
        question=model.question,
        version=model.version,
        choices=model.choices,
        temperature=model.temperature,
        calibrated_on=model.calibrated_on,
        n_train=model.n_train,
        blocks=served_blocks(union),
        weights=np.ascontiguousarray(coef.T),
        intercept=intercept,
        coded=coded_vocabulary(vectorizers) if vectorizers is not None else None,
    )


def _tfidf_blocks(pipeline: Pipeline) -> list[TfidfVectorizer] | None:
    """The union's vectorizers when every block is a plain TfidfVectorizer (the standard
    union), else None (pair_features.py's blocks, which the codes do not cover)."""
    union: FeatureUnion = pipeline.named_steps["features"]
    blocks = [block for _, block in union.transformer_list]
    return blocks if all(isinstance(block, TfidfVectorizer) for block in blocks) else None


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
    return cache_dir / f"{question.name}-{data_hash[:16]}-{CODE_VERSION}-sklearn{trainer_version()}.pickle"


def write_atomically(path: Path, model: object) -> None:
    # Two processes may train the same question at once; each writes its own temporary
    # file and renames it into place, so a reader never sees half a pickle.
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temporary, "wb") as file:
            pickle.dump(model, file, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _remove_stale(cache_dir: Path, question: Question, keep: tuple[Path, ...]) -> None:
    # .joblib: the cache's format before 2026-12-03.
    pattern = re.compile(rf"{re.escape(question.name)}-[0-9a-f]{{16}}-.+\.(pickle|joblib)")
    for old in cache_dir.glob(f"{question.name}-*"):
        if old not in keep and pattern.fullmatch(old.name):
            old.unlink(missing_ok=True)


def load_or_train(question: Question, cache_dir: Path) -> tuple[TrainedModel, ServedModel, bool]:
    """The question's trained model from the cache if its data is unchanged, else trained
    and cached; its served model (serving.py), written beside it when missing; and whether
    the trained model came from the cache."""
    data_hash = question.data_hash()
    path = cache_path(cache_dir, question, data_hash)
    cached: TrainedModel | None = None
    if path.exists():
        try:
            found = read_cached(path)
        except Exception:  # a truncated or foreign file: retraining is always safe
            logger.warning("jev: unreadable cache %s, retraining", path, exc_info=True)
        else:
            if isinstance(found, TrainedModel) and found.version == model_version(question.name, data_hash):
                cached = found
    model = cached or train(question, data_hash)
    if cached is None:
        logger.info("jev: trained %s in %.1f s (%s)", model.version, model.train_seconds, model.calibrated_on)
    served = served_model(model)
    served_file = served_path(cache_dir, question.name, data_hash)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        if cached is None:
            write_atomically(path, model)
        if cached is None or read_served(cache_dir, question.name, data_hash) is None:
            # Missing, unreadable or stale: every process start would come here again.
            write_atomically(served_file, served)
        _remove_stale(cache_dir, question, keep=(path, served_file))
    except OSError:
        # A read-only data dir must not take the classifier down: serve from memory.
        logger.warning("jev: could not cache %s in %s", model.version, cache_dir, exc_info=True)
    return model, served, cached is not None
