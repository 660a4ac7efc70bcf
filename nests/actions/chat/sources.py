"""What a delivery cites, and whether its citations can be found (docs/GOVERNANCE.md,
"7. Fabrication").

A source is a link (`https://…`, `www.…`), a named document (a file name with an
extension: `q3-report.pdf`, `notes/launch.md`) or a message id of an existing room
(`launch-4`; "covid-19" names no room and is no citation). A link or a document is *found*
when it appears (case folded) in the request or in what someone else told the crow: a
message of the room by another author, or a message addressed to the crow in any room
(its memory, docs/GOVERNANCE.md "One crow, many rooms"). A message id is found when it is
a message of the room or was addressed to the crow. The crow's own earlier words are no
source for itself: a made-up link said twice is still made up. Crows have no tools in this
codebase; when they do, their results join the places searched. The request's own id,
which every delivery names, is not a source.

Two readers: the Sentry (`fabricated_source`, on research and retrieval requests) and the
`claims_sourced` expectation check (on requests that ask for sources in words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Q

from nests.models import ChatRequest, Nest, NestMessage

URL_RE = re.compile(r"(?:\bhttps?://|\bwww\.)[^\s<>()\"'\]]+", re.IGNORECASE)
# A file name: a stem of two or more characters, a dot and an extension of 1-8 letters or
# digits with at least one letter, optionally behind a folder path. Not numbers ("3.5"),
# abbreviations ("e.g.", "i.e.") or a missing space after a full stop ("done.Then").
DOCUMENT_RE = re.compile(
    r"(?<![\w@/.-])(?:[\w~-]+/)*(?!(?i:e\.g|i\.e|vs|etc|approx|incl|fig|no|mr|mrs|dr|st)\.)"
    r"[\w~-]{2,}(?:\.[\w~-]+)*\.(?=[a-z0-9]{0,7}[a-z])[a-z0-9]{1,8}(?![\w/-])",
)
MESSAGE_ID_RE = re.compile(r"(?<![\w-])([a-z0-9][a-z0-9-]*)-(\d{1,9})(?![\w-])")
# A request that asks for its claims to be sourced, in words.
ASKS_FOR_SOURCES_RE = re.compile(
    r"\b(?:sources?|sourced|cite|cites|citing|citations?|references?|links?|evidence|"
    r"where\s+(?:did|do)\s+(?:you|it|they)\s+(?:get|find|read))\b",
    re.IGNORECASE,
)
# A request for finding things out, in words (Jev's `research` task type is the other sign).
RETRIEVAL_RE = re.compile(
    r"\b(?:research|look\s+up|looks?\s+into|dig\s+up|retrieve|fetch|search|find\s+out|"
    r"what\s+does\s+\S+(?:\s+\S+)?\s+say)\b",
    re.IGNORECASE,
)
# A delivery that says plainly it has no source claims none: it is no fabrication (the
# offline mock brain says "Sources: none; …"), though a request that asked for sources
# still nudges it (claims_sourced).
NO_SOURCE_RE = re.compile(
    r"\b(?:sources?\s*:\s*none|no\s+sources?|unsourced|found\s+no(?:thing|\s+sources?)|"
    r"(?:could\s*n[o']t|can'?t|cannot|did\s*n[o']t)\s+find\s+(?:any(?:thing)?|a\s+source))\b",
    re.IGNORECASE,
)
RESEARCH = "research"
FOUND_IN = "the request, the room or the crow's memory"


@dataclass(frozen=True)
class Citations:
    """What a text cites: links, documents, message ids (each once, in order)."""

    urls: tuple[str, ...] = ()
    documents: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.urls or self.documents or self.message_ids)

    def all(self) -> tuple[str, ...]:
        return (*self.urls, *self.documents, *self.message_ids)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def cited(text: str, *, besides: tuple[str, ...] = ()) -> Citations:
    """The sources `text` cites; message ids in `besides` (the request's own) do not count."""
    urls = [m.group(0).rstrip(".,;:!?") for m in URL_RE.finditer(text)]
    without_urls = URL_RE.sub(" ", text)
    documents = [m.group(0) for m in DOCUMENT_RE.finditer(without_urls)]
    candidates = [m for m in MESSAGE_ID_RE.finditer(without_urls) if m.group(0) not in besides]
    rooms = set(Nest.objects.filter(nest_id__in={m.group(1) for m in candidates}).values_list("nest_id", flat=True))
    # A document name is not a message id ("launch-4.md" is a file).
    ids = [m.group(0) for m in candidates if m.group(1) in rooms and not any(m.group(0) in d for d in documents)]
    return Citations(_unique(urls), _unique(documents), _unique(ids))


def says_unsourced(text: str) -> bool:
    return bool(NO_SOURCE_RE.search(text))


def asks_for_sources(request: ChatRequest) -> bool:
    return bool(ASKS_FOR_SOURCES_RE.search(request.message.text))


def is_research(request: ChatRequest) -> bool:
    """A research or retrieval job: Jev's task type `research`, or asked in those words."""
    return request.task_type == RESEARCH or bool(RETRIEVAL_RE.search(request.message.text))


def _told(room: Nest, crow: str) -> Q:
    """What someone else said where the crow could read it: the room, or to the crow."""
    return (Q(nest=room) | Q(to=crow)) & ~Q(author=crow)


def _text_found(needle: str, *, room: Nest, crow: str, request: ChatRequest) -> bool:
    if needle.casefold() in request.message.text.casefold():
        return True
    return NestMessage.objects.filter(_told(room, crow), text__icontains=needle).exists()


def _message_found(msg_id: str, *, room: Nest, crow: str) -> bool:
    return NestMessage.objects.filter(Q(nest=room) | Q(to=crow), msg_id=msg_id).exists()


def unfound(citations: Citations, *, room: Nest, crow: str, request: ChatRequest) -> tuple[str, ...]:
    """The citations that appear nowhere in the request, the room or the crow's memory."""
    missing = [
        needle
        for needle in (*citations.urls, *citations.documents)
        if not _text_found(needle, room=room, crow=crow, request=request)
    ]
    missing += [msg_id for msg_id in citations.message_ids if not _message_found(msg_id, room=room, crow=crow)]
    return tuple(missing)
