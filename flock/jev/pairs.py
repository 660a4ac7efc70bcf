"""Questions about a pair of texts: how the two become the one text Jev reads.

A question whose metadata names two ``input_fields`` (``expectation_met``: the message
that opened an expectation, and a later message in the room, each written
``"<Speaker>: <text>"``) is trained on lines holding those two fields and asked, at
runtime, with the same two texts joined here. Training (``questions.read_examples``, the
writers' import) and the chatroom (``nests.actions.chat.met``) both call ``pair_text``, so
the two cannot drift apart (docs/JEV.md, "expectation_met").

What Jev reads, in this order:

1. one token for who speaks in the later message, against the opening one:
   ``_by_owner_`` (the owner), ``_by_asker_`` (whoever opened it), ``_by_asked_`` (a crow
   the opening message names among its first four words, any case: "@Hugin …",
   "Munin, please …", "quill can u …"), ``_by_other_`` (anyone else);
2. the later message's text (its speaker left out: the token says what matters of it);
3. the separator, then the opening message's text (its speaker left out too).

``expectation_met`` reads these parts apart (``"features": "pair"`` in its metadata,
pair_features.py): word and character n-grams of the later message, the opening's first
OPENING_WORDS words, and what the two share. Read as one bag of n-grams instead (a pair
question without that setting), the opening's words, mostly the topic both messages share,
drown the later message's, which decide met, missed or pending; until pair-v2 this text
therefore carried only the opening's first six words (docs/JEV.md, "expectation_met").
"""

from __future__ import annotations

import re

# Between the two parts: a line break and an arrow, which no message starts with, so the
# character n-grams that straddle it read "how the later message ends, how the opening one began".
PAIR_SEPARATOR = "\n⟶ "
# Part of a pair question's data hash (questions.Question.data_hash): change it with
# `pair_text`, or a model cached for the old text would be served for the new one.
PAIR_VERSION = "pair-v2"  # v2: the opening message whole, not its first six words
# How many of the opening message's words the pair features read as its verb and addressee
# ("summarise the Q3 report", "I'll have the ...").
OPENING_WORDS = 6
_SPEAKER_RE = re.compile(r"\s*([^:\n]{1,40}):\s*(.*)", re.DOTALL)
_WORD_RE = re.compile(r"@?([A-Za-z][\w-]*)")
# The addressee is named early: "@Hugin …", "Munin, please …", "owner: quill can u …".
ADDRESSEE_WORDS = 4
OWNER = "owner"


def speaker_line(author: str, text: str) -> str:
    """A room message as a writer of pair lines wrote it: `"<Speaker>: <text>"`."""
    return f"{author}: {text}"


def split_speaker(line: str) -> tuple[str, str]:
    """(speaker, text) of a `"<Speaker>: <text>"` line; ("", line) without a speaker."""
    m = _SPEAKER_RE.match(line)
    return (m.group(1).strip(), m.group(2).strip()) if m else ("", line.strip())


def who_speaks(opening: str, later: str) -> str:
    """The token for the later message's speaker, against the opening message."""
    opener, opening_text = split_speaker(opening)
    speaker, _ = split_speaker(later)
    if speaker.casefold() == OWNER:
        return "_by_owner_"
    if speaker and speaker == opener:
        return "_by_asker_"
    if speaker and speaker.casefold() in (w.casefold() for w in _WORD_RE.findall(opening_text)[:ADDRESSEE_WORDS]):
        return "_by_asked_"
    return "_by_other_"


def pair_text(first: str, second: str) -> str:
    """The one text Jev reads for a pair: `first` opened the expectation, `second` came
    later; both `"<Speaker>: <text>"` (speaker_line)."""
    _, later_text = split_speaker(second)
    _, opening_text = split_speaker(first)
    return f"{who_speaks(first, second)} {later_text}{PAIR_SEPARATOR}{opening_text}"
