"""Crow-task fit: how close a task's wording is to a crow's persona or strength text.

``fit_score`` is the TF-IDF cosine between the two texts, with one addition: the task is
first tagged with Jev's ``task_type`` question and the type's name ("data", "code", ...) is
appended to it. Crow strengths name the task types they serve plainly (flock/personas.py),
while tasks rarely do: "chart weekly signups" shares no word with "data and records:
tables, numbers, spreadsheets", but it is a data task. On the task_type dev items this
doubled how often the top-scoring roster crow is one whose first task type is the item's
(0.39 -> 0.76).

The vectorizer is fitted once per process on every built-in question's training texts
(todo items and chat messages), so idf comes from the flock's own language: "the" and
"please" weigh nearly nothing, "pricing" and "flaky" a lot. It joins word unigrams (English
stop words removed) with char_wb 3-5 grams, so "price" on a task still meets "pricing".

Fitting takes a couple of seconds of CPU, so the fitted vectorizer is cached beside the
models (``fit-vocab-<data>-v<n>-sklearn<version>.pickle`` in Jev's cache directory, keyed by
every question's data hash): a server that starts with it cached is ready at once, and
``manage.py jev_warm`` writes it before the server starts. What is cached is the union's
arithmetic in serving.py's types (``ServedVocabulary``), so a server reads it, and scores,
without importing scikit-learn; only fitting it does.

The score is a similarity, not a probability: unrelated texts land near 0, and even a
good match rarely passes 0.3. Compare the scores of several crows for one task; do not read
a fixed cut-off into them.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from flock.jev.service import default_jev
from flock.jev.serving import ServedVocabulary, read_cached, trainer_version
from flock.jev.text import prepare

TASK_TYPE_QUESTION = "task_type"
# Bump when the vectorizer's settings or its corpus's preparation change: part of the cache key.
# 2: cached as serving.ServedVocabulary, not as scikit-learn's FeatureUnion.
VOCAB_VERSION = 2

log = logging.getLogger("crows.jev")

_vectorizer: ServedVocabulary | None = None
_lock = threading.Lock()


def _background_corpus() -> list[str]:
    corpus: list[str] = []
    for question in default_jev().questions().values():
        corpus.extend(prepare(example.text) for example in question.train_examples())
    return corpus


def vocabulary_cache_path() -> Path:
    """Where the fitted vectorizer for the questions' current data is cached."""
    jev = default_jev()
    digest = hashlib.sha256()
    for name, question in sorted(jev.questions().items()):
        digest.update(f"{name}\0{question.data_hash()}\0".encode())
    return jev.cache_dir / f"fit-vocab-{digest.hexdigest()[:16]}-v{VOCAB_VERSION}-sklearn{trainer_version()}.pickle"


def _fit_and_cache(path: Path) -> ServedVocabulary:
    """Fit the union on the built-in questions' texts and cache what serving it needs. An
    unwritable cache only costs the next process the fit again."""
    # Imported on first use, like the models' training (Jev._train): serving never needs it.
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    from flock.jev.model import served_blocks, write_atomically  # late: it imports scikit-learn

    union = FeatureUnion(
        [
            ("words", TfidfVectorizer(stop_words="english", sublinear_tf=True)),
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)),
        ]
    )
    union.fit(_background_corpus())
    vocabulary = ServedVocabulary(blocks=served_blocks(union))  # type: ignore[arg-type]  # TF-IDF blocks only
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, vocabulary)
        for old in [*path.parent.glob("fit-vocab-*.pickle"), *path.parent.glob("fit-vocab-*.joblib")]:
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        log.warning("jev: could not cache the fit vocabulary in %s", path.parent, exc_info=True)
    return vocabulary


def _load_or_fit() -> tuple[ServedVocabulary, bool]:
    """The vectorizer from the cache, or fitted now and cached; and whether it was cached.
    An unreadable cache file is refitted."""
    path = vocabulary_cache_path()
    if path.exists():
        try:
            cached = read_cached(path)
        except Exception:
            log.warning("jev: unreadable fit vocabulary %s, refitting", path, exc_info=True)
        else:
            if isinstance(cached, ServedVocabulary):
                return cached, True
    return _fit_and_cache(path), False


def _fitted() -> ServedVocabulary:
    global _vectorizer
    if _vectorizer is None:
        with _lock:
            if _vectorizer is None:
                _vectorizer, _ = _load_or_fit()
    return _vectorizer


def warm_fit_score() -> bool:
    """Load (or fit and cache) the vectorizer now; whether it came from the cache (False
    when this process already had it)."""
    global _vectorizer
    if _vectorizer is not None:  # every post asks: no lock once it is there
        return False
    with _lock:
        if _vectorizer is not None:
            return False
        _vectorizer, cached = _load_or_fit()
    return cached


def fit_ready() -> bool:
    """Whether `fit_score` answers now without loading anything: the vocabulary and the
    task_type model are in this process already (a caller under a lock asks first)."""
    jev = default_jev()
    return _vectorizer is not None and (
        TASK_TYPE_QUESTION not in jev.questions() or jev.is_loaded(TASK_TYPE_QUESTION)
    )


# Dispatch scores one task against every crow in the room, over and over against the same
# few profiles, so both the task's type and each text's vector are remembered.
@functools.lru_cache(maxsize=1024)
def _with_task_type(task_text: str) -> str:
    jev = default_jev()
    if TASK_TYPE_QUESTION not in jev.questions():
        return task_text
    return f"{task_text} {jev.ask(TASK_TYPE_QUESTION, task_text).choice}"


@functools.lru_cache(maxsize=1024)
def _unit_vector(text: str) -> tuple[NDArray[np.intp], NDArray[np.float64]] | None:
    """The text's TF-IDF vector scaled to length 1 (its columns and values), or None when
    no known n-gram occurs."""
    return _fitted().unit_vector(prepare(text))


def fit_score(task_text: str, crow_profile_text: str) -> float:
    """Cosine similarity in [0, 1] of a task (plus its task type) and a crow's profile text."""
    if not task_text.strip():
        # An empty task would still get a type appended and then match chatty crows.
        return 0.0
    task, profile = _unit_vector(_with_task_type(task_text)), _unit_vector(crow_profile_text)
    if task is None or profile is None:
        return 0.0
    _, in_task, in_profile = np.intersect1d(task[0], profile[0], assume_unique=True, return_indices=True)
    return float(np.clip(task[1][in_task] @ profile[1][in_profile], 0.0, 1.0))
