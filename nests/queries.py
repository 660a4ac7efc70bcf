"""Reads of rooms and their messages, and of the chatroom's requests, claims and budgets."""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from flock import queries as flock_queries
from flock.errors import BadInput, NotFound
from flock.events import rfc3339
from flock.models import Crow, Flight
from flock.vocab import OWNER, REGULAR, STRANGER, TRUSTED, MessageKind  # noqa: F401  (dispatch and quill read them here)
from nests.models import ChatRequest, Claim, Invocation, Nest, NestBudget, NestMessage
from nests.render import render_markdown
from trust.models import Approval, Verdict
from trust.queries import trust_level as ledger_level

# Quill and Boss serve every room (docs/CHATROOM.md).
EVERYWHERE_ROLES = (Crow.Role.ASSISTANT, Crow.Role.CHIEF_OF_STAFF)
# Serve every room but never chat, so they are never invoked and have no direct chat.
SILENT_ROLES = (Crow.Role.SENTRY, Crow.Role.ELDER)
WHAT_THEY_DO: dict[str, str] = {
    Crow.Role.SENTRY: "watches what crows post and speaks only in flags to the owner",
    Crow.Role.ELDER: "merges several crows' answers in the list pipeline",
}
PAGE_MAX = 200
PAGE_DEFAULT = 50
RECENT_MESSAGES = 20


def nest_exists(nest_id: str) -> bool:
    if Nest.objects.filter(nest_id=nest_id).exists():
        return True
    # A direct chat exists for every living crow, even before its first message.
    return direct_chat_crow(nest_id) is not None


def direct_chat_crow(nest_id: str) -> Crow | None:
    if not nest_id.startswith("dm-"):
        return None
    wanted = nest_id.removeprefix("dm-")
    for crow in flock_queries.living_crows():
        if crow.name.lower() == wanted:
            return crow
    return None


def silent_refusal(crow: Crow) -> str:
    """Why `crow` has no direct chat, or "" when it has one."""
    if crow.role not in SILENT_ROLES:
        return ""
    return (
        f"dm-{crow.name.lower()} is refused: {crow.name} is not a chat participant (docs/CHATROOM.md, Rooms); "
        f"it {WHAT_THEY_DO[crow.role]}. Ask Quill, your point of contact, instead"
    )


def room_exists(nest_id: str) -> bool:
    """Whether `nest_id` names a room: a nest, or a living crow's direct chat (made on first use)."""
    return Nest.objects.filter(nest_id=nest_id).exists() or direct_chat_crow(nest_id) is not None


def nests_for_listing() -> list[Nest]:
    return list(Nest.objects.exclude(kind=Nest.Kind.DIRECT).order_by("id"))


def living_core(nest: Nest, living: set[str] | None = None) -> list[str]:
    """The nest's core crows that are still in the flock: a retired crow is a member
    nowhere (docs/CHATROOM.md), though the room's stored core keeps its name. `living`, the
    names of the crows not retired, saves the query when many nests are listed."""
    if living is None:
        living = set(flock_queries.living_crows().values_list("name", flat=True))
    return [c for c in nest.core if c in living]


def crow_members(nest: Nest) -> list[str]:
    """The crows who may speak in a nest (the owner may speak everywhere)."""
    # Every post asks this: names and roles only, not whole crows.
    living = list(flock_queries.living_crows().values_list("name", "role"))
    if nest.kind == Nest.Kind.OPEN:
        return [name for name, _role in living]
    names = {name for name, _role in living}
    everywhere = [name for name, role in living if role in EVERYWHERE_ROLES]
    members = [c for c in nest.core if c in names]
    return members + [name for name in everywhere if name not in members]


# --- the flock as the chatroom sees it ---------------------------------------------------


def trust_level(crow: str, task_type: str) -> int:
    """A crow's level for a task type from the trust ledger: 0 stranger, 1 regular,
    2 trusted. A crow the ledger has never judged is a stranger."""
    return int(ledger_level(crow, task_type))


def worker_crows() -> QuerySet[Crow]:
    """Crows that take work in rooms: living roster crows that are not Quill or Boss."""
    return flock_queries.living_crows().filter(in_roster=True, role=Crow.Role.WORKER)


def role_crow(role: str) -> Crow | None:
    return Crow.objects.filter(role=role, status=Crow.Status.ACTIVE).order_by("id").first()


def quill() -> Crow | None:
    """The assistant crow (Quill), if it is active."""
    return role_crow(Crow.Role.ASSISTANT)


def boss() -> Crow | None:
    """The chief-of-staff crow (Boss), if it is active."""
    return role_crow(Crow.Role.CHIEF_OF_STAFF)


def recent_success(crow: str, *, last: int = 10) -> float:
    """The share of a crow's last flights that came back ok; 0.5 (neutral) with none."""
    oks = list(Flight.objects.filter(crow=crow).order_by("-id").values_list("ok", flat=True)[:last])
    return sum(oks) / len(oks) if oks else 0.5


# A nest_id is no longer than a nest's name may be.
NEST_ID_MAX = 40


def nest_slug(name: str) -> str:
    """A nest name as a nest_id (docs/API.md, `POST /api/nests`: lowercase `a-z0-9-`):
    accents folded as Django's slugify folds them ("Café crew" is `cafe-crew`), every other
    run of characters outside a-z0-9 one dash. Empty when the name has no Latin letter or digit.
    Folding can lengthen a name (NFKD spells "㎯" as "mm/s2"), so the id is cut to
    NEST_ID_MAX characters."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    return slug[:NEST_ID_MAX].rstrip("-")


def find_nest(words: str) -> Nest | None:
    """A nest (not a direct chat) named by `words`: its id or its name, any case."""
    wanted = nest_slug(words)
    if not wanted:
        return None
    for nest in nests_for_listing():
        if wanted in (nest.nest_id, nest_slug(nest.name)):
            return nest
    return None


# --- budgets (docs/CHATROOM.md): reads; nests/actions/chat/budgets.py spends and tops up ---


def budget_day() -> date:
    """The day a room's token budget counts (the server's local date)."""
    return timezone.localdate()


def roll_day(budget: NestBudget) -> None:
    today = budget_day()
    if budget.day != today:
        budget.day = today
        budget.tokens_used = 0
        budget.tokens_extra = 0


def read_budget(nest: Nest) -> NestBudget:
    """The room's budget for reading (not locked, not saved); a fresh room has none yet."""
    budget = NestBudget.objects.filter(nest=nest).first() or NestBudget(nest=nest)
    roll_day(budget)
    return budget


def tokens_allowed(budget: NestBudget) -> int:
    return settings.CROWS_NEST_TOKEN_BUDGET + budget.tokens_extra


def tokens_left(budget: NestBudget) -> int:
    return max(0, tokens_allowed(budget) - budget.tokens_used)


def budget_view(budget: NestBudget) -> dict[str, Any]:
    return {
        "turn": budget.turn,
        "exchanges_per_turn": settings.CROWS_EXCHANGES_PER_TURN,
        "exchanges_granted": budget.exchanges_granted,
        "exchanges_left": budget.exchanges_left,
        "tokens_per_day": settings.CROWS_NEST_TOKEN_BUDGET,
        "tokens_topped_up": budget.tokens_extra,
        "tokens_used_today": budget.tokens_used,
        "tokens_left_today": tokens_left(budget),
    }


# --- the log ---------------------------------------------------------------------------


def message_record(message: NestMessage) -> dict[str, Any]:
    return {"nest_id": message.nest.nest_id, **message.record()}


def recent_messages(nest: Nest, *, limit: int = RECENT_MESSAGES) -> list[NestMessage]:
    """The newest `limit` messages, oldest first."""
    newest = list(NestMessage.objects.filter(nest=nest).select_related("nest").order_by("-n")[:limit])
    return newest[::-1]


# The page cursor as the API document states it (nests/schemas.py): a message number, or a
# msg_id (its nest's id, a dash, the number). ASCII digits only, nothing around them, so
# the server takes exactly what the document allows.
PAGE_BEFORE_PATTERN = r"^([a-z0-9-]+-)?[1-9][0-9]{0,8}$"
PAGE_LIMIT_PATTERN = r"^[0-9]{1,4}$"


def parse_page(nest: Nest, *, before: str | None, limit: str | None) -> tuple[int | None, int]:
    """Validate ?before= (a number n or a msg_id of this nest) and ?limit= (1–200): BadInput
    for a value of the wrong shape, NotFound for the msg_id of another room's message."""
    size = PAGE_DEFAULT
    if limit is not None:
        if not re.fullmatch(PAGE_LIMIT_PATTERN, limit) or not 1 <= int(limit) <= PAGE_MAX:
            raise BadInput(f"limit must be a whole number from 1 to {PAGE_MAX}, got {limit!r}")
        size = int(limit)
    cursor: int | None = None
    if before is not None:
        shaped = re.fullmatch(PAGE_BEFORE_PATTERN, before)
        if shaped is None:
            raise BadInput(
                f"before must be a message number or a msg_id of {nest.nest_id} "
                f"(like {nest.nest_id}-12), got {before!r}"
            )
        # A msg_id well formed but of another room names no message here: what the
        # cursor points at does not exist, as for a nest that does not.
        if shaped.group(1) is not None and shaped.group(1) != f"{nest.nest_id}-":
            raise NotFound(f"{nest.nest_id} has no message {before!r}: before is a msg_id of this nest")
        cursor = int(before.removeprefix(shaped.group(1) or ""))
    return cursor, size


def messages_page(nest: Nest, *, before: int | None, limit: int) -> dict[str, Any]:
    """One page of the log, scrolling back: the `limit` messages just before `before` (or
    the newest), oldest first; `before` in the answer is the cursor of the next older page,
    or null at the start of the room."""
    rows = NestMessage.objects.filter(nest=nest).select_related("nest")
    if before is not None:
        rows = rows.filter(n__lt=before)
    page = list(rows.order_by("-n")[: limit + 1])
    more = len(page) > limit
    page = page[:limit][::-1]
    return {
        "nest_id": nest.nest_id,
        "messages": [{**message_record(m), "html": delivery_html(m)} for m in page],
        "before": page[0].msg_id if more and page else None,
    }


def delivery_html(message: NestMessage) -> str:
    """A delivery (an answer) and the owner's own message: its Markdown, rendered and
    sanitised as list answers are, bare URLs made links (docs/REVIEW.md); "" for every
    other message, which the page shows as plain text."""
    return render_markdown(message.text) if message.kind == MessageKind.DELIVER or message.author == OWNER else ""


# --- requests and claims -----------------------------------------------------------------


def request_status(request: ChatRequest) -> dict[str, Any]:
    claims = list(request.claims.select_related("message", "delivered"))
    declined = list(
        NestMessage.objects.filter(nest=request.nest, kind=MessageKind.DECLINE, refers_to=request.message.msg_id)
        .values_list("author", flat=True)
    )
    return {
        "msg_id": request.message.msg_id,
        "requester": request.requester,
        "addressed": request.addressed,
        "text": request.message.text,
        "mode": request.mode,
        "task_type": request.task_type,
        "state": request.state,
        "relayed_to": request.relayed_to,
        "claims": [
            {
                "crow": c.crow,
                "msg_id": c.message.msg_id,
                "lens": c.lens,
                "delivered": c.delivered.msg_id if c.delivered else "",
            }
            for c in claims
        ],
        "declined_by": declined,
    }


def delivery_reviews(msg_ids: list[str]) -> dict[str, str]:
    """What the owner made of each chat delivery that waits for or got the owner's
    verdict: "waiting" (for the owner's approval) or the verdict ("approved", "rejected",
    "auto", "timeout"). A delivery nobody reviews is not in it."""
    if not msg_ids:
        return {}
    reviews = {
        item_id: "waiting"
        for item_id in Approval.objects.filter(item_id__in=msg_ids, target="output", verdict__isnull=True)
        .values_list("item_id", flat=True)
    }
    for item_id, verdict in Verdict.objects.filter(item_id__in=msg_ids, target="output").order_by("id").values_list(
        "item_id", "verdict"
    ):
        reviews[item_id] = verdict
    return reviews


def requests_in(nest: Nest, *, limit: int = 20) -> list[ChatRequest]:
    newest = list(
        ChatRequest.objects.filter(nest=nest).select_related("message", "nest").order_by("-id")[:limit]
    )
    return newest[::-1]


def open_claims_of(crow: str) -> list[str]:
    """msg_ids of requests `crow` claimed and has not delivered."""
    return list(
        ChatRequest.objects.filter(
            claims__crow=crow, claims__delivered__isnull=True, state=ChatRequest.State.CLAIMED
        ).values_list("message__msg_id", flat=True)
    )


def invocation_record(inv: Invocation) -> dict[str, Any]:
    return {
        "crow": inv.crow,
        "trigger": inv.trigger.msg_id,
        "reason": inv.reason,
        "expect": inv.expect,
        "fit": inv.fit,
        "candidates": inv.candidates,
        "depth": inv.depth,
        "status": inv.status,
        "reply": inv.reply.msg_id if inv.reply else "",
        "tokens": inv.tokens,
        "error": inv.error,
        "at": rfc3339(inv.created_at),
    }


def recent_invocations(nest: Nest, *, limit: int = 20) -> list[Invocation]:
    newest = list(
        Invocation.objects.filter(nest=nest).select_related("trigger", "reply").order_by("-id")[:limit]
    )
    return newest[::-1]


def nest_detail(nest: Nest) -> dict[str, Any]:
    """GET /api/nests/{nest_id}: who is here, what is left to spend, what was said."""
    names = crow_members(nest)
    crows = {c.name: c for c in Crow.objects.filter(name__in=names)}
    return {
        "nest_id": nest.nest_id,
        "name": nest.name,
        "kind": nest.kind,
        "core": living_core(nest, set(crows)),
        "members": [OWNER, *names],
        "crows": [
            {"name": n, "role": crows[n].role, "status": crows[n].status} for n in names if n in crows
        ],
        "budget": budget_view(read_budget(nest)),
        "messages": [message_record(m) for m in recent_messages(nest)],
        "requests": [request_status(r) for r in requests_in(nest)],
        "invocations": [invocation_record(i) for i in recent_invocations(nest)],
    }


def request_for(nest: Nest, msg_id: str, *, _hops: int = 0) -> ChatRequest | None:
    """The request a message refers to: the request itself, the request behind a claim,
    or the request behind the expectation a nudge is about (a crow answering
    `[RESULT <nudge id>]` delivers on the work it was nudged for)."""
    if not msg_id:
        return None
    found = ChatRequest.objects.filter(nest=nest, message__msg_id=msg_id).first()
    if found is not None:
        return found
    claim = Claim.objects.filter(message__nest=nest, message__msg_id=msg_id).select_related("request").first()
    if claim is not None:
        return claim.request
    if _hops == 0:
        nudge = NestMessage.objects.filter(nest=nest, msg_id=msg_id, kind=MessageKind.NUDGE).values_list("refers_to", flat=True).first()
        if nudge and nudge != msg_id:
            return request_for(nest, nudge, _hops=1)
    return None
