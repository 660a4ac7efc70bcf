"""The "pair" feature set's views of a pair text, and its cues: what pair_features.py's
blocks read, in a module of numpy and re alone, so that serving a pair question
(serving.py) imports no scikit-learn.

A question whose metadata says ``"features": "pair"`` (``expectation_met``) is not read as
one bag of n-grams. Its text is ``pairs.pair_text``'s, through ``text.prepare``: the
who-speaks token, the later message, the separator, the opening message. Each view below
is what one block of pair_features.py's union reads of it; ``cue_rows`` are its dense
features.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from flock.jev.pairs import OPENING_WORDS, PAIR_SEPARATOR
from flock.jev.serving import frame

# The separator as `prepare` leaves it: its line break folded into a space.
_SEPARATOR = f" {PAIR_SEPARATOR.strip()} "
_WORDS = re.compile(r"\w+")
_STOP = frozenset(
    "the a an to of and or for in on at by is it this that i you we me my our your can could would "
    "pls please u be with from as so do have has need want".split()
)
# The cues' weight against the TF-IDF blocks (each an L2 unit): chosen left one writer out
# (0.3 and 1.0 were both less accurate than 0.5).
CUE_SCALE = 0.5
_REFUSAL = re.compile(
    r"\b(can'?t|cannot|won'?t|unable|not going to|no longer|gave up|give up|giving up|skip|skipping|forgot|"
    r"missed|too late|couldn'?t|didn'?t|not able|no can do|decline|not doing|nope|instead|rather than|passed|"
    r"past the)\b"
)
_APOLOGY = re.compile(r"\b(sorry|apolog|afraid|unfortunately|my bad|oops)")
_DONE = re.compile(
    r"\b(done|here is|here's|here are|here:|attached|finished|sent|shipped|merged|deployed|published|"
    r"completed?|uploaded|pushed|fixed|live now|ready)\b"
)
_PROGRESS = re.compile(
    r"\b(on it|will|gonna|going to|eta|working on|still|halfway|in progress|tomorrow|later|soon|first|so far|"
    r"next|started|starting|looking into|checking)\b"
)
_LIST_ITEM = re.compile(r"(?:^|\s)(?:[-*•]|\d+[.)])\s")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_LINK = re.compile(r"_url_|_file_|_folder_")
_MARKUP = re.compile(r"\*\*|\|")


def split_pair(prepared: str) -> tuple[str, str, str]:
    """(who-speaks token, later message, opening message) of a prepared pair text."""
    head, _, opening = prepared.partition(_SEPARATOR)
    who, _, later = head.partition(" ")
    return who, later, opening


def later_view(texts: Iterable[str]) -> list[str]:
    return [f"{who} {frame(later)}" for who, later, _ in map(split_pair, texts)]


def later_chars_view(texts: Iterable[str]) -> list[str]:
    return [frame(later) for _, later, _ in map(split_pair, texts)]


def opening_view(texts: Iterable[str]) -> list[str]:
    return [" ".join(opening.split()[:OPENING_WORDS]) for _, _, opening in map(split_pair, texts)]


def who_words_view(texts: Iterable[str]) -> list[str]:
    return [" ".join(f"{who}:{word}" for word in _WORDS.findall(later)) for who, later, _ in map(split_pair, texts)]


def _content(opening: str) -> set[str]:
    return {word for word in _WORDS.findall(opening) if word not in _STOP and len(word) > 2}


def shared_words_view(texts: Iterable[str]) -> list[str]:
    out = []
    for _, later, opening in map(split_pair, texts):
        content = {word for word in _WORDS.findall(opening) if word not in _STOP}
        out.append(" ".join("_s_" if word in content else word for word in _WORDS.findall(later)))
    return out


def _cue_row(prepared: str) -> list[float]:
    _, later, opening = split_pair(prepared)
    words = _WORDS.findall(later)
    asked = _content(opening)
    repeated = len(asked & set(words)) / max(1, len(asked))
    return [
        np.log1p(len(later)) / 6,
        np.log1p(len(words)) / 5,
        float("```" in later),
        len(_LIST_ITEM.findall(later)) / 5,
        min(len(_NUMBER.findall(later)), 20) / 20,
        float("?" in later),
        float(later.endswith("?")),
        float(bool(_REFUSAL.search(later))),
        float(bool(_APOLOGY.search(later))),
        float(bool(_DONE.search(later))),
        float(bool(_PROGRESS.search(later))),
        repeated,
        float(repeated == 0),
        float(bool(_LINK.search(later))),
        float(bool(_MARKUP.search(later))),
    ]


CUES = 15


def cue_rows(texts: Iterable[str]) -> NDArray[np.float64]:
    """The cues of each text, one row of ``CUES`` weighted by ``CUE_SCALE``."""
    return np.array([_cue_row(t) for t in texts], dtype=np.float64).reshape(-1, CUES) * CUE_SCALE
