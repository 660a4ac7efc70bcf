"""Serving Jev's answers with numpy alone.

Every server, worker and management command that asks Jev a question loads its models
here, and none of them imports scikit-learn or scipy: those two cost about 2.4 s of CPU at
every process start, half of what a daphne spends starting (docs/TESTING.md, "Where the
CPU goes"), and a test run starts well over a hundred processes. Training (model.py)
fits the models with scikit-learn and writes, beside each trained model in the cache, its
``ServedModel``: how each block of the feature union counts its terms, the vocabularies,
idf weights, coefficients and temperature, all in types defined here or in numpy, so that
unpickling it imports nothing more.

A ``ServedModel`` is the trained pipeline's arithmetic, not an approximation of it:
tests/flock/test_jev_exact.py holds ``term_counter`` to scikit-learn's analyzers term for
term, and the scorer's logits to the pipeline's ``decision_function``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import pickle
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from flock.jev.ngrams import CodedVocabulary

# Bump when features, preprocessing or training change: it is part of every cache key and
# of every answer's version, so old caches are retrained rather than silently reused.
# v2-v3: writers, out-of-writer temperature, SVM, framed text, char n-grams; v4: URIs of any
# scheme, no ellipsis files; v5: served without scikit-learn (the pickles name new modules).
CODE_VERSION = "v5"
# What every answer says trained its model (answers keep the field the contract names).
IMPL = "sklearn"
BOS, EOS = "_bos_", "_eos_"
# scikit-learn's runs of white space that its char analyzers fold into one space.
WHITE_SPACES = re.compile(r"\s\s+")

Analyzer = Literal["word", "char", "char_wb"]


def frame(prepared: str) -> str:
    """The text the standard union's vectorizers see: ``prepare``'s output between start and
    end markers, so n-grams can tell where a message opens and closes ("_bos_ _crow_ can" is
    a request opening with its addressee; "_crow_ _eos_" one that names it last)."""
    return f"{BOS} {prepared} {EOS}"


FRAME_CHARS = len(frame(""))


def softmax(logits: NDArray[np.float64], temperature: float = 1.0) -> NDArray[np.float64]:
    scaled = logits / temperature
    if scaled.ndim == 1:
        # One message's logits, on every tag's path: the same operations in place, without
        # the axis bookkeeping (a test holds each row equal to the batch's).
        scaled -= scaled.max()
        np.exp(scaled, out=scaled)
        scaled /= scaled.sum()
        return scaled
    scaled = scaled - scaled.max(axis=-1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(axis=-1, keepdims=True)


@dataclass(frozen=True, slots=True)
class Counting:
    """How one TF-IDF block finds its terms in a text: scikit-learn's analyzer settings that
    Jev's vectorizers use, and the view of the text the block reads (pair_views.py).

    ``preprocessor``, ``view`` and dense features are module-level functions, which pickle
    as their names: loading a served model imports their modules, never scikit-learn's."""

    analyzer: Analyzer
    ngram_range: tuple[int, int]
    token_pattern: str
    lowercase: bool
    preprocessor: Callable[[str], str] | None = None
    stop_words: frozenset[str] | None = None
    view: Callable[[list[str]], list[str]] | None = None


def term_counter(counting: Counting) -> Callable[[str], Counter[str]]:
    """The counts of the terms a block's analyzer finds in a string, in the order it first
    finds them (``Counter(vectorizer.build_analyzer()(text))``). scikit-learn builds each
    n-gram in a Python loop; here the slicing and joining run in C (``map``) and ``Counter``
    counts them as they come, in the same order, so the terms, their counts and the order
    ``Scorer`` sums them in are the same (a test holds it)."""
    preprocess: Callable[[str], str]
    if counting.preprocessor is not None:
        # As scikit-learn: a preprocessor of one's own replaces the lowercasing.
        preprocess = counting.preprocessor
    elif counting.lowercase:
        preprocess = str.lower
    else:
        preprocess = str
    low, high = counting.ngram_range
    count: Callable[[str], Counter[str]]
    if counting.analyzer == "char":

        def count(text: str) -> Counter[str]:
            text = WHITE_SPACES.sub(" ", preprocess(text))
            length = len(text)
            piece = text.__getitem__
            return Counter(
                chain.from_iterable(
                    map(piece, map(slice, range(length - n + 1), range(n, length + 1)))
                    for n in range(low, min(high + 1, length + 1))
                )
            )

    elif counting.analyzer == "char_wb":

        def count(text: str) -> Counter[str]:
            grams: list[str] = []
            for word in WHITE_SPACES.sub(" ", preprocess(text)).split():
                padded = f" {word} "
                length = len(padded)
                for n in range(low, high + 1):
                    grams.extend(padded[i : i + n] for i in range(max(1, length - n + 1)))
                    if length - n + 1 <= 1:  # a word shorter than n counts once
                        break
            return Counter(grams)

    else:
        tokenize = re.compile(counting.token_pattern).findall
        stop_words = counting.stop_words

        def count(text: str) -> Counter[str]:
            tokens = tokenize(preprocess(text))
            if stop_words is not None:
                tokens = [token for token in tokens if token not in stop_words]
            counts = Counter(tokens) if low == 1 else Counter()
            for n in range(max(low, 2), min(high + 1, len(tokens) + 1)):
                counts.update(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))
            return counts

    view = counting.view
    if view is None:
        return count
    return lambda text: count(view([text])[0])


@dataclass(frozen=True, slots=True)
class TermBlock:
    """One TF-IDF block of a union, L2-normalised on its own before the union joins them."""

    counting: Counting
    vocabulary: dict[str, int]
    idf: NDArray[np.float64]
    sublinear_tf: bool

    @property
    def width(self) -> int:
        return len(self.vocabulary)


@dataclass(frozen=True, slots=True)
class DenseBlock:
    """A block of a few features computed as they are (pair_views.cue_rows): a function of
    a list of texts giving one row of ``width`` floats per text."""

    features: Callable[[list[str]], NDArray[np.float64]]
    width: int


Block = TermBlock | DenseBlock


@dataclass(frozen=True, slots=True)
class ServedVocabulary:
    """A fitted union's blocks, without a classifier: the crow-fit score's vectors (fit.py)."""

    blocks: tuple[TermBlock, ...]

    def unit_vector(self, text: str) -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
        """The union's TF-IDF vector of ``text`` (each block L2-normalised, as the union
        transforms) scaled to length 1, as sorted columns and their values; None when no
        known term occurs."""
        columns: list[NDArray[np.intp]] = []
        values: list[NDArray[np.float64]] = []
        offset = 0
        for block in self.blocks:
            found = _block_values(block, term_counter(block.counting)(text))
            if found is not None:
                columns.append(found[0] + offset)
                values.append(found[1] / np.sqrt(found[1] @ found[1]))
            offset += block.width
        if not columns:
            return None
        all_columns, all_values = np.concatenate(columns), np.concatenate(values)
        order = np.argsort(all_columns)
        return all_columns[order], all_values[order] / np.sqrt(all_values @ all_values)


def _block_values(block: TermBlock, counted: Counter[str]) -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
    """The block's known terms among those counted in a text (their columns) and their
    tf-idf, not yet normalised; None when it knows none."""
    found = len(counted)
    # The terms' columns, -1 for a term the model never saw: looked up in C.
    columns = np.fromiter(map(block.vocabulary.get, counted, repeat(-1)), dtype=np.intp, count=found)
    tf = np.fromiter(counted.values(), dtype=np.float64, count=found)
    known = columns >= 0
    if not known.all():
        # Unseen terms are left out, not weighted zero: a zero in the sums would change how
        # BLAS groups their additions, and so their last bits.
        columns, tf = columns[known], tf[known]
    if not len(columns):
        return None
    if block.sublinear_tf:
        tf = np.log(tf) + 1.0
    return columns, tf * block.idf[columns]


@dataclass(frozen=True, slots=True)
class ServedModel:
    """What serving one question's trained model needs, and nothing of scikit-learn's."""

    question: str
    version: str
    choices: tuple[str, ...]
    temperature: float
    calibrated_on: str
    n_train: int
    blocks: tuple[Block, ...]
    # The union's coefficients: one row per column (C-contiguous for row gathers), one
    # column per choice in the question's order; and the intercepts in that order.
    weights: NDArray[np.float64]
    intercept: NDArray[np.float64]
    # The vocabulary's integer codes (ngrams.py) when the union is the standard one, computed
    # once at training: coding kind's terms takes 0.2 s of CPU that every process start
    # would otherwise pay. None: the plain path.
    coded: CodedVocabulary | None = None
    impl: str = IMPL


class Scorer:
    """Computes a served model's calibrated probabilities for one prepared string."""

    def __init__(self, model: ServedModel) -> None:
        self._temperature = model.temperature
        self._intercept = model.intercept
        self._weights = model.weights
        self.coded = model.coded
        parts: list[tuple[Callable[[str], Counter[str]], TermBlock, NDArray[np.float64]]] = []
        dense: list[tuple[Callable[[list[str]], NDArray[np.float64]], NDArray[np.float64]]] = []
        offset = 0
        for block in model.blocks:
            weights = self._weights[offset : offset + block.width]
            if isinstance(block, TermBlock):
                parts.append((term_counter(block.counting), block, weights))
            else:
                dense.append((block.features, weights))
            offset += block.width
        self._parts = tuple(parts)
        self._dense = tuple(dense)
        term_blocks = [block for block in model.blocks if isinstance(block, TermBlock)]
        # The union's idf weights, which each block's are a slice of (the coded path's).
        self._idf = np.concatenate([block.idf for block in term_blocks]) if term_blocks else np.zeros(0)
        self._sublinear = bool(term_blocks) and term_blocks[0].sublinear_tf
        self._tf = _LOG_TF if self._sublinear else _TF

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
            if self._sublinear:
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
        vocabulary: for a union the codes do not cover (pair_views.py's views, or a set-up
        ``coded_vocabulary`` cannot code). scikit-learn's own ``decision_function`` on one
        pair costs over ten times as much, in validation."""
        logits = self._intercept.copy()
        for count_terms, block, weights in self._parts:
            found = _block_values(block, count_terms(prepared))
            if found is not None:
                columns, values = found
                logits += (values @ weights[columns]) / np.sqrt(values @ values)
        for features, weights in self._dense:
            logits += features([prepared])[0] @ weights
        return logits

    def probabilities(self, prepared: str) -> NDArray[np.float64]:
        return softmax(self.logits(prepared), self._temperature)


# A term's sublinear tf, 1 + log(count), by count (and the count itself as a float, for a
# block without sublinear tf): looked up rather than computed per message. numpy's log is
# the same function on every element of any array, so these are the values the plain path
# computes (a test holds each one equal to np.log on an array of just that count).
_TF = np.arange(1 << 15, dtype=np.float64)
with np.errstate(divide="ignore"):
    _LOG_TF = np.log(_TF) + 1.0


@functools.cache  # the installed package does not change under a running process
def trainer_version() -> str:
    """The installed scikit-learn's version, read from its metadata without importing it.
    Its pickles are not portable across versions, so it is part of every cache file's
    name: an upgrade retrains instead of loading something subtly broken."""
    return importlib.metadata.version("scikit-learn")


def served_path(cache_dir: Path, name: str, data_hash: str) -> Path:
    """Where a question's served model is cached (the trained model's file, model.py's
    ``cache_path``, sits beside it with the same key)."""
    return cache_dir / f"{name}-{data_hash[:16]}-{CODE_VERSION}-sklearn{trainer_version()}.served.pickle"


def model_version(name: str, data_hash: str) -> str:
    return f"{name}-{data_hash[:8]}-{CODE_VERSION}"


def read_cached(path: Path) -> object:
    """A cached model, with the standard library's C unpickler. (joblib's loader unpickles
    in pure Python to handle its own array format: kind's 178,000-term vocabulary took
    1.2 s of CPU to load that way and 0.14 s this way, in every server and worker that
    starts; Jev's arrays are small enough that joblib's memory-mapping buys nothing.)"""
    with open(path, "rb") as file:
        return pickle.load(file)  # noqa: S301 - Jev's own cache, written by model.write_atomically


def read_served(cache_dir: Path, name: str, data_hash: str) -> ServedModel | None:
    """The question's served model for this data, or None when it is not cached (or its
    file is unreadable or stale: training writes it again)."""
    path = served_path(cache_dir, name, data_hash)
    try:
        served = read_cached(path)
    except Exception:  # noqa: BLE001 - missing, truncated or foreign: training writes it again
        return None
    if isinstance(served, ServedModel) and served.version == model_version(name, data_hash):
        return served
    return None

