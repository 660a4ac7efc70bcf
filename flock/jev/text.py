"""Text normalisation shared by training and prediction.

Every question sees text through ``prepare``, at fit time and at ask time, so the two can
never drift apart. It folds the surface details that say nothing about a message's kind
into placeholder tokens (``_crow_``, ``_id_``, ``_file_``, ``_folder_``,
``_url_``): crow names behind an
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

# The bracket grammar (docs/BRAINS.md) ("[CLAIM todo-3]", "[WO:7fce46e0]", ...). The
# verb becomes one token ("hdrclaim") so the model can tell the header from the word
# "claim" in ordinary talk ("who wants to claim this?"); the id after it is noise.
_PROTOCOL_VERBS = "WO|ACK|CLAIM|RESULT|DECLINE|NO-ACTION|REFER|NUDGE|JOB|FROM"
_HEADER_RE = re.compile(rf"\[\s*({_PROTOCOL_VERBS})\b[:\s]*([^\]]*)\]", re.IGNORECASE)
# Links, and URIs of any scheme ("s3://bucket/key", "gs://…", "ftp://…", "file:///…").
_URL_RE = re.compile(r"(?:\b[a-z][a-z0-9+.-]{0,15}://|www\.)\S+", re.IGNORECASE)
# A file is any name with an extension: a stem, a dot and 1-8 letters or digits with at
# least one letter ("notes.md", "q3-forecast.xlsx", "deck.key", "run.parquet", "x.tar.gz"),
# optionally behind a folder path. Abbreviations are not files: the stem needs two
# characters and may not be a known short word ("e.g.", "i.e.", "vs.", "etc."), and a
# number ("3.5x", "v2.1") is not a name, nor is an ellipsis without spaces ("wait...and").
# The extension is all lower or all upper case, so a missing space ("done it.Then") is not
# a file.
_FILE_RE = re.compile(
    r"(?<![\w@/~.-])(?:(?:~|\.{1,2})?/)?(?:[\w~.-]+/)*"
    r"(?!(?i:e\.g|i\.e|vs|etc|approx|incl|fig|no|mr|mrs|dr|st)\.)"
    r"(?!\d+\.\d)[\w~-]+(?:\.[\w~-]+)*\."
    r"(?:(?=[a-z0-9]{0,7}[a-z])[a-z0-9]{1,8}(?:\.[a-z0-9]{1,4})?|(?=[A-Z0-9]{0,7}[A-Z])[A-Z0-9]{1,8})(?![\w/-])",
)
# A folder: a path with a slash that is clearly not "and/or" or "24/7": one starting at
# /, ~/ or ./ ("/srv/exports", "~/notes"), one of two or more segments ("shared/reports/q3"),
# or a name of two or more letters ending in a slash ("drafts/", "research/2026/").
_FOLDER_RE = re.compile(
    r"(?<![\w@/~.:-])(?:"
    r"(?:~|\.{1,2})?/[\w~.-]+(?:/[\w~.-]*)*"
    r"|[A-Za-z_][\w~.-]*(?:/[\w~.-]+){2,}/?"
    r"|[A-Za-z_][\w~.-]+/(?:[\w~.-]+/)*"
    r")(?![\w/])",
)
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z][\w-]*")
# Protocol ids: todo-3, nest-4-17, list-2, and the 8-hex ids of work orders.
_ID_RE = re.compile(
    r"\b(?:(?:todo|nest|msg|list|item|dm|job|wo)-[\w-]*\d[\w-]*|(?=[0-9a-f]*\d)[0-9a-f]{8})\b",
    re.IGNORECASE,
)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
# What each pattern cannot match without: a substitution is skipped when its text lacks it,
# which is most of the time (a message seldom holds a link, a path or an id), so `prepare`
# scans a message a few times with `in` instead of seven times with the patterns above.
# tests/flock/test_jev_exact.py holds the output equal to running every substitution.
_WWW_RE = re.compile(r"www\.", re.IGNORECASE)  # _URL_RE's other start, besides "://"
_EXTENSION_RE = re.compile(r"\.[A-Za-z0-9]")  # _FILE_RE's dot before the extension
_DIGIT_RE = re.compile(r"\d")  # both of _ID_RE's forms hold a digit


def _header_token(match: re.Match[str]) -> str:
    verb = match.group(1).lower().replace("-", "")
    # A REFER header names the artifact, which is worth keeping; other ids are not.
    rest = match.group(2) if verb == "refer" else ""
    return f" hdr{verb} {rest} "


def prepare(text: str) -> str:
    """Return the normalised, lower-cased form of ``text`` that every model is fitted on."""
    text = text[:MAX_TEXT_CHARS]
    if not text.isascii():  # the quotes and the no-break space are not
        text = text.translate(_QUOTES)
    if "[" in text:
        text = _HEADER_RE.sub(_header_token, text)
    if "://" in text or _WWW_RE.search(text):
        text = _URL_RE.sub(" _url_ ", text)
    if _EXTENSION_RE.search(text):
        text = _FILE_RE.sub(" _file_ ", text)
    if "/" in text:
        text = _FOLDER_RE.sub(" _folder_ ", text)
    if "@" in text:
        text = _MENTION_RE.sub(" _crow_ ", text)
    if _DIGIT_RE.search(text):
        text = _ID_RE.sub(" _id_ ", text)
    # str.split() splits where \s+ matches (both are str.isspace), and drops the ends as
    # strip() does.
    return " ".join(text.split()).lower()
