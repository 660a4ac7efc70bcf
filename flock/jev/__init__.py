"""Jev: a fast local text classifier that answers named questions about a text.

    from flock.jev import ask
    answer = ask("kind", "Taking it, @Hugin.")   # answer.choice == "claim"

Questions are data files (see questions.py and docs/JEV.md); each is a TF-IDF + logistic
regression model with a fitted temperature, cached on disk and loaded once per process.
"""

from flock.jev.answers import JevAnswer
from flock.jev.fit import fit_score
from flock.jev.questions import JevDataError, JevError, Question, UnknownQuestionError
from flock.jev.service import Jev, ask, questions
from flock.jev.warming import warm, warm_in_background

__all__ = [
    "Jev",
    "JevAnswer",
    "JevDataError",
    "JevError",
    "Question",
    "UnknownQuestionError",
    "ask",
    "fit_score",
    "questions",
    "warm",
    "warm_in_background",
]
