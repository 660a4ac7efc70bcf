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

The score is a similarity, not a probability: unrelated texts land near 0, and even a
good match rarely passes 0.3. Compare the scores of several crows for one task; do not read
a fixed cut-off into them.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING

import numpy as np

from flock.jev.service import default_jev
from flock.jev.text import prepare

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix
    from sklearn.pipeline import FeatureUnion

TASK_TYPE_QUESTION = "task_type"

_vectorizer: FeatureUnion | None = None
_lock = threading.Lock()


def _background_corpus() -> list[str]:
    corpus: list[str] = []
    for question in default_jev().questions().values():
        corpus.extend(prepare(example.text) for example in question.train_examples())
    return corpus


def _fitted() -> FeatureUnion:
    global _vectorizer
    if _vectorizer is None:
        with _lock:
            if _vectorizer is None:
                # Imported on first use, like the models: see Jev.loaded.
                from sklearn.feature_extraction.text import TfidfVectorizer
                from sklearn.pipeline import FeatureUnion

                union = FeatureUnion(
                    [
                        ("words", TfidfVectorizer(stop_words="english", sublinear_tf=True)),
                        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)),
                    ]
                )
                union.fit(_background_corpus())
                _vectorizer = union
    return _vectorizer


def warm_fit_score() -> None:
    _fitted()


# Dispatch scores one task against every crow in the room, over and over against the same
# few profiles, so both the task's type and each text's vector are remembered.
@functools.lru_cache(maxsize=1024)
def _with_task_type(task_text: str) -> str:
    jev = default_jev()
    if TASK_TYPE_QUESTION not in jev.questions():
        return task_text
    return f"{task_text} {jev.ask(TASK_TYPE_QUESTION, task_text).choice}"


@functools.lru_cache(maxsize=1024)
def _unit_vector(text: str) -> csr_matrix | None:
    """The text's TF-IDF vector scaled to length 1, or None when no known n-gram occurs."""
    vector = _fitted().transform([prepare(text)]).tocsr()
    norm = float(np.sqrt(vector.multiply(vector).sum()))
    return vector / norm if norm > 0.0 else None


def fit_score(task_text: str, crow_profile_text: str) -> float:
    """Cosine similarity in [0, 1] of a task (plus its task type) and a crow's profile text."""
    if not task_text.strip():
        # An empty task would still get a type appended and then match chatty crows.
        return 0.0
    task, profile = _unit_vector(_with_task_type(task_text)), _unit_vector(crow_profile_text)
    if task is None or profile is None:
        return 0.0
    return float(np.clip(task.multiply(profile).sum(), 0.0, 1.0))
