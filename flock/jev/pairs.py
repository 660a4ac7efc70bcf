"""Questions about a pair of texts: how the two become the one text Jev reads.

A question whose metadata names two ``input_fields`` (``expectation_met``: the message
that opened an expectation, and a later message in the room) is trained on lines holding
those two fields and asked, at runtime, with the same two texts joined here. Training
(``questions.read_examples``, the writers' import) and the chatroom
(``nests.actions.chat.expectations``) both call ``pair_text``, so the two cannot drift
apart (docs/JEV.md, "expectation_met").
"""

from __future__ import annotations

# Between the two texts: a line break and an arrow, which no message starts with, so the
# character n-grams that straddle it read "how the first ends, how the second begins".
PAIR_SEPARATOR = "\n⟶ "


def speaker_line(author: str, text: str) -> str:
    """A room message as a writer of pair lines wrote it: `"<Speaker>: <text>"`."""
    return f"{author}: {text}"


def pair_text(first: str, second: str) -> str:
    """The one text Jev reads for a pair: the first text, the separator, the second."""
    return f"{first.strip()}{PAIR_SEPARATOR}{second.strip()}"
