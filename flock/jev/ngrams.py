"""A message's n-grams found in a model's vocabulary as integers, not as Python strings.

The plain way to score a message (``Scorer``'s fallback, and scikit-learn's) builds every
n-gram as a string, counts the strings, and looks each one up in the vectorizer's
vocabulary, a dict of 178,000 char terms for ``kind``. That is some 250 strings made,
hashed and looked up per message, and it was most of what a tag cost.

Here a character is a small integer, its place in the alphabet of the vocabulary's terms,
and a char n-gram is the number its characters spell as digits in base
``len(alphabet) + 2``; a word n-gram is the same over the tokens of the word vocabulary,
with its digits negative so the two kinds of code never meet. Every vocabulary term's code
is computed once, sorted, and a message's n-grams become a handful of numpy operations:
their codes (one matrix product for all the char n-gram lengths), one ``searchsorted``
against the sorted codes, and their counts by sorting.

Nothing is approximated. Codes are exact (a code is a number's unique representation in
its base, and the construction refuses a base whose longest code would not fit 63 bits); a
character or token outside the vocabulary's gets the digit no term has, so an n-gram
holding one matches nothing, as its string would not; and ``find`` returns the terms in
the order scikit-learn's analyzers first meet them, words before chars, which is the order
``Scorer`` sums them in. tests/flock/test_jev_exact.py holds the columns and counts equal
to scikit-learn's analyzers' for every text of every standard question's corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import repeat

import numpy as np
from numpy.typing import NDArray

CODE_LIMIT = 2**63  # codes are int64
# The key after the last: searchsorted answers len(keys) for a code above every term's,
# and there it reads this key, which is no code, and matches nothing.
_PAST_EVERY_KEY = np.iinfo(np.int64).max


class CodedVocabulary:
    """The word and char vocabularies of one model, as sorted int64 codes.

    ``word_vocabulary`` and ``char_vocabulary`` map terms to their columns in their own
    TF-IDF blocks; ``find`` answers in the union's columns, the char block's after the
    word block's ``len(word_vocabulary)``.
    """

    def __init__(
        self,
        *,
        preprocess: Callable[[str], str],
        tokenize: Callable[[str], list[str]],
        word_vocabulary: Mapping[str, int],
        word_ngrams: tuple[int, int],
        white_spaces: re.Pattern[str],
        char_vocabulary: Mapping[str, int],
        char_ngrams: tuple[int, int],
    ) -> None:
        self._preprocess = preprocess
        self._tokenize = tokenize
        self._white_spaces = white_spaces
        self._word_low, self._word_high = word_ngrams
        self._char_low, self._char_high = char_ngrams
        self.word_columns = len(word_vocabulary)

        # Words: token i of the vocabulary's tokens is the digit -i, so every word code is
        # negative; the unknown token's digit is one past the last.
        word_terms = list(word_vocabulary)
        word_tokens = " ".join(word_terms).split(" ")
        tokens = sorted(set(word_tokens))
        self._word_base = len(tokens) + 2
        self._token_digits = {token: -i for i, token in enumerate(tokens, 1)}
        self._unknown_token = -(self._word_base - 1)
        word_digits = np.fromiter(map(self._token_digits.__getitem__, word_tokens), np.int64, len(word_tokens))
        word_lengths = np.fromiter(map(str.count, word_terms, repeat(" ")), np.intp, len(word_terms)) + 1

        # Chars: the code point's digit, read from a table as long as the highest code point
        # in the vocabulary plus one more entry, the unknown digit, where every higher code
        # point lands (``take(mode="clip")``).
        char_terms = list(char_vocabulary)
        joined = "".join(char_terms)
        alphabet = sorted(set(joined))
        self._char_base = len(alphabet) + 2
        self._unknown_char = self._char_base - 1
        if self._char_base**self._char_high >= CODE_LIMIT or self._word_base**self._word_high >= CODE_LIMIT:
            raise ValueError("the vocabulary's codes would not fit in 64 bits")
        self._char_digits = np.full(max(map(ord, alphabet), default=0) + 2, self._unknown_char, dtype=np.int32)
        self._char_digits[[ord(char) for char in alphabet]] = np.arange(1, len(alphabet) + 1)
        char_digits = self._char_digits[np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)]
        char_lengths = np.fromiter(map(len, char_terms), np.intp, len(char_terms))
        # Row n - low holds each digit's weight in an n-gram that starts at the window's
        # first character; a window of ``high`` characters then gives every length at once.
        self._char_powers = np.array(
            [
                [self._char_base ** (n - 1 - j) if j < n else 0 for j in range(self._char_high)]
                for n in range(self._char_low, self._char_high + 1)
            ],
            dtype=np.int64,
        )

        codes = np.concatenate(
            [
                _term_codes(word_digits, word_lengths, self._word_base),
                _term_codes(char_digits.astype(np.int64), char_lengths, self._char_base),
            ]
        )
        columns = np.concatenate(
            [
                np.fromiter(word_vocabulary.values(), dtype=np.intp, count=len(word_vocabulary)),
                np.fromiter(char_vocabulary.values(), dtype=np.intp, count=len(char_vocabulary))
                + self.word_columns,
            ]
        )
        order = np.argsort(codes)
        self._keys = np.append(codes[order], _PAST_EVERY_KEY)
        if (self._keys[1:] == self._keys[:-1]).any():
            raise ValueError("two terms with one code: a token holds a space")
        self._key_columns = np.append(columns[order], -1)

    def find(self, prepared: str) -> tuple[NDArray[np.intp], NDArray[np.intp], int]:
        """The vocabulary terms in ``prepared``: their columns in the order the analyzers
        meet them first (all the word terms, then the char terms), how often each occurs,
        and how many of them are word terms."""
        text = self._preprocess(prepared)
        codes = [*self._word_codes(text), self._char_codes(text)]
        stream = np.concatenate(codes) if len(codes) > 1 else codes[0]
        found = self._keys.searchsorted(stream)
        columns = self._key_columns[found][self._keys[found] == stream]
        terms = len(columns)
        if not terms:
            return columns, columns, 0
        # Counted by sorting: a stable sort puts each column's first occurrence at the head
        # of its run, and sorting the heads by position restores the order of first sight.
        order = columns.argsort(kind="stable")
        ordered = columns[order]
        run_starts = np.empty(terms + 1, dtype=bool)
        run_starts[0] = run_starts[terms] = True
        np.not_equal(ordered[1:], ordered[:-1], out=run_starts[1:terms])
        bounds = np.flatnonzero(run_starts)
        heads = bounds[:-1]
        distinct = ordered[heads]
        words = int(distinct.searchsorted(self.word_columns))
        first_sight = order[heads].argsort()
        return distinct[first_sight], (bounds[1:] - heads)[first_sight], words

    def _word_codes(self, text: str) -> list[NDArray[np.int64]]:
        tokens = self._tokenize(text)
        digits = np.fromiter(
            map(self._token_digits.get, tokens, repeat(self._unknown_token)), dtype=np.int64, count=len(tokens)
        )
        levels = []
        codes = digits
        for n in range(1, self._word_high + 1):
            if n > 1:
                codes = codes[:-1] * self._word_base + digits[n - 1 :]
            if n >= self._word_low:
                levels.append(codes)
        return levels

    def _char_codes(self, text: str) -> NDArray[np.int64]:
        text = self._white_spaces.sub(" ", text)
        length = len(text)
        # The text's digits, then high - 1 unknown ones: an n-gram that would run past the
        # end holds one and matches nothing, as sklearn makes no such n-gram.
        digits = np.empty(length + self._char_high - 1, dtype=np.int32)
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        self._char_digits.take(points, out=digits[:length], mode="clip")
        digits[length:] = self._unknown_char
        # windows[j, i] is the digit at i + j: row n - low of the product is the code of
        # the n-gram at every position i, rows in the analyzer's order of lengths.
        windows = np.ndarray((self._char_high, length), dtype=np.int32, buffer=digits, strides=(4, 4))
        codes: NDArray[np.int64] = (self._char_powers @ windows).ravel()
        return codes


def _term_codes(digits: NDArray[np.int64], lengths: NDArray[np.intp], base: int) -> NDArray[np.int64]:
    """Each term's code from its digits (every term's, one after the other) and lengths,
    computed for all the terms of one length at a time."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.intp)
    codes = np.zeros(len(lengths), dtype=np.int64)
    for n in np.unique(lengths):
        rows = np.flatnonzero(lengths == n)
        code = np.zeros(len(rows), dtype=np.int64)
        for j in range(int(n)):
            code = code * base + digits[starts[rows] + j]
        codes[rows] = code
    return codes
