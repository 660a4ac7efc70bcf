"""The expectation checks a delivery can fail (docs/GOVERNANCE.md, "4. … the three
missing checks" and "6. A restated lens"): read when a crow delivers on a request, each
opened only when the delivery fails it, and nudged at once.

- `claims_sourced`: the request asked for sources in words ("with sources", "cite",
  "links", sources.ASKS_FOR_SOURCES_RE) and the delivery cites none that can be found (a
  link, a named document or a message id of the room or the crow's memory). A research or
  retrieval request delivered so is the Sentry's (`fabricated_source`) before it is this.
- `role_adherence`: the crow delivered work of a task type outside its role (the task
  types it is best at, `Crow.task_types`) on a request nobody gave it: not addressed to
  it, not picked for it by the harness. Work the owner or the harness handed a crow is
  theirs to judge; Quill's and Boss's deliveries report other crows' work.
- `distinct_lens`: in a conspiracy, the delivery restates an earlier lens's delivery on
  the same request (content-word cosine >= RESTATED_AT): the crow is asked for a distinct
  angle, once (a once-check: at its deadline the owner hears of it instead of a second
  nudge).

Each opens at most once per crow and request; the ledger's scoring closes it
(`progress`), the timer nudges and escalates as for every expectation.
"""

from __future__ import annotations

from flock.models import Crow
from flock.vocab import MessageKind
from nests.actions.chat import sources
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.actions.chat.ledger import nudge, open_expectation
from nests.actions.chat.rights import has_role_rights
from nests.models import ChatRequest, Expectation, Invocation, NestMessage
from nests.queries_memory import similarity

# Content-word cosine (nests.queries_memory.similarity: the shared words over the root of
# the product of the two sets' sizes) above which a lens restates another. Two lenses on
# one question share its nouns; a restatement shares most of its words besides.
RESTATED_AT = 0.6
# Invocation reasons where the harness (or the owner, by name) gave the crow the request.
GIVEN_REASONS = ("fit", "lens", "redispatch", "addressed", "direct", "quill_route")


def _gist(text: str, words: int = 12) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _already(crow: str, request: ChatRequest, check: str) -> bool:
    return Expectation.objects.filter(crow=crow, request=request, check_name=check).exists()


# What each check expects, and its nudge, worded from the facts of the failing delivery
# (`crow`, `delivery`, `asked` the request's msg_id, `gist` its opening words, and the
# check's own: `task_type` and `roles`; `earlier`, `by`, `score` and `angle`).
WORDING: dict[str, tuple[str, str]] = {
    Expectation.Check.CLAIMS_SOURCED: (
        "{crow}'s delivery {delivery} on {asked} (“{gist}”) must cite its sources",
        "{asked} asked for sources and your delivery {delivery} cites none that can be found. Cite them: a link, "
        "a named document, or the id of a message in this room or said to you. If you have none, say so plainly.",
    ),
    Expectation.Check.ROLE_ADHERENCE: (
        "{crow} delivered {task_type} work on {asked}, outside its role ({roles}): hand it to a crow whose role "
        "covers it, or say why it took it",
        "{asked} is {task_type} work, outside your role ({roles}), and nobody gave it to you. Hand it to a crow "
        "whose role covers it, or say why you took it.",
    ),
    Expectation.Check.DISTINCT_LENS: (
        "{crow}'s lens {delivery} on {asked} restates {by}'s {earlier}: a distinct angle",
        "your delivery {delivery} restates {by}'s {earlier} (similarity {score:.2f}). A conspiracy wants distinct "
        "readings: give a distinct angle{angle}, or say what yours adds.",
    ),
}


def _failed(message: NestMessage, request: ChatRequest, check: str, **facts: object) -> Say:
    """Open `check` on the delivery and return its nudge, said at once."""
    words = dict(crow=message.author, delivery=message.msg_id, asked=request.message.msg_id,
                 gist=_gist(request.message.text), **facts)
    expected, prompt = (text.format(**words) for text in WORDING[check])
    exp = open_expectation(message, crow=message.author, check=check, request=request, expected=expected)
    return nudge(exp, prompt=f"@{message.author}, {exp.expectation_id}: {prompt}")


# --- claims sourced ------------------------------------------------------------------------


def cites_a_source(message: NestMessage, request: ChatRequest) -> tuple[str, ...]:
    """The sources `message` cites that can be found (none: it cites nothing that counts)."""
    citations = sources.cited(message.text, besides=(request.message.msg_id,))
    if not citations:
        return ()
    missing = set(sources.unfound(citations, room=request.nest, crow=message.author, request=request))
    return tuple(c for c in citations.all() if c not in missing)


def _claims_sourced(message: NestMessage, request: ChatRequest) -> Say | None:
    if not sources.asks_for_sources(request) or _already(message.author, request, Expectation.Check.CLAIMS_SOURCED):
        return None
    if cites_a_source(message, request):
        return None
    return _failed(message, request, Expectation.Check.CLAIMS_SOURCED)


# --- role adherence ------------------------------------------------------------------------


def given(request: ChatRequest, crow: str) -> bool:
    """The request was handed to the crow: addressed to it, or the harness invoked it for it
    (to claim it, as a lens, on a decline's re-dispatch, in its direct chat)."""
    if request.addressed == crow:
        return True
    asked = Invocation.objects.filter(nest=request.nest, crow=crow, reason__in=GIVEN_REASONS)
    if asked.filter(trigger=request.message).exists():
        return True
    claim = request.claims.filter(crow=crow).first()
    return claim is not None and asked.filter(reply=claim.message).exists()


def _role_adherence(message: NestMessage, request: ChatRequest, crow: Crow) -> Say | None:
    roles = list(crow.task_types or [])
    if not roles or request.task_type in roles or has_role_rights(crow):
        return None
    if given(request, crow.name) or _already(crow.name, request, Expectation.Check.ROLE_ADHERENCE):
        return None
    return _failed(message, request, Expectation.Check.ROLE_ADHERENCE, task_type=request.task_type, roles=", ".join(roles))


# --- a restated lens -----------------------------------------------------------------------


def earlier_lenses(request: ChatRequest, message: NestMessage) -> list[NestMessage]:
    """The other crows' deliveries on a conspiracy request before `message`."""
    delivered = set(request.claims.exclude(crow=message.author).exclude(delivered=None).values_list("delivered", flat=True))
    rows = NestMessage.objects.filter(nest=request.nest, kind=MessageKind.DELIVER, n__lt=message.n).exclude(author=message.author)
    return [m for m in rows.order_by("n") if m.pk in delivered or m.refers_to == request.message.msg_id]


def restated(request: ChatRequest, message: NestMessage) -> tuple[NestMessage, float] | None:
    """The earlier lens `message` restates most, with the similarity, or None."""
    best: tuple[NestMessage, float] | None = None
    for earlier in earlier_lenses(request, message):
        score = similarity(message.text, earlier.text)
        if score >= RESTATED_AT and (best is None or score > best[1]):
            best = (earlier, score)
    return best


def _distinct_lens(message: NestMessage, request: ChatRequest) -> Say | None:
    if request.mode != ChatRequest.Mode.CONSPIRACY or _already(message.author, request, Expectation.Check.DISTINCT_LENS):
        return None
    found = restated(request, message)
    if found is None:
        return None
    earlier, score = found
    lens = request.claims.filter(crow=message.author).values_list("lens", flat=True).first() or ""
    angle = f" from your own lens ({lens})" if lens else ""
    return _failed(
        message, request, Expectation.Check.DISTINCT_LENS, earlier=earlier.msg_id, by=earlier.author, score=score, angle=angle,
    )


def progress(exp: Expectation, message: NestMessage) -> str:
    """Why `message` meets a conduct check ("" if it does not): the crow's own next word
    that does what the nudge asked."""
    if message.author != exp.crow:
        return ""
    check = exp.check_name
    if check == Expectation.Check.CORRECTION_HANDLED:
        return f"{exp.crow} answered the correction"
    if check == Expectation.Check.ROLE_ADHERENCE:
        return f"{exp.crow} answered for taking the work"
    if exp.request is None:
        return ""
    if check == Expectation.Check.CLAIMS_SOURCED:
        found = cites_a_source(message, exp.request)
        return f"{exp.crow} cited {', '.join(found)}" if found else ""
    if check == Expectation.Check.DISTINCT_LENS and message.kind in (MessageKind.DELIVER, MessageKind.SAY):
        return "" if restated(exp.request, message) is not None else f"{exp.crow} gave a distinct angle"
    return ""


def react(posted: Posted) -> Effects:
    """A crow's delivery on a request, read against the checks it may fail."""
    message, request, crow = posted.message, posted.request, posted.crow
    if message.kind != MessageKind.DELIVER or request is None or crow is None or posted.harness:
        return NOTHING
    if has_role_rights(crow):
        return NOTHING
    said = [
        s for s in (
            _claims_sourced(message, request), _role_adherence(message, request, crow), _distinct_lens(message, request)
        ) if s is not None
    ]
    # One nudge at a time: the crow answers the first; the others wait for the timer.
    return Effects(say=said[:1])
