"""Text normalisation shared by training and prediction.

Every question sees text through ``prepare``, at fit time and at ask time, so the two can
never drift apart. It folds the surface details that say nothing about a message's kind
into placeholder tokens (``_crow_``, ``_id_``, ``_file_``, ``_url_``): crow names behind an
@, protocol ids, file names and links. A model trained on messages to @Hugin about
``todo-3`` then generalises to a crow hatched tomorrow and to ``nest-812``, and "the
results are in <some file>" is learned once rather than once per file name. The
underscores keep the placeholders' character n-grams apart from ordinary words, so
"xxxx" does not look like a file.
"""

from __future__ import annotations

import re

# ask() ignores text past this: what a message is shows long before its 4,000th character,
# and char n-grams over a huge paste would cost milliseconds for nothing.
MAX_TEXT_CHARS = 4000

# The bracket grammar of AGENT_PROTOCOL.json ("[CLAIM todo-3]", "[WO:7fce46e0]", ...). The
# verb becomes one token ("hdrclaim") so the model can tell the header from the word
# "claim" in ordinary talk ("who wants to claim this?"); the id after it is noise.
_PROTOCOL_VERBS = "WO|ACK|CLAIM|RESULT|DECLINE|NO-ACTION|REFER|NUDGE|JOB|FROM"
_HEADER_RE = re.compile(rf"\[\s*({_PROTOCOL_VERBS})\b[:\s]*([^\]]*)\]", re.IGNORECASE)
_URL_RE = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_FILE_EXTENSIONS = (
    "md|txt|csv|tsv|json|jsonl|ya?ml|xlsx?|docx?|pptx?|pdf|png|jpe?g|gif|svg|py|js|ts|go|sql"
    "|html?|diff|patch|log|zip|ipynb|key|numbers|pages"
)
_FILE_RE = re.compile(rf"(?<![\w@])(?:[\w~.-]+/)*[\w~-][\w~.-]*\.(?:{_FILE_EXTENSIONS})\b", re.IGNORECASE)
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z][\w-]*")
# Protocol ids: todo-3, nest-4-17, list-2, and the 8-hex ids of work orders.
_ID_RE = re.compile(
    r"\b(?:(?:todo|nest|msg|list|item|dm|job|wo)-[\w-]*\d[\w-]*|(?=[0-9a-f]*\d)[0-9a-f]{8})\b",
    re.IGNORECASE,
)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
_SPACE_RE = re.compile(r"\s+")


def _header_token(match: re.Match[str]) -> str:
    verb = match.group(1).lower().replace("-", "")
    # A REFER header names the artifact, which is worth keeping; other ids are not.
    rest = match.group(2) if verb == "refer" else ""
    return f" hdr{verb} {rest} "


def prepare(text: str) -> str:
    """Return the normalised, lower-cased form of ``text`` that every model is fitted on."""
    text = text[:MAX_TEXT_CHARS].translate(_QUOTES)
    text = _HEADER_RE.sub(_header_token, text)
    text = _URL_RE.sub(" _url_ ", text)
    text = _FILE_RE.sub(" _file_ ", text)
    text = _MENTION_RE.sub(" _crow_ ", text)
    text = _ID_RE.sub(" _id_ ", text)
    return _SPACE_RE.sub(" ", text).strip().lower()
