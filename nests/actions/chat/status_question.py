"""Reading the owner's words for Quill: a status question ("what's happening?", told from
work that mentions a status, "draft a status update") and a relay ("ask the ops nest to
…"). Quill answers both; dispatch sends them to Quill whatever Jev tags them. Its own
module, so both can read them (quill builds on dispatch)."""

from __future__ import annotations

import re

from nests import queries

STATUS_RE = re.compile(
    r"\b(?:what(?:'s|s| is)\s+(?:happening|going on|up)|where\s+are\s+we|what(?:'s| is)\s+the\s+status|"
    r"who(?:'s| is)\s+doing\s+what|any\s+(?:news|updates?)|update\s+me|what(?:'s| is)\s+(?:still\s+)?open)\b"
    r"|\bstatus(?:\s+(?:update|report|check))?\s*\?|^\s*status\s*[.!]?\s*$",
    re.IGNORECASE,
)
MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z][\w-]*[,:]?\s*")


_QUESTION_START = re.compile(
    r"^\s*(?:@\w+[\s,:]*)?(what|what's|whats|who|who's|where|when|why|how|which|is|are|was|were|do|does|"
    r"did|can|could|should|would|will|has|have|any)\b",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    return "?" in text or bool(_QUESTION_START.match(text))


def without_mentions(text: str) -> str:
    """The text with its @mentions out and its whitespace folded."""
    return " ".join(MENTION_RE.sub("", text).split())


def is_status_question(text: str) -> bool:
    return bool(STATUS_RE.search(without_mentions(text)))


RELAY_RES = (
    re.compile(
        r"\b(?:ask|tell|get|have)\s+(?:the\s+)?(?P<nest>[\w][\w -]{0,40}?)\s+nest\s+(?:crows\s+)?(?:to\s+)?(?P<task>.+)$",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"\b(?:ask|tell|get|have)\s+(?:the\s+)?nest\s+(?P<nest>[\w-]+)\s+(?:to\s+)?(?P<task>.+)$",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"\b(?:relay|pass|send)\s+(?:this\s+|it\s+)?(?:on\s+)?(?:to|into)\s+(?:the\s+)?(?P<nest>[\w-]+)(?:\s+nest)?\s*[:,-]\s*(?P<task>.+)$",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"\b(?:in|into)\s+(?:the\s+)?(?P<nest>[\w-]+)\s+nest\s*[:,]?\s*(?P<task>.+)$",
        re.IGNORECASE | re.DOTALL,
    ),
)
# The relays that say "ask", "tell" or "relay" in so many words (the last of RELAY_RES,
# "in the launch nest, …", may be a remark).
RELAY_VERB_RES = RELAY_RES[:3]
# How Quill opens a request it carries for the owner; a crow's brain is given the words after it.
RELAY_PREAMBLE_RE = re.compile(r"^@[\w-]+,\s+(?:from|for)\s+@owner:\s*", re.IGNORECASE)


def task_words(text: str) -> str:
    """A request's own words, without the preamble Quill puts on requests it relays."""
    return RELAY_PREAMBLE_RE.sub("", text).strip() or text


def parse_relay(text: str) -> tuple[str, str] | None:
    """(nest words, task) when the owner asks Quill to carry a request into a nest."""
    words = without_mentions(text)
    for pattern in RELAY_RES:
        m = pattern.search(words)
        if m and queries.find_nest(m.group("nest")) is not None and m.group("task").strip(" .!"):
            return m.group("nest"), m.group("task").strip().rstrip(".!")
    m = RELAY_RES[0].search(words) or RELAY_RES[1].search(words)
    return (m.group("nest"), m.group("task").strip()) if m else None


# "I need a crow for X" (docs/GOVERNANCE.md, "2. Quill asks Boss for crows"): the owner
# asks for a crow that does not exist yet; Quill turns it into an order to Boss.
CROW_NEED_RE = re.compile(
    r"\b(?:(?:i|we)\s+(?:need|want|could\s+use|'d\s+like|would\s+like)|(?:get|find|bring)\s+(?:me|us))\s+"
    r"(?:a|an|another|one\s+more)\s+(?:new\s+)?crow\b"
    r"(?:\s+(?:named|called)\s+@?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,39}))?,?\s+"
    r"(?:for|to|who\s+can|that\s+can|who(?:'s|\s+is)\s+good\s+at|good\s+at)\s+(?P<purpose>[^.!?\n]+)",
    re.IGNORECASE,
)


def parse_crow_need(text: str) -> tuple[str, str] | None:
    """(the name the owner gave, or "", what the crow is for) of "I need a crow for X", or None."""
    m = CROW_NEED_RE.search(without_mentions(text))
    if m is None:
        return None
    purpose = m.group("purpose").strip().rstrip(",;:")
    return (m.group("name") or "", purpose) if purpose else None
