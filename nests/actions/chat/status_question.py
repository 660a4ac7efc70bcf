"""Telling the owner's status question ("what's happening?") from work that mentions a
status ("draft a status update"). Quill answers the question; dispatch sends it to Quill
even when Jev tags it a request. Its own module, so both can import it (quill builds on
dispatch)."""

from __future__ import annotations

import re

STATUS_RE = re.compile(
    r"\b(?:what(?:'s|s| is)\s+(?:happening|going on|up)|where\s+are\s+we|what(?:'s| is)\s+the\s+status|"
    r"who(?:'s| is)\s+doing\s+what|any\s+(?:news|updates?)|update\s+me|what(?:'s| is)\s+(?:still\s+)?open)\b"
    r"|\bstatus(?:\s+(?:update|report|check))?\s*\?|^\s*status\s*[.!]?\s*$",
    re.IGNORECASE,
)
MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z][\w-]*[,:]?\s*")


def without_mentions(text: str) -> str:
    """The text with its @mentions out and its whitespace folded."""
    return " ".join(MENTION_RE.sub("", text).split())


def is_status_question(text: str) -> bool:
    return bool(STATUS_RE.search(without_mentions(text)))
