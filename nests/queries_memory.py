"""One crow, many rooms (docs/GOVERNANCE.md): what a crow remembers.

A crow's memory is read from the rooms' logs, never copied: what it said, claimed and
delivered anywhere, what it was told (messages addressed to it), and what the owner said
in its own direct chat. The harness's nudges and the Sentry's flags are not memories.
Another crow's direct chat is never part of it, unless this crow spoke there itself or was
addressed there.

`remember(crow, query=..., exclude_nest=...)` ranks the newest MEMORY_CANDIDATES items by
relevance to the query (word overlap, 0.6) and recency (0.4, halving every 25 items back)
and keeps the best that fit CROWS_MEMORY_TOKENS, each marked with its room. Items from a
direct chat are marked `private`: the prompt tells the crow they are the owner's words to
it alone, to repeat only where they help; they appear in a nest only if the crow itself
repeats them there.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.conf import settings
from django.db.models import Q

from flock.brains.prompts import estimate_tokens
from flock.events import rfc3339
from flock.vocab import HARNESS_AUTHORS, OWNER
from nests.models import Nest, NestMessage

MEMORY_CANDIDATES = 300
ITEM_CHARS = 300
RECENCY_HALF_LIFE = 25
NOT_MEMORIES = HARNESS_AUTHORS
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9'-]*")
_STOP = frozenset(
    "the a an and or but of for to in on at by with from into about this that these those it its our your my "
    "their we you i me us them is are was were be been being do does did have has had will would can could "
    "should may might must not no yes so as if then than too very just also some any all what who when where "
    "why how which there here please thanks ok okay".split()
)


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD_RE.findall(text.lower()):
        w = w.strip("'-")
        if len(w) < 3 or w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


def similarity(a: str, b: str) -> float:
    """Word overlap of two texts, 0..1 (a cosine over their content-word sets)."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / math.sqrt(len(wa) * len(wb))


def _role(message: NestMessage, crow: str) -> str:
    if message.author == crow:
        return {"claim": "claimed", "deliver": "delivered", "decline": "declined", "request": "asked"}.get(
            message.kind, "said"
        )
    return "told"


def _candidates(crow: str, exclude_nest: Nest | None) -> list[NestMessage]:
    own_dm = f"dm-{crow.lower()}"
    rows = (
        NestMessage.objects.filter(
            Q(author=crow) | Q(to=crow) | Q(nest__nest_id=own_dm, author=OWNER)
        )
        .exclude(author__in=NOT_MEMORIES)
        .exclude(kind__in=("nudge", "flag"))
        .select_related("nest")
    )
    if exclude_nest is not None:
        rows = rows.exclude(nest=exclude_nest)
    return list(rows.order_by("-id")[:MEMORY_CANDIDATES])


def remember(
    crow: str, *, query: str = "", exclude_nest: Nest | None = None, token_budget: int | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The crow's most relevant memories from other rooms, best first, within the budget."""
    budget = settings.CROWS_MEMORY_TOKENS if token_budget is None else token_budget
    if budget <= 0:
        return []
    scored = []
    for rank, message in enumerate(_candidates(crow, exclude_nest)):
        recency = 0.5 ** (rank / RECENCY_HALF_LIFE)
        sim = similarity(query, message.text) if query else 0.0
        scored.append((0.6 * sim + 0.4 * recency, rank, message, sim))
    scored.sort(key=lambda s: (-s[0], s[1]))
    items: list[dict[str, Any]] = []
    spent = 0
    for score, _, message, sim in scored:
        text = message.text if len(message.text) <= ITEM_CHARS else message.text[: ITEM_CHARS - 1] + "…"
        cost = estimate_tokens(text) + 8
        if spent + cost > budget:
            continue
        spent += cost
        items.append(
            {
                "room": message.nest.nest_id,
                "room_name": message.nest.name,
                "msg_id": message.msg_id,
                "role": _role(message, crow),
                "author": message.author,
                "text": text,
                "at": rfc3339(message.created_at),
                "private": message.nest.kind == Nest.Kind.DIRECT,
                "score": round(score, 4),
                "similarity": round(sim, 4),
            }
        )
        if limit is not None and len(items) >= limit:
            break
    return items


def memory_lines(items: list[dict[str, Any]]) -> str:
    """The memories as the crow's system text, each marked with its room."""
    if not items:
        return ""
    lines = ["What you remember from other rooms (most relevant first; each marked with the room it came from):"]
    for item in items:
        who = "you" if item["role"] != "told" else item["author"]
        verb = {"told": "told you"}.get(item["role"], item["role"])
        private = " — private, the owner's words to you alone: repeat only if it helps here" if item["private"] else ""
        lines.append(f"- [{item['room']}, {item['msg_id']}] {who} {verb}: {item['text']}{private}")
    return "\n".join(lines)
