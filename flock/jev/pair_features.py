"""The "pair" feature set: features that read a pair question's two messages apart.

A question whose metadata says ``"features": "pair"`` (``expectation_met``) is not read as
one bag of n-grams. Its text is ``pairs.pair_text``'s, through ``text.prepare``: the
who-speaks token, the later message, the separator, the opening message. Each block below
takes its own view of it:

- ``later_words``: the who-speaks token and the later message's word 1-2 grams;
- ``later_chars``: the later message's character 1-4 grams;
- ``opening_words``: the opening message's first ``pairs.OPENING_WORDS`` words (its verb
  and addressee);
- ``who_words``: each later word joined to who says it ("_by_owner_:never" is not
  "_by_asked_:never");
- ``shared_words``: the later message with every word the opening also has (stop words
  aside) written ``_s_``, in 1-2 grams: "_s_ _s_ done" and "translated to dutch" tell
  a delivery of the thing asked from one of something else;
- ``cues``: a few numbers: length, code blocks, lists, numbers, a question back, refusal,
  apology, "done"/"here is" and progress markers, and how much of the opening's content
  the later message repeats.

Left one writer out at a time on the writers' 1,374 lines this scored 0.726 accuracy where
the single bag of n-grams scored 0.687 (docs/JEV.md, "expectation_met", for every step).
model.Scorer sums it through each block's view (``Scorer._init_views``); the coded fast
path (ngrams.py) is the standard union's only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer

from flock.jev.pairs import OPENING_WORDS, PAIR_SEPARATOR

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


def _later(texts: Iterable[str]) -> list[str]:
    return [f"{who} {_framed(later)}" for who, later, _ in map(split_pair, texts)]


def _later_only(texts: Iterable[str]) -> list[str]:
    return [_framed(later) for _, later, _ in map(split_pair, texts)]


def _framed(later: str) -> str:
    # model.frame's markers (model.py imports this module, so they are spelled here): how
    # the later message opens and closes ("_bos_ done", "? _eos_").
    return f"_bos_ {later} _eos_"


def _opening_head(texts: Iterable[str]) -> list[str]:
    return [" ".join(opening.split()[:OPENING_WORDS]) for _, _, opening in map(split_pair, texts)]


def _who_words(texts: Iterable[str]) -> list[str]:
    return [" ".join(f"{who}:{word}" for word in _WORDS.findall(later)) for who, later, _ in map(split_pair, texts)]


def _content(opening: str) -> set[str]:
    return {word for word in _WORDS.findall(opening) if word not in _STOP and len(word) > 2}


def _shared_words(texts: Iterable[str]) -> list[str]:
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


def cues(texts: Iterable[str]) -> sparse.csr_matrix:
    return sparse.csr_matrix(np.array([_cue_row(t) for t in texts], dtype=np.float64).reshape(-1, 15) * CUE_SCALE)


def _block(view: object, vectorizer: TfidfVectorizer) -> Pipeline:
    return Pipeline([("view", FunctionTransformer(view)), ("tfidf", vectorizer)])


def build_features(word_tokens: str) -> FeatureUnion:
    """The union of the blocks above; ``word_tokens`` is model.py's word token pattern."""

    def words() -> TfidfVectorizer:
        return TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=word_tokens)

    def tokens(ngrams: tuple[int, int] = (1, 1)) -> TfidfVectorizer:
        return TfidfVectorizer(ngram_range=ngrams, sublinear_tf=True, token_pattern=r"\S+")

    return FeatureUnion(
        [
            ("later_words", _block(_later, words())),
            ("later_chars", _block(_later_only, TfidfVectorizer(analyzer="char", ngram_range=(1, 4), sublinear_tf=True))),
            ("opening_words", _block(_opening_head, words())),
            ("who_words", _block(_who_words, tokens())),
            ("shared_words", _block(_shared_words, tokens((1, 2)))),
            ("cues", FunctionTransformer(cues, accept_sparse=True)),
        ]
    )
