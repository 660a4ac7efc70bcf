"""The question-answering service: ``ask`` and ``questions`` (warming.py warms it).

A ``Jev`` serves the questions of one data directory. Models load lazily, once per process
and question, under a per-question lock, so the first ``ask`` for a question pays for loading
(or training) it and every later call is just arithmetic. The module-level functions use one
process-wide instance over the built-in data directory.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.core.exceptions import ImproperlyConfigured

from flock.jev import llm
from flock.jev.answers import BAND_UNSURE, JevAnswer, band_for
from flock.jev.questions import PACKAGE_DATA_DIR, JevDataError, Question, UnknownQuestionError, discover
from flock.jev.serving import Scorer, ServedModel, read_served, served_path
from flock.jev.text import prepare

log = logging.getLogger("crows.jev")

if TYPE_CHECKING:
    from flock.jev.model import TrainedModel


@dataclass(frozen=True, slots=True)
class LoadedModel:
    question: Question
    model: ServedModel
    scorer: Scorer
    from_cache: bool


def default_cache_dir() -> Path:
    """``CROWS_JEV_CACHE_DIR``, else ``<CROWS_DATA_DIR>/jev`` when Django settings are
    configured, else ``./.data/jev``."""
    try:
        from django.conf import settings

        cache_dir = getattr(settings, "CROWS_JEV_CACHE_DIR", None)
        if cache_dir:
            return Path(cache_dir)
        data_dir = getattr(settings, "CROWS_DATA_DIR", None)
    except ImproperlyConfigured:  # no DJANGO_SETTINGS_MODULE: a script or a bare test
        data_dir = None
    return Path(data_dir or ".data") / "jev"


class Jev:
    def __init__(self, data_dir: Path | None = None, cache_dir: Path | None = None) -> None:
        self.data_dir = data_dir or PACKAGE_DATA_DIR
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._questions: dict[str, Question] | None = None
        self._broken: dict[str, JevDataError] = {}
        self._question_locks: dict[str, threading.Lock] = {}
        self._loaded: dict[str, LoadedModel] = {}

    @property
    def cache_dir(self) -> Path:
        # Resolved late: settings may be configured after this module is imported.
        return self._cache_dir or default_cache_dir()

    def questions(self) -> dict[str, Question]:
        if self._questions is None:
            with self._lock:
                if self._questions is None:
                    self._questions, self._broken = discover(self.data_dir)
                    self._question_locks = {name: threading.Lock() for name in self._questions}
        return dict(self._questions)

    def question(self, name: str) -> Question:
        found = self.questions().get(name)
        if found is None:
            if name in self._broken:
                raise self._broken[name]
            raise UnknownQuestionError(
                f"unknown Jev question {name!r}; known: {', '.join(sorted(self.questions()))}"
            )
        return found

    def is_loaded(self, name: str) -> bool:
        """Whether the question's model is in memory (asking it loads nothing)."""
        return name in self._loaded

    def loaded(self, name: str) -> LoadedModel:
        ready = self._loaded.get(name)
        if ready is not None:
            return ready
        question = self.question(name)
        # One lock per question: a thread loading `kind` does not hold up `mode`, and two
        # threads asking `kind` at start-up train or load it only once.
        with self._question_locks[name]:
            ready = self._loaded.get(name)
            if ready is None:
                served = read_served(self.cache_dir, name, question.data_hash())
                from_cache = served is not None
                if served is None:
                    _, served, from_cache = self._train(question)
                ready = LoadedModel(question, served, Scorer(served), from_cache)
                self._loaded[name] = ready
        return ready

    def trained(self, name: str) -> TrainedModel:
        """The question's scikit-learn model (jev_eval's figures, the tests that hold the
        served arithmetic to the pipeline's): from the cache, or trained now."""
        return self._train(self.question(name))[0]

    def _train(self, question: Question) -> tuple[TrainedModel, ServedModel, bool]:
        # Late, and only here: serving reads the served model (serving.py) and never imports
        # scikit-learn, which costs a process start over two seconds of CPU with scipy.
        from flock.jev.model import load_or_train

        return load_or_train(question, self.cache_dir)

    def broken(self) -> dict[str, JevDataError]:
        """The questions whose data could not be read, by name, with the error naming the file
        and line; the others are served without them."""
        self.questions()
        return dict(self._broken)

    def is_cached(self, name: str) -> bool:
        """Whether the question's model for its current data is in the cache (so loading it
        takes a moment, not a training run)."""
        question = self.question(name)
        return served_path(self.cache_dir, name, question.data_hash()).exists()

    def ask(self, question: str, text: str, *, second_opinion: bool = True) -> JevAnswer:
        """Answer ``question`` about ``text``. With ``second_opinion`` (the default) an unsure
        answer may be settled by the optional LLM second opinion (llm.py); jev_eval passes
        False to measure the local model alone."""
        started = time.perf_counter()
        if not isinstance(text, str):
            raise TypeError(f"Jev asks about text, got {type(text).__name__}")
        ready = self.loaded(question)
        probs = ready.scorer.probabilities(prepare(text))
        top = int(np.argmax(probs))
        choices = ready.model.choices
        answer = JevAnswer(
            question=question,
            choice=choices[top],
            probs={choice: float(p) for choice, p in zip(choices, probs, strict=True)},
            band=band_for(float(probs[top]), ready.question.high_threshold),
            impl=ready.model.impl,
            version=ready.model.version,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            local_choice=choices[top],
        )
        if answer.band == BAND_UNSURE and second_opinion:
            answer = llm.second_opinion(ready.question, text, answer)
            if answer.source != "local":
                answer = replace(answer, latency_ms=(time.perf_counter() - started) * 1000.0)
        return answer

    def warm(self) -> dict[str, str]:
        """Load (or train) every question now; returns question name -> model version.

        ``kind`` goes first: every posted message waits for it, and training from scratch
        takes seconds (docs/JEV.md, "Training time")."""
        return {name: self.loaded(name).model.version for name in self.warm_order()}

    def warm_order(self) -> list[str]:
        """The questions in the order `warm` loads them: ``kind`` first."""
        return sorted(self.questions(), key=lambda name: (name != "kind", name))


_default: Jev | None = None
_default_lock = threading.Lock()


def default_jev() -> Jev:
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Jev()
    return _default


def ask(question: str, text: str) -> JevAnswer:
    """Answer ``question`` about ``text``; text past 4,000 characters is ignored. With
    ``CROWS_JEV_LLM`` on and a real brain configured, an unsure answer is put to the model
    (llm.py); otherwise this is the local model alone."""
    return default_jev().ask(question, text)


def questions() -> dict[str, Question]:
    return default_jev().questions()
