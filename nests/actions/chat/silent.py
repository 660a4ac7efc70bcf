"""The Sentry and the Elder serve every room but are not chat participants (docs/CHATROOM.md,
"Rooms"): a message addressed to either, anywhere, gets one line from the harness saying
what they do and who to ask instead, rather than silence."""

from __future__ import annotations

import re

from flock.models import Crow
from flock.vocab import HARNESS, HARNESS_AUTHORS, HARNESS_KINDS
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.queries import SILENT_ROLES, WHAT_THEY_DO

MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z][A-Za-z0-9_-]{0,39})")


def react(posted: Posted) -> Effects:
    """A message addressed to the Sentry or the Elder (by `to` or @name) is told, in one
    line, that they do not chat, what they do, and who to ask instead."""
    message = posted.message
    if message.author in HARNESS_AUTHORS or message.kind in HARNESS_KINDS or posted.harness:
        return NOTHING
    named = {m.lower() for m in MENTION_RE.findall(message.text)} | ({message.to.lower()} if message.to else set())
    if not named:  # addressed to no one: nothing to read
        return NOTHING
    silent = [c for c in Crow.objects.filter(role__in=SILENT_ROLES).order_by("id") if c.name.lower() in named]
    if not silent:
        return NOTHING
    who = " and ".join(f"{c.name} {WHAT_THEY_DO[c.role]}" for c in silent)
    text = f"@{message.author} {who}; {'neither chats' if len(silent) > 1 else 'it does not chat'}. Ask Quill, your point of contact, or a crow by @name instead."
    return Effects(say=[Say(author=HARNESS, text=text, to=message.author, refers_to=message.msg_id)])
