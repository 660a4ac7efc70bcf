"""Saying something in a room: the chat core's leaf (docs/CHATROOM.md, "The chat core").

`say` numbers one message, stores it and emits `nest.message`, in the caller's
transaction and under the room's row lock. It checks nothing and causes nothing: checking
a member's post happens before it (nests.actions.messages.check_message), and what a
message causes is the reactors' business, run after it by nests.actions.chat.react. So
every module may call it, and it imports no rule.
"""

from __future__ import annotations

from django.db import transaction

from flock.events import emit, lock_event_log
from flock.vocab import MessageKind
from nests.models import Nest, NestMessage

TEXT_MAX = 2000


def say(
    room: Nest,
    *,
    author: str,
    text: str,
    kind: str = MessageKind.SAY,
    to: str = "",
    refers_to: str = "",
    tagged_by: str = "header",
    room_locked: bool = False,
) -> NestMessage:
    """Store `text` as message `<nest_id>-<n>` and emit `nest.message`; commits with the
    caller. A text over the cap is cut (the harness words its own notices; a member's
    post was checked against the cap before). `room_locked`: `room` is the row the
    caller locked in this transaction, so it is not locked (nor read) again."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1].rstrip() + "…"
    # No savepoint: nothing here is retried on its own, and a post is one transaction.
    with transaction.atomic(savepoint=False):
        lock_event_log()
        locked = room if room_locked else Nest.objects.select_for_update().get(pk=room.pk)
        n = locked.next_msg_n
        locked.next_msg_n = n + 1
        locked.save(update_fields=["next_msg_n"])
        room.next_msg_n = locked.next_msg_n
        message = NestMessage.objects.create(
            nest=locked, n=n, msg_id=f"{locked.nest_id}-{n}", kind=kind, author=author,
            text=text, to=to or "", refers_to=refers_to or "", tagged_by=tagged_by,
        )
        emit("nest.message", message.record(), nest_id=locked.nest_id)
    return message
