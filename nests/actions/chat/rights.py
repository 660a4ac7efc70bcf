"""Speaking rights, in one place, for every poster (docs/CHATROOM.md
"Speaking rights"). A crow's post is read against its trust for the work's task type,
whoever sends it (its brain's reply or an HTTP client posting as the crow):

- a stranger speaks only when addressed, or answering a request it was given;
- a regular may also claim open requests and review;
- a trusted crow may also open requests and start work (deliver unasked).

Plain talk is never limited, nor are the owner and the harness; Quill and Boss have their
roles' rights whatever their ledger says. A post that would do more than the crow's rights
allow is kept as talk (`say`) and the harness says which rule, naming the crow's level.
"""

from __future__ import annotations

from flock.models import Crow
from flock.vocab import LEVEL_NAMES, REGULAR, TRUSTED, MessageKind
from nests import queries
from nests.models import ChatRequest, Invocation
from nests.queries_ledger import answered

# Invocation reasons where the harness picked the crow for the request it answers.
PICKED_REASONS = ("fit", "lens", "redispatch", "addressed", "direct", "claim_deliver", "quill_route", "nudge")
ROLE_RIGHTS = (Crow.Role.ASSISTANT, Crow.Role.CHIEF_OF_STAFF)


def has_role_rights(crow: Crow) -> bool:
    # Quill and Boss serve every room (docs/CHATROOM.md): their roles let them open requests
    # and relay whatever their trust ledger says.
    return crow.role in ROLE_RIGHTS


def may_open_requests(crow: Crow, task_type: str) -> bool:
    """Trusted crows may start work and open requests to other crows (docs/CHATROOM.md)."""
    return crow.status == Crow.Status.ACTIVE and (
        has_role_rights(crow) or queries.trust_level(crow.name, task_type) >= TRUSTED
    )


def picked_for(invocation: Invocation, request: ChatRequest) -> bool:
    """Whether the harness (or the owner, by name) asked this invocation's crow to take `request`."""
    if request.addressed and request.addressed == invocation.crow:
        return True
    if invocation.reason not in PICKED_REASONS:
        return False
    _, answering = answered(invocation)
    return answering is not None and answering.pk == request.pk


def _given(crow: Crow, request: ChatRequest, invocation: Invocation | None) -> bool:
    """The request was given to the crow: addressed to it, or the harness picked it."""
    return request.addressed == crow.name or (invocation is not None and picked_for(invocation, request))


def _level(crow: Crow, task_type: str) -> str:
    return f"{crow.name} is a {LEVEL_NAMES[queries.trust_level(crow.name, task_type)]} for {task_type}"


def refusal(
    crow: Crow, *, kind: str, target: ChatRequest | None, task_type: str, invocation: Invocation | None
) -> str:
    """The rule a crow's post of `kind` breaks, naming the crow's level, or "" when its
    rights allow it. `target` is the request a claim or deliver answers; `task_type` the
    one a new request was tagged with."""
    if has_role_rights(crow):
        return ""
    if kind == MessageKind.REQUEST:
        if queries.trust_level(crow.name, task_type) >= TRUSTED:
            return ""
        return f"only a trusted crow opens requests, and {_level(crow, task_type)}"
    if target is None or _given(crow, target, invocation):
        return ""
    if kind == MessageKind.CLAIM:
        if queries.trust_level(crow.name, target.task_type) >= REGULAR:
            return ""
        return (
            f"a stranger claims only a request it was given (a regular may claim open ones), and "
            f"{_level(crow, target.task_type)}"
        )
    if kind == MessageKind.DELIVER:
        if target.claims.filter(crow=crow.name).exists() or queries.trust_level(crow.name, target.task_type) >= TRUSTED:
            return ""
        return (
            f"a crow delivers on a request it claimed or was given (only a trusted crow starts work unasked), "
            f"and {_level(crow, target.task_type)}"
        )
    return ""


def note(author: str, kind: str, msg_id: str, rule: str) -> str:
    """The harness's one line on a post kept as talk."""
    return f"{author}'s {kind} {msg_id} is kept as talk (speaking rights): {rule}. It opens, claims and routes nothing."
