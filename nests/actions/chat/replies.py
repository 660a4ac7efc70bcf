"""What a crow says back: `Reply`, the shape every invoked crow's answer takes (from its
brain or from Quill's and Boss's deterministic handlers), and `post_reply`, which posts it
through post_message as that crow's reply to its invocation (a member's post: checked,
then said, then reacted to)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flock.models import Crow
from flock.vocab import HARNESS
from nests.actions.chat.room import say
from nests.actions.messages import post_message
from nests.models import Invocation, NestMessage

if TYPE_CHECKING:
    from nests.actions.chat.sentry import Finding


@dataclass
class Reply:
    """What a crow wants posted in answer to its invocation."""

    text: str
    kind: str | None = None
    refers_to: str | None = None
    to: str | None = None
    nest_id: str = ""
    on_behalf_of: str = ""
    relayed_from: str = ""
    # The handler did what the message asked: a request it answers is closed as delivered,
    # whatever kind Jev gives the reply.
    closes: bool = False
    # Worded by the harness from the database (Boss's and Quill's fixed answers): its kind is
    # its header's (`[ACK …]` is a say), not Jev's reading of the words, so a refusal such
    # as "Can't do that: …" is never read as a delivery.
    fixed: bool = False


@dataclass
class Skip:
    """A handler that found nothing left to do: the invocation ends `skipped`, saying why,
    and nothing is posted."""

    why: str


def post_reply(inv: Invocation, crow: Crow, reply: Reply, finding: Finding | None = None) -> NestMessage:
    """Post `crow`'s reply to `inv` (in the invocation's room unless the reply names another)."""
    return post_message(
        reply.nest_id or inv.nest.nest_id,
        author=crow.name,
        text=reply.text,
        kind=reply.kind,
        refers_to=reply.refers_to,
        to=reply.to,
        invocation=inv,
        on_behalf_of=reply.on_behalf_of,
        relayed_from=reply.relayed_from,
        finding=finding,
        fixed_kind=reply.fixed,
    )


def say_for(inv: Invocation, text: str) -> NestMessage:
    """A harness note in the invocation's room, so a requester is never left waiting in silence."""
    return say(inv.nest, author=HARNESS, text=text)
