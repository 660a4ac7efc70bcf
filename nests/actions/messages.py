"""Posting a message to a nest: the one path for the owner, crows (through their brains)
and the harness. The chatroom layer (tagging by Jev, invoking crows, claims) builds on it."""

from __future__ import annotations

import re

from django.db import transaction

from flock.errors import BadInput, NotFound
from flock.events import emit, register_event_names
from nests import queries
from nests.actions.rooms import ensure_direct_chat
from nests.models import Nest, NestMessage

register_event_names("nest.message")

TEXT_MAX = 2000
KINDS = ("say", "request", "claim", "deliver", "refer", "decline", "nudge", "flag")
CROW_KINDS = ("say", "request", "claim", "deliver", "refer", "decline")
MENTION = re.compile(r"(?<![\w@])@([A-Za-z][A-Za-z0-9_-]{0,39})")


def first_mention(text: str, members: list[str]) -> str:
    """The first @Name in the text that names a member (or the owner), as the member spells it."""
    by_lower = {m.lower(): m for m in [*members, "owner"]}
    for match in MENTION.finditer(text):
        name = by_lower.get(match.group(1).lower())
        if name:
            return name
    return ""


def _room(nest_id: str) -> Nest:
    nest = Nest.objects.filter(nest_id=nest_id).first()
    if nest is None:
        crow = queries.direct_chat_crow(nest_id)
        if crow is None:
            raise NotFound(f"no such nest: {nest_id!r}")
        nest = ensure_direct_chat(crow.name)
    return nest


def post_message(
    nest_id: str,
    *,
    author: object,
    text: object,
    to: object = None,
    kind: object = None,
    refers_to: object = None,
    tagged_by: str | None = None,
) -> NestMessage:
    """Validate and store one message, numbered `<nest_id>-<n>`, and emit `nest.message`.

    `kind` is the poster's structured header (a crow's own claim of what it is saying);
    `tagged_by` is set only by the harness for its own kinds (nudge, flag)."""
    if not isinstance(author, str) or not author.strip():
        raise BadInput("author is required and must be a string")
    author = author.strip()
    if not isinstance(text, str):
        raise BadInput("text is required and must be a string")
    text = text.strip()
    if not 1 <= len(text) <= TEXT_MAX:
        raise BadInput(f"text must be 1–{TEXT_MAX} characters after trimming, got {len(text)}")
    for field, value in (("to", to), ("kind", kind), ("refers_to", refers_to)):
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{field} must be a string")
    to = (to or "").strip()
    header = (kind or "").strip()
    refers_to = (refers_to or "").strip()

    nest = _room(nest_id)
    members = queries.crow_members(nest)
    harness_kind = tagged_by is not None
    if not harness_kind:
        if author != "owner" and author not in members:
            raise BadInput(
                f"{author} is not a member of {nest.nest_id}; post through a member or through Quill"
            )
        if header and header not in CROW_KINDS:
            raise BadInput(
                f"kind must be one of {', '.join(CROW_KINDS)}; {header!r} is not postable"
                if header not in KINDS
                else f"kind {header!r} is posted by the harness only, never by a member"
            )
    if to and to != "owner" and to not in members:
        raise BadInput(f"to must be the owner or a member of {nest.nest_id}, not {to!r}")
    if not to:
        to = first_mention(text, members)

    with transaction.atomic():
        room = Nest.objects.select_for_update().get(pk=nest.pk)
        if refers_to and not NestMessage.objects.filter(nest=room, msg_id=refers_to).exists():
            raise BadInput(f"refers_to {refers_to!r} is not a message of {room.nest_id}")
        if harness_kind:
            final_kind, how = header, tagged_by
        elif header:
            final_kind, how = header, "header"
        else:
            final_kind, how = "say", "default"
        n = room.next_msg_n
        room.next_msg_n = n + 1
        room.save(update_fields=["next_msg_n"])
        message = NestMessage.objects.create(
            nest=room,
            n=n,
            msg_id=f"{room.nest_id}-{n}",
            kind=final_kind,
            author=author,
            text=text,
            to=to,
            refers_to=refers_to,
            tagged_by=how,
        )
        emit("nest.message", message.record(), nest_id=room.nest_id)
    return message
